import {
  deepEqual,
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
import { applyJsonDelta, diffStored, type JsonDelta } from './json-delta.js';

/** What changed in a Backpack's state between two step boundaries. Values travel as structural JSON deltas. */
export interface StateDelta {
  /** Items packed since: metadata, item rules, and the value as a delta from the item's previous value. */
  set?: Record<string, { metadata: StateItem['metadata']; accessControl?: StateItem['accessControl']; value?: JsonDelta }>;
  /** Keys that left the active state (deleted, cleared or quarantined). */
  removed?: string[];
  /** Items quarantined since, whole. */
  quarantined?: Record<string, QuarantinedStateItem>;
}

/** Applies `delta` to `state` in place (keys new to the state go last, as in the Backpack). */
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
  for (const [key, item] of Object.entries(delta.quarantined ?? {})) setOwn(state.quarantined, key, item);
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

  /**
   * Starts at the Backpack's current state, or, with `fromEmpty`, at the empty state, so that the first delta holds
   * the whole state (the start of a run's record).
   */
  constructor(
    private readonly backpack: Backpack,
    fromEmpty = false,
  ) {
    this.#state = fromEmpty ? { items: {}, quarantined: {} } : backpack.exportStoredState();
    // Below every commit: the first `next()` compares every key.
    this.#seq = fromEmpty ? -1 : backpack.headSeq;
  }

  /** The delta since the last boundary, or undefined when nothing changed; moves the boundary to now. */
  next(): StateDelta | undefined {
    // Normally only the keys committed since the last boundary are compared; if history was pruned past it, all.
    const changed = this.backpack.changedKeysSince(this.#seq);
    this.#seq = this.backpack.headSeq;
    if (changed?.length === 0) return undefined;
    const now = this.backpack.exportStoredState(changed);
    const keys = changed ?? new Set([...Object.keys(this.#state.items), ...Object.keys(now.items), ...Object.keys(now.quarantined)]);
    const delta: StateDelta = {};
    for (const key of keys) {
      const item = own(now.items, key);
      const previous = own(this.#state.items, key);
      if (item) {
        const value = previous ? diffStored(previous.value, item.value) : { r: encodeValue(item.value) };
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
      if (quarantined && !deepEqual(quarantined, own(this.#state.quarantined, key))) {
        setOwn((delta.quarantined ??= {}), key, { ...quarantined, value: encodeValue(quarantined.value) });
        setOwn(this.#state.quarantined, key, quarantined);
      }
    }
    if (!delta.set && !delta.removed && !delta.quarantined) return undefined;
    return delta;
  }
}

function sameMeta(a: StoredItem<StateItem>, b: StoredItem<StateItem>): boolean {
  return deepEqual(a.metadata, b.metadata) && deepEqual(a.accessControl, b.accessControl);
}

/** `record[key]` if it is the record's own property (never something inherited, such as `__proto__`). */
function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
