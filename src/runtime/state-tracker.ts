import {
  encodeValue,
  setOwn,
  type Backpack,
  type BackpackState,
  type JsonValue,
  type QuarantinedStateItem,
  type StateItem,
  type StoredItem,
  type StoredState,
} from '../backpack/index.js';
import { deepEqualInOrder } from '../backpack/values.js';
import { isItemShape, looksLikeStoredKey, redactorFor, type Redactor } from '../redact/index.js';
import { applyJsonDelta, diffStored, type JsonDelta } from './json-delta.js';

/** What changed in a Backpack's state between two step boundaries. Values travel as structural JSON deltas. */
export interface StateDelta {
  /** Items packed since: metadata, item rules, and the value as a delta from the item's previous value. */
  set?: Record<string, { metadata: StateItem['metadata']; accessControl?: StateItem['accessControl']; value?: JsonDelta }>;
  /**
   * Keys that left the active state (deleted, cleared or quarantined). A key also in `set` left and came back: it
   * goes last, as in the Backpack, and `set` carries its whole value.
   */
  removed?: string[];
  /** Items quarantined since, whole. */
  quarantined?: Record<string, QuarantinedStateItem>;
  /** Keys whose quarantined item is gone since (the whole state replaced, with importState). */
  unquarantined?: string[];
}

/**
 * Applies `delta` to `state` in place: `removed` first, then `set`, whose keys new to the state go last in the order
 * `set` lists them (as in the Backpack), then `unquarantined` and `quarantined`, listed by key (as exportState lists
 * them).
 */
export function applyStateDelta(state: BackpackState, delta: StateDelta): void {
  for (const key of delta.removed ?? []) delete state.items[key];
  for (const [key, change] of Object.entries(delta.set ?? {})) {
    const previous = own(state.items, key);
    if (!previous && change.value === undefined) throw new TypeError(`state delta: key '${key}' is new but carries no value`);
    const value = change.value === undefined ? previous!.value : applyJsonDelta(previous?.value as JsonValue | undefined, change.value);
    const item: StateItem = { value, metadata: change.metadata };
    if (change.accessControl) item.accessControl = change.accessControl;
    if (!previous) delete state.items[key];
    setOwn(state.items, key, item);
  }
  for (const key of delta.unquarantined ?? []) delete state.quarantined[key];
  if (delta.quarantined === undefined) return;
  for (const [key, item] of Object.entries(delta.quarantined)) setOwn(state.quarantined, key, item);
  const sorted: BackpackState['quarantined'] = {};
  for (const key of Object.keys(state.quarantined).sort()) setOwn(sorted, key, state.quarantined[key]!);
  state.quarantined = sorted;
}

/**
 * Follows a Backpack from step boundary to step boundary and tells what changed, as a {@link StateDelta}. It keeps
 * the items of the last boundary as the Backpack stores them (frozen values, shared with it), so only the keys
 * committed since are looked at, and their values are compared by identity ({@link diffStored}): the cost of a
 * boundary follows what changed, not the size of the state. Only what changed is encoded.
 */
export class StateTracker {
  #state: StoredState;
  #seq: number;
  /** The Backpack's keys in its order at the last boundary, when known (else the mirror's keys give it, slower). */
  #order: string[] | undefined;

  /**
   * Starts at the Backpack's current state, or, with `fromEmpty`, at the empty state, so that the first delta holds
   * the whole state (the start of a run's record).
   */
  /**
   * `backpack`: the Backpack followed. `names`: the redactor of the store the deltas go to (the default one when not
   * given), whose {@link Redactor.storedKey} tells under which name a key is stored, and whose other rules tell which
   * patches it would not redact as it redacts the values they patch (see {@link StateTracker.next}).
   */
  constructor(
    private readonly backpack: Backpack,
    fromEmpty = false,
    private readonly names: Pick<Redactor, 'storedKey' | 'isSecretKey' | 'redactedWithSiblings' | 'followsSecretOption'> = redactorFor(),
  ) {
    // Lists a node grows are then compared by what was appended (see diffStored).
    backpack.recordGrowth();
    this.#state = fromEmpty ? { items: {}, quarantined: {} } : backpack.exportStoredState();
    // Below every commit: the first `next()` compares every key.
    this.#seq = fromEmpty ? -1 : backpack.headSeq;
  }

  /**
   * The delta since the last boundary, or undefined when nothing changed; moves the boundary to now.
   *
   * The store redacts the delta before writing it, and a patch must come out of redaction as the value it patches
   * does, so that the recorded state at every step is the live state as redacted, wherever the keyframes fall:
   * - A key that holds a secret is stored under another name (see Redactor.storedKey): a keyframe and a delta store it
   *   alike, but a key listed as a value (`removed`, `unquarantined`, a patch's `d`) would be redacted as text. So
   *   those lists name such a key by its stored name, and an object patch that changes or deletes such a key, or a
   *   key that has a stored name's form, is a replacement of the whole object instead.
   * - Under a secret-named key (the item's, or an object's on the way down) every string is blanked, the keys a
   *   patch's `d` lists included: an object patch there that deletes keys replaces the object.
   * - An entry redacted by its siblings (Redactor.redactedWithSiblings: a value field a sibling names a secret, text
   *   under `auth`, a JSON Schema) or by the element before it (Redactor.followsSecretOption: an option's value
   *   appended after its option) replaces its object or array.
   * The replacements are of the object (or array) that holds what changed, not of the item; the cost follows the
   * keys the delta names.
   */
  next(): StateDelta | undefined {
    // Normally only the keys committed since the last boundary are compared; if history was pruned past it, all.
    const left = new Set<string>();
    const changed = this.backpack.changedKeysSince(this.#seq, left);
    this.#seq = this.backpack.headSeq;
    if (changed?.length === 0) return undefined;
    const now = this.backpack.exportStoredState(changed);
    const keys = new Set(changed ?? [...Object.keys(this.#state.items), ...Object.keys(now.items), ...Object.keys(this.#state.quarantined), ...Object.keys(now.quarantined)]);
    const last = this.#keysGoneLast(keys, now, changed === undefined ? undefined : left);
    const delta: StateDelta = {};
    for (const key of keys) if (!last.has(key)) this.#compare(key, now, delta, false);
    for (const key of last) this.#compare(key, now, delta, true);
    if (!delta.set && !delta.removed && !delta.quarantined && !delta.unquarantined) return undefined;
    // Keys that read as command-line options go last: redaction blanks the element after a secret-named option
    // (`['--api-key', 'endpoint']`, an argument vector), which would lose that delete. Deletes commute.
    if (delta.removed) delta.removed = optionsLast(delta.removed.map((key) => this.names.storedKey(key)));
    if (delta.unquarantined) delta.unquarantined = delta.unquarantined.map((key) => this.names.storedKey(key));
    return delta;
  }

  /** Whether the store writes `key`, an object key, under another name, or a key of that form is in the patch. */
  #renamed(key: string): boolean {
    return this.names.storedKey(key) !== key || looksLikeStoredKey(key);
  }

  /**
   * `delta` (to `next`, from `previous`: values as the Backpack stores them) with each patch that the store would not
   * redact as it redacts `next` made a replacement of the object or array it patches (see {@link next}); `delta`
   * itself when there is none. `inSecret`: `next` sits at any depth under a secret-named key (every string in it is
   * blanked); `direct`: right under one (it is redacted by Redactor.secretEntry).
   */
  #storable(delta: JsonDelta, previous: unknown, next: unknown, inSecret: boolean, direct: boolean): JsonDelta {
    if ('a' in delta) {
      const list = next as readonly unknown[];
      return !inSecret && this.names.followsSecretOption(list, list.length - delta.a.length) ? { r: encodeValue(list) } : delta;
    }
    if (!('o' in delta)) return delta;
    const record = next as Record<string, unknown>;
    // Under a secret-named key the names of deleted keys would be blanked too. Right under one, a value is redacted by
    // what it is (Redactor.secretEntry): one whose shape a patch of its parts does not show (a Backpack item's, the
    // codec's encoded form, a replacement's), now or before the step, is replaced whole. A plain structure's patch is
    // redacted as the structure is, so it stays a patch (a list in it that grows costs its new items).
    if (inSecret && delta.d !== undefined) return { r: encodeValue(record) };
    if (direct && (redactedByShape(record) || redactedByShape(previous))) return { r: encodeValue(record) };
    // A structure that holds its secret in a `value` field (redacted as such right under the key): whole when that
    // field changes, comes or goes; a patch of its other fields is redacted as they are.
    if (direct && (Object.hasOwn(record, 'value') !== hasOwnField(previous, 'value') || (Object.hasOwn(record, 'value') && Object.hasOwn(delta.o, 'value')))) return { r: encodeValue(record) };
    if (delta.d !== undefined) {
      for (let i = 0; i < delta.d.length; i++) {
        const key = delta.d[i]!;
        if (this.#renamed(key) || this.names.redactedWithSiblings(record, key) || this.names.followsSecretOption(delta.d, i)) return { r: encodeValue(record) };
      }
    }
    let patched: Record<string, JsonDelta> | undefined;
    for (const key in delta.o) {
      if (this.#renamed(key) || this.names.redactedWithSiblings(record, key)) return { r: encodeValue(record) };
      const inner = delta.o[key]!;
      const secret = this.names.isSecretKey(key);
      const fitted = this.#storable(inner, (previous as Record<string, unknown>)[key], record[key], inSecret || secret, secret);
      if (fitted !== inner) setOwn((patched ??= { ...delta.o }), key, fitted);
    }
    return patched ? { ...delta, o: patched } : delta;
  }

  /**
   * The keys among `changed` that went to the end of the Backpack's order since the last boundary, in their order
   * there: keys new to the state, and keys that left it and came back (deleted, cleared or quarantined, then packed
   * again), when that changed where they are. The Backpack's keys are listed only when a key could have moved: a
   * key changed that was there before and is still there, or more than one new key.
   */
  #keysGoneLast(changed: ReadonlySet<string>, now: StoredState, leftSince: ReadonlySet<string> | undefined): Set<string> {
    const mirror = this.#state.items;
    const added: string[] = [];
    let stayed = 0;
    let left = 0;
    for (const key of changed) {
      const before = own(mirror, key) !== undefined;
      if (!own(now.items, key)) left += before ? 1 : 0;
      else if (before) stayed++;
      else added.push(key);
    }
    // No key left the active state since the last boundary (the Backpack's commits say so): every key kept its place,
    // and the new ones came last in the order they were first packed, which is `changed`'s.
    if (leftSince !== undefined && leftSince.size === 0) {
      if (added.length > 0) this.#order = undefined;
      return new Set(added);
    }
    if (stayed === 0 && added.length <= 1) {
      if (left > 0 || added.length > 0) this.#order = undefined;
      return new Set(added);
    }
    // The Backpack's order is the last boundary's without the keys that left, then the keys that came since. Walking
    // both, the keys that kept their place match in turn; the rest of the Backpack's order goes last. Keys that are
    // array indices are skipped: every record lists them first, in numeric order, so their order never shows.
    const live = this.backpack.keys();
    let i = 0;
    for (const key of this.#order ?? Object.keys(mirror)) {
      if (!isNamedKey(key) || (changed.has(key) && !own(now.items, key))) continue;
      while (i < live.length && !isNamedKey(live[i]!)) i++;
      if (live[i] === key) i++;
    }
    this.#order = live;
    return new Set(live.slice(i).filter(isNamedKey));
  }

  /** Adds what changed under `key` to `delta` and moves the mirror to `now`; `last`: the key goes last. */
  #compare(key: string, now: StoredState, delta: StateDelta, last: boolean): void {
    const item = own(now.items, key);
    let previous = own(this.#state.items, key);
    if (item) {
      if (previous && last) {
        // It left and came back: removed, then set again whole (a new key goes last).
        (delta.removed ??= []).push(key);
        delete this.#state.items[key];
        previous = undefined;
      }
      const patch = previous ? diffStored(previous.value, item.value) : undefined;
      const secret = this.names.isSecretKey(key);
      const value = previous ? patch && this.#storable(patch, previous.value, item.value, secret, secret) : { r: encodeValue(item.value) };
      if (value || !previous || !sameMeta(previous, item)) {
        setOwn((delta.set ??= {}), key, {
          metadata: item.metadata,
          ...(item.accessControl ? { accessControl: item.accessControl } : {}),
          ...(value ? { value } : {}),
        });
      }
      setOwn(this.#state.items, key, item);
    } else if (previous) {
      (delta.removed ??= []).push(key);
      delete this.#state.items[key];
    }
    const quarantined = own(now.quarantined, key);
    if (quarantined && !deepEqualInOrder(quarantined, own(this.#state.quarantined, key))) {
      setOwn((delta.quarantined ??= {}), key, { ...quarantined, value: encodeValue(quarantined.value) });
      setOwn(this.#state.quarantined, key, quarantined);
    } else if (!quarantined && own(this.#state.quarantined, key)) {
      (delta.unquarantined ??= []).push(key);
      delete this.#state.quarantined[key];
    }
  }
}

/**
 * Whether a value under a secret-named key (as the Backpack stores it) is redacted by its shape as a whole once
 * encoded (see Redactor.secretEntry): a Backpack item's (isItemShape, of its encoded `metadata`), the codec's encoded
 * form (a `$bp` field), a delta replacement's (only an `r` field).
 */
function redactedByShape(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  if (Object.hasOwn(record, 'metadata') && isItemShape({ ...record, metadata: encodeValue(record['metadata']) })) return true;
  if (Object.hasOwn(record, '$bp')) return true;
  const keys = Object.keys(record);
  return keys.length === 1 && keys[0] === 'r';
}

/** Whether `value` is an object with an own field `field`. */
function hasOwnField(value: unknown, field: string): boolean {
  return value !== null && typeof value === 'object' && Object.hasOwn(value, field);
}

function sameMeta(a: StoredItem<StateItem>, b: StoredItem<StateItem>): boolean {
  return deepEqualInOrder(a.metadata, b.metadata) && deepEqualInOrder(a.accessControl, b.accessControl);
}

/** Whether `key` is not an array index (`'0'` to `'4294967294'`), whose place in a record is fixed. */
function isNamedKey(key: string): boolean {
  const c = key.charCodeAt(0);
  return !(c >= 48 && c <= 57) || String(Number(key) >>> 0) !== key || key === '4294967295';
}

/** `record[key]` if it is the record's own property (never something inherited, such as `__proto__`). */
function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** `keys` with those that start with `-` (read as options by redaction's argument-vector rule) moved to the end. */
function optionsLast(keys: string[]): string[] {
  if (!keys.some((key) => key.startsWith('-'))) return keys;
  return [...keys.filter((key) => !key.startsWith('-')), ...keys.filter((key) => key.startsWith('-'))];
}
