/**
 * The Backpack: the state every node shares, with provenance per key, commit history, time travel, diff, access
 * control and quarantine ("Git for your agent's state"; PRD-001, tech spec, DESIGN D5-D10).
 *
 * Choices where the specs are silent:
 * - Reads are commits (`unpack`, as the specs say) unless `recordReads: false`; they count against maxHistorySize
 *   like any commit. Allowed reads are what `getAccessLog(node, 'read')` lists; denials are kept apart
 *   (`getAccessDenials`) because a denied read changes nothing.
 * - A denied write always throws AccessDeniedError (strict or not): a write that silently did not happen would be
 *   worse than an error. Graceful mode applies to reads.
 * - Namespace queries skip items the node may not read, without recording a denial (a query is not a request for a
 *   particular key); `has`, `peek` and `getItem` through a handle also just hide what the node may not read.
 * - Snapshots (`getSnapshot*`) are new Backpacks holding the state at that point as their base, with no history of
 *   their own and no event sink; `replayFromCommit` also carries the history up to the commit and the event sink, so
 *   a flow can run on from there.
 * - Commit ids are `<lineage>-<seq>`, lineage being a random id per Backpack, so a pruned commit is told apart from
 *   an unknown one (HistoryPrunedError vs InvalidCommitError).
 * - `clear` empties the active state; quarantined items stay (quarantine is the debugging trace).
 */
import { randomUUID } from 'node:crypto';
import type { ZodType } from 'zod';
import { checkItemAccessControl, checkPermissions, deniedBy, formatPath } from './access.js';
import { Actor, AS_ACTOR, OWNER, type OpContext } from './actor.js';
import { decodeValue, encodeValue, summarizeValue } from './codec.js';
import { diffBackpacks } from './diff.js';
import { AccessDeniedError, BackpackError, HistoryPrunedError, KeyNotFoundError } from './errors.js';
import { BackpackHandle } from './handle.js';
import {
  COMMIT_OVERHEAD_BYTES,
  COPY_ON_READ,
  Commit,
  FOUND,
  History,
  LARGE,
  PREV_COPY_ON_READ,
  toPublicCommit,
  type HistoryLimits,
  type QuarantineDetail,
  type State,
} from './history.js';
import { compileNamespacePattern } from './patterns.js';
import { parseBackpackJSON, serializeBackpack, type BackpackJSON, type RestoredParts } from './serialize.js';
import { BackpackStateSchema, type BackpackState, type QuarantinedStateItem, type StateItem } from './state.js';
import type {
  AccessDenial,
  BackpackCommit,
  BackpackDiff,
  BackpackEvent,
  BackpackEventSink,
  BackpackItem,
  BackpackOptions,
  EventContext,
  HandlePackOptions,
  ItemAccessControl,
  NodeIdentity,
  NodePermissions,
  PackOptions,
  QuarantinedItem,
  ValidationResult,
} from './types.js';
import { prepareValue, setOwn, UnavailableValue } from './values.js';

const NO_TAGS: readonly string[] = Object.freeze([]);

/** Options after defaults (everything but the event sink is serialized with the Backpack). */
export interface ResolvedOptions extends HistoryLimits {
  maxValueBytes: number;
  strictMode: boolean;
  recordReads: boolean;
}

/** Defaults of {@link BackpackOptions}. */
export const DEFAULT_OPTIONS: Readonly<ResolvedOptions> = Object.freeze({
  maxHistorySize: 10_000,
  maxHistoryBytes: 50 * 1024 * 1024,
  maxValueBytes: 100 * 1024,
  strictMode: false,
  keyframeInterval: 100,
  recordReads: true,
});

function resolveOptions(options: BackpackOptions | undefined): Readonly<ResolvedOptions> {
  const resolved = { ...DEFAULT_OPTIONS };
  if (options === undefined) return Object.freeze(resolved);
  if (typeof options !== 'object' || options === null) throw new BackpackError('Backpack options must be an object');
  for (const name of ['maxHistorySize', 'maxHistoryBytes', 'maxValueBytes', 'keyframeInterval'] as const) {
    const v = options[name];
    if (v === undefined) continue;
    const min = name === 'maxHistorySize' || name === 'maxHistoryBytes' ? 0 : 1;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
      throw new BackpackError(`Backpack option '${name}' must be an integer >= ${min}, got ${String(v)}`);
    }
    resolved[name] = v;
  }
  for (const name of ['strictMode', 'recordReads'] as const) {
    const v = options[name];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw new BackpackError(`Backpack option '${name}' must be a boolean, got ${String(v)}`);
    resolved[name] = v;
  }
  const sink = options.eventStreamer;
  if (sink !== undefined && (typeof sink !== 'object' || sink === null || typeof sink.emit !== 'function')) {
    throw new BackpackError("Backpack option 'eventStreamer' must have an emit(event) method");
  }
  return Object.freeze(resolved);
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key === '') {
    throw new BackpackError(`Backpack keys are non-empty strings, got ${typeof key === 'string' ? 'an empty string' : String(key)}`);
  }
}

function checkTags(key: string, tags: unknown): readonly string[] {
  if (tags === undefined) return NO_TAGS;
  if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string')) {
    throw new BackpackError(`Cannot pack key '${key}': tags must be an array of strings`, { key });
  }
  return tags.length === 0 ? NO_TAGS : Object.freeze([...tags]);
}

function newLineage(): string {
  return randomUUID().slice(0, 8);
}

function actorFrom(options: { nodeId?: string; nodeName?: string; namespace?: string } | undefined): Actor {
  if (!options || (options.nodeId === undefined && options.nodeName === undefined && options.namespace === undefined)) return OWNER;
  for (const field of ['nodeId', 'nodeName', 'namespace'] as const) {
    const v = options[field];
    if (v !== undefined && typeof v !== 'string') throw new BackpackError(`Option '${field}' must be a string, got ${typeof v}`);
  }
  if (options.nodeId === '') throw new BackpackError("Option 'nodeId' must not be empty (omit it for the owner's view)");
  return new Actor(options.nodeId, options.nodeName, options.namespace);
}

/**
 * The Backpack. The raw object is the owner's view (DESIGN D6): `nodeId` is optional on every operation and without
 * one no access check applies. Nodes work through {@link Backpack.forNode} handles bound to their identity.
 *
 * Values are stored as deep-frozen copies (D7); every write, read (unless `recordReads: false`), delete, quarantine
 * and clear is a commit (D8); snapshots are exact for every retained commit.
 */
export class Backpack {
  #items = new Map<string, Commit>();
  #quarantined = new Map<string, Commit>();
  /** The real values of LARGE items (history keeps only a reference). */
  #large = new Map<Commit, unknown>();
  /** namespace -> keys of active items from that namespace. */
  #namespaces = new Map<string, Set<string>>();
  #permissions = new Map<string, Readonly<NodePermissions>>();
  #denials: AccessDenial[] = [];
  #history: History;
  #lineage: string;
  readonly #options: Readonly<ResolvedOptions>;
  readonly #sink: BackpackEventSink | undefined;

  /**
   * @param initialData keys and values packed by the owner before anything else
   * @param options history limits, strict mode, event sink (see {@link BackpackOptions})
   */
  constructor(initialData?: Record<string, unknown>, options?: BackpackOptions) {
    this.#options = resolveOptions(options);
    this.#sink = options?.eventStreamer;
    this.#lineage = newLineage();
    this.#history = new History(this.#options, {
      state: { items: new Map(), quarantined: new Map() },
      seq: 0,
      timestamp: Number.NEGATIVE_INFINITY,
      prunedNodes: [],
      lineages: [this.#lineage],
    });
    if (initialData !== undefined) {
      if (typeof initialData !== 'object' || initialData === null || Array.isArray(initialData)) {
        throw new BackpackError('initialData must be an object of keys to values');
      }
      for (const [key, value] of Object.entries(initialData)) this.pack(key, value);
    }
  }

  // ---------------------------------------------------------------- core

  /** Number of active items. */
  get size(): number {
    return this.#items.size;
  }

  /** Seq of the latest commit (0 when there is none). */
  get headSeq(): number {
    return this.#history.headSeq;
  }

  /** The options in effect (without the event sink). */
  get options(): Readonly<ResolvedOptions> {
    return this.#options;
  }

  /**
   * Stores a frozen copy of `value` under `key` and records a `pack` commit. With `nodeId`, the write is checked
   * against the node's permissions and the item's own rules (a denied write always throws AccessDeniedError).
   * Throws BackpackError for a function, symbol or other non-data value, naming the key and where in the value.
   */
  pack(key: string, value: unknown, options?: PackOptions): void {
    this.#pack(actorFrom(options), undefined, key, value, options);
  }

  /**
   * The value under `key`, or undefined when it is missing or (graceful mode) the node may not read it. A denied
   * read is recorded and emitted; in strict mode it throws AccessDeniedError. Records an `unpack` commit.
   */
  unpack<V = unknown>(key: string, nodeId?: string): V | undefined {
    return this.#unpack(nodeId === undefined ? OWNER : actorFrom({ nodeId }), undefined, key, false) as V | undefined;
  }

  /**
   * The value under `key`. Throws KeyNotFoundError when it is missing and AccessDeniedError when the node may not
   * read it, in either mode and whether or not the key exists (a node never learns about keys it may not read).
   */
  unpackRequired<V = unknown>(key: string, nodeId?: string): V {
    return this.#unpack(nodeId === undefined ? OWNER : actorFrom({ nodeId }), undefined, key, true) as V;
  }

  /** The value under `key` without an access check, commit or event (the owner's debugging view). */
  peek<V = unknown>(key: string): V | undefined {
    const item = this.#items.get(key);
    return item === undefined ? undefined : (this.#valueOf(item) as V);
  }

  /** True when `key` is in the active state. */
  has(key: string): boolean {
    return this.#items.has(key);
  }

  /** Keys of the active state, in first-pack order. */
  keys(): string[] {
    return [...this.#items.keys()];
  }

  /** The item under `key` with its metadata, or undefined (no commit). */
  getItem(key: string): BackpackItem | undefined {
    const item = this.#items.get(key);
    return item === undefined ? undefined : this.#publicItem(item);
  }

  /** Version of the item under `key` (0 when there is none). */
  getVersion(key: string): number {
    return this.#items.get(key)?.version ?? 0;
  }

  /** The active state as a plain object of key to value. */
  toObject(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, item] of this.#items) {
      setOwn(out, key, this.#valueOf(item));
    }
    return out;
  }

  /** Removes `key` (a `delete` commit). Returns false, without a commit, when the key is not active. */
  delete(key: string, options?: { nodeId?: string }): boolean {
    return this.#delete(actorFrom(options), undefined, key);
  }

  /** Removes every active item (one `clear` commit); quarantined items stay. A node needs write access to each key. */
  clear(options?: { nodeId?: string }): void {
    const actor = actorFrom(options);
    checkNoExtraOptions(options);
    if (actor.nodeId !== undefined) for (const key of this.#items.keys()) this.#checkWrite(actor, undefined, key);
    if (this.#items.size === 0) return;
    const cleared = [...this.#items.values()];
    for (const item of cleared) if (item.flags & LARGE) this.#large.delete(item);
    this.#items.clear();
    this.#namespaces.clear();
    this.#commit(actor, 'clear', '*', undefined, undefined, 0, NO_TAGS, undefined, 0, 0, cleared);
  }

  // ---------------------------------------------------------------- namespaces

  /** Values of the active items whose source namespace matches `pattern` (D5), as an object of key to value. */
  unpackByNamespace(pattern: string): Record<string, unknown> {
    return this.#unpackByNamespace(OWNER, undefined, pattern);
  }

  /** Active items (with metadata) whose source namespace matches `pattern` (D5). */
  getItemsByNamespace(pattern: string): BackpackItem[] {
    return this.#itemsByNamespace(OWNER, pattern).map((item) => this.#publicItem(item));
  }

  /** Namespaces that active items come from, sorted. */
  getNamespaces(): string[] {
    return [...this.#namespaces.keys()].sort();
  }

  // ---------------------------------------------------------------- access control

  /** Sets the access rules of `nodeId` (D9), replacing earlier ones. Throws BackpackError naming a malformed field. */
  registerPermissions(nodeId: string, permissions: NodePermissions): void {
    this.#permissions.set(nodeId, checkPermissions(nodeId, permissions));
  }

  /** The access rules registered for `nodeId`, if any. */
  getPermissions(nodeId: string): Readonly<NodePermissions> | undefined {
    return this.#permissions.get(nodeId);
  }

  /**
   * Keys `nodeId` accessed, distinct, in first-access order, from the retained history: `write` covers pack,
   * delete, quarantine and clear; `read` covers unpack commits (recorded unless `recordReads` is false).
   */
  getAccessLog(nodeId: string, type: 'read' | 'write'): string[] {
    const keys = new Set<string>();
    for (const c of this.#history.commitsSince(0)) {
      if (c.actor.nodeId !== nodeId) continue;
      if (type === 'read' ? c.action === 'unpack' && c.flags & FOUND : c.action !== 'unpack') {
        if (c.action === 'clear') for (const item of c.detail as readonly Commit[]) keys.add(item.key);
        else keys.add(c.key);
      }
    }
    return [...keys];
  }

  /** Recorded access denials (the newest maxHistorySize), optionally of one node. */
  getAccessDenials(nodeId?: string): AccessDenial[] {
    return this.#recentDenials().filter((d) => nodeId === undefined || d.nodeId === nodeId);
  }

  // ---------------------------------------------------------------- quarantine

  /**
   * Moves `key` out of the active state into quarantine (a `quarantine` commit, D10): unpack, namespace queries and
   * snapshots' active state no longer see it; {@link getQuarantined} lists it. Returns false when the key is not active.
   */
  quarantine(key: string, options: { reason: string; nodeId?: string }): boolean {
    return this.#quarantine(actorFrom(options), undefined, key, options);
  }

  /** Quarantined items by key (a copy). */
  getQuarantined(): Map<string, QuarantinedItem> {
    const out = new Map<string, QuarantinedItem>();
    for (const [key, c] of this.#quarantined) {
      const { item, reason } = c.quarantined;
      out.set(key, Object.freeze({ ...this.#publicItem(item), quarantine: { reason, nodeId: c.actor.nodeId, timestamp: c.timestamp, seq: c.seq } }));
    }
    return out;
  }

  // ---------------------------------------------------------------- history

  /** Retained commits, oldest first; with `sinceSeq`, only those after it (HistoryPrunedError if some were pruned). */
  getHistory(options?: { sinceSeq?: number }): BackpackCommit[] {
    const since = options?.sinceSeq;
    if (since !== undefined) {
      if (!Number.isSafeInteger(since) || since < 0) throw new BackpackError(`sinceSeq must be an integer >= 0, got ${String(since)}`);
      if (since < this.#history.baseSeq) {
        throw new HistoryPrunedError(`Commits after seq ${since}`, `the oldest retained commit is seq ${this.#history.baseSeq + 1}`);
      }
    }
    return this.#history.commitsSince(since ?? 0).map(toPublicCommit);
  }

  /** The state after every commit with timestamp <= `timestamp`, as a new Backpack (HistoryPrunedError if pruned). */
  getSnapshot(timestamp: number): Backpack {
    if (typeof timestamp !== 'number' || Number.isNaN(timestamp)) throw new BackpackError(`getSnapshot needs a timestamp in ms, got ${String(timestamp)}`);
    return this.#snapshotAt(this.#history.seqAtTimestamp(timestamp));
  }

  /** The state right after commit `commitId`, as a new Backpack. */
  getSnapshotAtCommit(commitId: string): Backpack {
    return this.#snapshotAt(this.#history.seqOfCommit(commitId));
  }

  /** The state just before the first commit by `nodeId`, as a new Backpack. */
  getSnapshotBeforeNode(nodeId: string): Backpack {
    return this.#snapshotAt(this.#history.seqBeforeNode(nodeId));
  }

  /**
   * A new Backpack branched at commit `commitId`: its state is the state after that commit, its history the retained
   * commits up to it, and it keeps this Backpack's options, event sink and permissions, so a flow can run on from there.
   */
  replayFromCommit(commitId: string): Backpack {
    const seq = this.#history.seqOfCommit(commitId);
    const branch = this.#derive(this.#sink);
    const h = this.#history;
    branch.#history = new History(this.#options, {
      state: h.stateAt(h.baseSeq),
      seq: h.baseSeq,
      timestamp: h.baseTimestamp,
      prunedNodes: h.prunedNodes,
      lineages: [...h.lineages, branch.#lineage],
    });
    branch.#setState(h.stateAt(h.baseSeq));
    for (let s = h.baseSeq + 1; s <= seq; s++) branch.#replay(h.at(s));
    return branch;
  }

  /** Keys added, modified and deleted from `before` to `after` (see {@link Backpack.diff}). */
  diff(before: Backpack, after: Backpack): BackpackDiff {
    return diffBackpacks(before, after);
  }

  /** Keys added, modified and deleted from `before` to `after`, with before/after values and who changed each. */
  static diff(before: Backpack, after: Backpack): BackpackDiff {
    return diffBackpacks(before, after);
  }

  // ---------------------------------------------------------------- validation and serialization

  /** Validates the active state, as an object of key to value, against a zod schema. */
  validate(schema: ZodType): ValidationResult {
    const result = schema.safeParse(this.toObject());
    if (result.success) return { success: true, errors: [] };
    return { success: false, errors: result.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })) };
  }

  /** Plain, versioned JSON of everything: items, metadata, tags, history, quarantine, permissions and options. */
  toJSON(): BackpackJSON {
    return serializeBackpack({
      lineage: this.#lineage,
      options: this.#options,
      history: this.#history,
      large: this.#large,
      permissions: this.#permissions,
      denials: this.#recentDenials(),
    });
  }

  /**
   * Restores what {@link toJSON} produced. Validates the input and throws BackpackError naming the JSON path of the
   * first problem. The event sink is not serialized: pass it here.
   */
  static fromJSON(json: unknown, options?: { eventStreamer?: BackpackEventSink }): Backpack {
    const parts = parseBackpackJSON(json);
    return Backpack.#restore(parts, options?.eventStreamer);
  }

  static #restore(parts: RestoredParts, sink: BackpackEventSink | undefined): Backpack {
    const backpack = new Backpack(undefined, { ...parts.options, ...(sink ? { eventStreamer: sink } : {}) });
    backpack.#lineage = parts.lineage;
    for (const [nodeId, perms] of parts.permissions) backpack.#permissions.set(nodeId, checkPermissions(nodeId, perms));
    backpack.#denials = parts.denials;
    backpack.#history = new History(backpack.#options, {
      state: parts.base,
      seq: parts.baseSeq,
      timestamp: parts.baseTimestamp,
      prunedNodes: parts.prunedNodes,
      lineages: parts.lineages,
    });
    backpack.#setState({ items: new Map(parts.base.items), quarantined: new Map(parts.base.quarantined) });
    for (const c of parts.commits) backpack.#replay(c);
    for (const [c, value] of parts.large) backpack.#large.set(c, value);
    return backpack;
  }

  // ---------------------------------------------------------------- state form (durable runs)

  /**
   * The state-only form (no history): active and quarantined items with values through the value codec and their
   * provenance. With `keys`, only those keys. Durable runs checkpoint this form.
   */
  exportState(keys?: Iterable<string>): BackpackState {
    const items: BackpackState['items'] = {};
    const quarantined: BackpackState['quarantined'] = {};
    const pick = (key: string): void => {
      const item = this.#items.get(key);
      if (item) setOwn(items, key, this.#stateItem(item));
      const q = this.#quarantined.get(key);
      if (q) {
        const detail: QuarantinedStateItem['quarantine'] = { reason: q.quarantined.reason, timestamp: q.timestamp };
        if (q.actor.nodeId !== undefined) detail.nodeId = q.actor.nodeId;
        setOwn(quarantined, key, { ...this.#stateItem(q.quarantined.item), quarantine: detail });
      }
    };
    if (keys === undefined) {
      for (const key of this.#items.keys()) pick(key);
      for (const key of this.#quarantined.keys()) if (!this.#items.has(key)) pick(key);
    } else for (const key of new Set(keys)) pick(key);
    return { version: 1, items, quarantined };
  }

  /**
   * Replaces the whole state with `state` (from {@link exportState}), keeping each item's provenance, version and
   * timestamp. History restarts with that state as its base; permissions and options stay. Throws BackpackError
   * naming the JSON path of the first problem, before anything changes.
   */
  importState(state: unknown): void {
    const parsed = BackpackStateSchema.safeParse(state);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new BackpackError(`Invalid Backpack state at '${formatPath(issue.path) || '(root)'}': ${issue.message}`);
    }
    const large = new Map<Commit, unknown>();
    let seq = 0;
    let timestamp = Number.NEGATIVE_INFINITY;
    const toCommit = (key: string, item: StateItem): Commit => {
      const m = item.metadata;
      const actor = m.sourceNodeId === undefined && m.sourceNodeName === undefined && m.sourceNamespace === undefined
        ? OWNER
        : new Actor(m.sourceNodeId, m.sourceNodeName, m.sourceNamespace);
      const prepared = prepareValue(key, decodeValue(item.value));
      let flags = prepared.copyOnRead ? COPY_ON_READ : 0;
      let stored = prepared.value;
      let bytes = prepared.bytes;
      if (bytes > this.#options.maxValueBytes && !(stored instanceof UnavailableValue)) {
        flags |= LARGE;
        stored = new UnavailableValue(key, bytes, summarizeValue(prepared.value), `larger than maxValueBytes (${bytes} > ${this.#options.maxValueBytes}); history keeps only this reference`);
        bytes = 200;
      }
      timestamp = Math.max(timestamp, m.timestamp);
      const acl = item.accessControl ? checkItemAccessControl(key, item.accessControl) : undefined;
      const commit = new Commit(++seq, this.#lineage, m.timestamp, 'pack', key, actor, stored, undefined, m.version, Object.freeze([...m.tags]), acl, bytes, flags, undefined);
      if (flags & LARGE) large.set(commit, prepared.value);
      return commit;
    };
    const base: State = { items: new Map(), quarantined: new Map() };
    // The validated input itself, not zod's copy: zod's record output drops a key named __proto__ (the schema has no
    // defaults or transforms, so the two are otherwise equal).
    const valid = state as BackpackState;
    for (const [key, item] of Object.entries(valid.items)) base.items.set(key, toCommit(key, item));
    for (const [key, q] of Object.entries(valid.quarantined)) {
      const item = toCommit(key, q);
      const actor = q.quarantine.nodeId === undefined ? OWNER : new Actor(q.quarantine.nodeId, undefined, undefined);
      const detail: QuarantineDetail = { item, reason: q.quarantine.reason };
      base.quarantined.set(key, new Commit(++seq, this.#lineage, q.quarantine.timestamp, 'quarantine', key, actor, undefined, item.value, 0, NO_TAGS, undefined, 0, 0, detail));
      timestamp = Math.max(timestamp, q.quarantine.timestamp);
    }
    this.#history = new History(this.#options, { state: base, seq, timestamp, prunedNodes: [], lineages: [this.#lineage] });
    this.#large = large;
    this.#setState({ items: new Map(base.items), quarantined: new Map(base.quarantined) });
  }

  /**
   * Keys whose item changed (packed, deleted, quarantined or cleared) in the commits after `seq`; undefined when some
   * of those commits were pruned, so the caller must compare every key.
   */
  changedKeysSince(seq: number): string[] | undefined {
    if (seq < this.#history.baseSeq) return undefined;
    const keys = new Set<string>();
    for (const c of this.#history.commitsSince(seq)) {
      if (c.action === 'clear') for (const item of c.detail as readonly Commit[]) keys.add(item.key);
      else if (c.action !== 'unpack') keys.add(c.key);
    }
    return [...keys];
  }

  #stateItem(item: Commit): StateItem {
    const metadata: StateItem['metadata'] = { timestamp: item.timestamp, version: item.version, tags: [...item.tags] };
    if (item.actor.nodeId !== undefined) metadata.sourceNodeId = item.actor.nodeId;
    if (item.actor.nodeName !== undefined) metadata.sourceNodeName = item.actor.nodeName;
    if (item.actor.namespace !== undefined) metadata.sourceNamespace = item.actor.namespace;
    const out: StateItem = { value: encodeValue(this.#valueOf(item)), metadata };
    if (item.acl) out.accessControl = JSON.parse(JSON.stringify(item.acl)) as StateItem['accessControl'];
    return out;
  }

  // ---------------------------------------------------------------- handles

  /**
   * A handle bound to `identity` (D6): every operation through it runs as that node, and its events carry
   * `eventContext`. O(1): nothing is copied.
   */
  forNode(identity: NodeIdentity, eventContext?: EventContext): BackpackHandle {
    return new BackpackHandle(this, identity, eventContext);
  }

  /** Operations with an explicit actor and event context, for {@link BackpackHandle}. */
  readonly [AS_ACTOR] = {
    pack: (actor: Actor, ctx: OpContext, key: string, value: unknown, options: HandlePackOptions | undefined): void =>
      this.#pack(actor, ctx, key, value, options),
    unpack: (actor: Actor, ctx: OpContext, key: string, required: boolean): unknown => this.#unpack(actor, ctx, key, required),
    peek: (actor: Actor, key: string): unknown => {
      const item = this.#readable(actor, key);
      return item === undefined ? undefined : this.#valueOf(item);
    },
    has: (actor: Actor, key: string): boolean => this.#readable(actor, key) !== undefined,
    getItem: (actor: Actor, key: string): BackpackItem | undefined => {
      const item = this.#readable(actor, key);
      return item === undefined ? undefined : this.#publicItem(item);
    },
    unpackByNamespace: (actor: Actor, ctx: OpContext, pattern: string): Record<string, unknown> =>
      this.#unpackByNamespace(actor, ctx, pattern),
    getItemsByNamespace: (actor: Actor, pattern: string): BackpackItem[] =>
      this.#itemsByNamespace(actor, pattern).map((item) => this.#publicItem(item)),
    delete: (actor: Actor, ctx: OpContext, key: string): boolean => this.#delete(actor, ctx, key),
    quarantine: (actor: Actor, ctx: OpContext, key: string, options: { reason: string }): boolean =>
      this.#quarantine(actor, ctx, key, options),
  };

  // ---------------------------------------------------------------- internals

  #pack(actor: Actor, ctx: OpContext, key: string, value: unknown, options: HandlePackOptions | undefined): void {
    checkKey(key);
    const prev = this.#items.get(key);
    if (actor.nodeId !== undefined) this.#checkWrite(actor, ctx, key);
    const tags = checkTags(key, options?.tags);
    const acl = options?.accessControl === undefined ? undefined : checkItemAccessControl(key, options.accessControl);
    const prepared = prepareValue(key, value);
    let flags = prepared.copyOnRead ? COPY_ON_READ : 0;
    let stored = prepared.value;
    let bytes = prepared.bytes;
    if (bytes > this.#options.maxValueBytes) {
      flags |= LARGE;
      stored = new UnavailableValue(
        key,
        bytes,
        summarizeValue(prepared.value),
        `larger than maxValueBytes (${bytes} > ${this.#options.maxValueBytes}); history keeps only this reference`,
      );
      bytes = 200;
    }
    if (prev && prev.flags & COPY_ON_READ) flags |= PREV_COPY_ON_READ;
    const commit = this.#commit(actor, 'pack', key, stored, prev?.value, (prev?.version ?? 0) + 1, tags, acl, bytes, flags, undefined, prev);
    if (prev?.flags && prev.flags & LARGE) this.#large.delete(prev);
    if (flags & LARGE) this.#large.set(commit, prepared.value);
    if (this.#sink) {
      const payload: Record<string, unknown> = { key, version: commit.version, valueSummary: summarizeValue(prepared.value) };
      if (tags.length > 0) payload.tags = tags;
      this.#emit('backpack.packed', payload, actor, ctx);
    }
  }

  #unpack(actor: Actor, ctx: OpContext, key: string, required: boolean): unknown {
    checkKey(key);
    const item = this.#items.get(key);
    if (actor.nodeId !== undefined) {
      const rule = this.#readRule(actor, key, item);
      if (rule !== undefined) {
        this.#deny(actor, ctx, key, 'read', rule);
        if (required || this.#options.strictMode) throw new AccessDeniedError(key, actor.nodeId, 'read', rule, item?.tags);
        return undefined;
      }
    }
    this.#recordRead(actor, ctx, key, item);
    if (item === undefined) {
      if (required) throw new KeyNotFoundError(key, actor.nodeId);
      return undefined;
    }
    return this.#valueOf(item);
  }

  /** The `unpack` commit and event of an allowed read. */
  #recordRead(actor: Actor, ctx: OpContext, key: string, item: Commit | undefined): void {
    if (this.#options.recordReads) {
      this.#commit(actor, 'unpack', key, undefined, undefined, 0, NO_TAGS, undefined, 0, item ? FOUND : 0, undefined);
    }
    if (this.#sink) {
      const payload: Record<string, unknown> = { key, found: item !== undefined };
      if (item?.actor.nodeId !== undefined) payload.sourceNodeId = item.actor.nodeId;
      if (item?.actor.namespace !== undefined) payload.sourceNamespace = item.actor.namespace;
      this.#emit('backpack.unpacked', payload, actor, ctx);
    }
  }

  #unpackByNamespace(actor: Actor, ctx: OpContext, pattern: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const item of this.#itemsByNamespace(actor, pattern)) {
      this.#recordRead(actor, ctx, item.key, item);
      const value = this.#valueOf(item);
      setOwn(out, item.key, value);
    }
    return out;
  }

  /** Active items matching `pattern` that `actor` may read (denied ones are skipped silently: a query, not a request). */
  #itemsByNamespace(actor: Actor, pattern: string): Commit[] {
    if (typeof pattern !== 'string' || pattern === '') throw new BackpackError(`Namespace patterns are non-empty strings, got ${String(pattern)}`);
    const matches = compileNamespacePattern(pattern);
    const out: Commit[] = [];
    for (const [namespace, keys] of this.#namespaces) {
      if (!matches(namespace)) continue;
      for (const key of keys) {
        const item = this.#items.get(key)!;
        if (actor.nodeId === undefined || this.#readRule(actor, key, item) === undefined) out.push(item);
      }
    }
    return out;
  }

  #delete(actor: Actor, ctx: OpContext, key: string): boolean {
    checkKey(key);
    if (actor.nodeId !== undefined) this.#checkWrite(actor, ctx, key);
    const item = this.#items.get(key);
    if (item === undefined) return false;
    this.#removeActive(item);
    const flags = item.flags & COPY_ON_READ ? PREV_COPY_ON_READ : 0;
    this.#commit(actor, 'delete', key, undefined, item.value, 0, NO_TAGS, undefined, 0, flags, undefined);
    return true;
  }

  #quarantine(actor: Actor, ctx: OpContext, key: string, options: { reason: string }): boolean {
    checkKey(key);
    const reason = options?.reason;
    if (typeof reason !== 'string' || reason.trim() === '') {
      throw new BackpackError(`quarantine('${key}') needs a reason (a non-empty string)`, { key });
    }
    if (actor.nodeId !== undefined) this.#checkWrite(actor, ctx, key);
    const item = this.#items.get(key);
    if (item === undefined) return false;
    const replaced = this.#quarantined.get(key);
    if (replaced && replaced.quarantined.item.flags & LARGE) this.#large.delete(replaced.quarantined.item);
    this.#items.delete(key);
    this.#unindex(item);
    const flags = item.flags & COPY_ON_READ ? PREV_COPY_ON_READ : 0;
    const commit = this.#commit(actor, 'quarantine', key, undefined, item.value, 0, NO_TAGS, undefined, 0, flags, { item, reason });
    this.#quarantined.set(key, commit);
    if (this.#sink) this.#emit('backpack.quarantined', { key, reason }, actor, ctx);
    return true;
  }

  /** Creates a commit, applies it to the live state's maps (pack only; others already did) and appends it. */
  #commit(
    actor: Actor,
    action: Commit['action'],
    key: string,
    value: unknown,
    previousValue: unknown,
    version: number,
    tags: readonly string[],
    acl: Readonly<ItemAccessControl> | undefined,
    valueBytes: number,
    flags: number,
    detail: Commit['detail'],
    prev?: Commit,
  ): Commit {
    const h = this.#history;
    const commit = new Commit(
      h.headSeq + 1,
      this.#lineage,
      h.now(),
      action,
      key,
      actor,
      value,
      previousValue,
      version,
      tags,
      acl,
      COMMIT_OVERHEAD_BYTES + valueBytes,
      flags,
      detail,
    );
    if (action === 'pack') {
      if (prev) this.#unindex(prev);
      this.#items.set(key, commit);
      this.#index(commit);
    }
    h.append(commit, { items: this.#items, quarantined: this.#quarantined });
    return commit;
  }

  /** Applies a recorded commit (restore, branch) to the live state and appends it to history. */
  #replay(c: Commit): void {
    switch (c.action) {
      case 'pack': {
        const prev = this.#items.get(c.key);
        if (prev) this.#unindex(prev);
        this.#items.set(c.key, c);
        this.#index(c);
        break;
      }
      case 'delete': {
        const item = this.#items.get(c.key);
        if (item) this.#removeActive(item);
        break;
      }
      case 'quarantine': {
        const item = this.#items.get(c.key);
        if (item) {
          this.#items.delete(c.key);
          this.#unindex(item);
        }
        this.#quarantined.set(c.key, c);
        break;
      }
      case 'clear':
        this.#items.clear();
        this.#namespaces.clear();
        break;
      case 'unpack':
        break;
    }
    this.#history.append(c, { items: this.#items, quarantined: this.#quarantined });
  }

  #removeActive(item: Commit): void {
    this.#items.delete(item.key);
    this.#unindex(item);
    if (item.flags & LARGE) this.#large.delete(item);
  }

  #index(item: Commit): void {
    const ns = item.actor.namespace;
    if (ns === undefined) return;
    let keys = this.#namespaces.get(ns);
    if (!keys) this.#namespaces.set(ns, (keys = new Set()));
    keys.add(item.key);
  }

  #unindex(item: Commit): void {
    const ns = item.actor.namespace;
    if (ns === undefined) return;
    const keys = this.#namespaces.get(ns);
    if (!keys) return;
    keys.delete(item.key);
    if (keys.size === 0) this.#namespaces.delete(ns);
  }

  #setState(state: State): void {
    this.#items = state.items;
    this.#quarantined = state.quarantined;
    this.#namespaces = new Map();
    for (const item of this.#items.values()) this.#index(item);
  }

  #valueOf(item: Commit): unknown {
    if (item.flags & LARGE) return this.#large.has(item) ? this.#large.get(item) : item.value;
    return item.flags & COPY_ON_READ ? item.readValue() : item.value;
  }

  #publicItem(item: Commit): BackpackItem {
    const out: BackpackItem = {
      key: item.key,
      value: this.#valueOf(item),
      metadata: Object.freeze({
        sourceNodeId: item.actor.nodeId,
        sourceNodeName: item.actor.nodeName,
        sourceNamespace: item.actor.namespace,
        timestamp: item.timestamp,
        version: item.version,
        tags: item.tags,
      }),
    };
    if (item.acl) out.accessControl = item.acl;
    return Object.freeze(out);
  }

  #readRule(actor: Actor, key: string, item: Commit | undefined): string | undefined {
    return deniedBy('read', key, actor.nodeId!, actor.namespace, this.#permissions.get(actor.nodeId!), item && { acl: item.acl, namespace: item.actor.namespace });
  }

  /** The active item under `key` if `actor` may read it (no commit, no record). */
  #readable(actor: Actor, key: string): Commit | undefined {
    const item = this.#items.get(key);
    if (item === undefined || actor.nodeId === undefined) return item;
    return this.#readRule(actor, key, item) === undefined ? item : undefined;
  }

  #checkWrite(actor: Actor, ctx: OpContext, key: string): void {
    const item = this.#items.get(key);
    const rule = deniedBy('write', key, actor.nodeId!, actor.namespace, this.#permissions.get(actor.nodeId!), item && { acl: item.acl, namespace: item.actor.namespace });
    if (rule === undefined) return;
    this.#deny(actor, ctx, key, 'write', rule);
    throw new AccessDeniedError(key, actor.nodeId!, 'write', rule, item?.tags);
  }

  #deny(actor: Actor, ctx: OpContext, key: string, operation: 'read' | 'write', rule: string): void {
    const denial: AccessDenial = Object.freeze({ timestamp: Date.now(), nodeId: actor.nodeId!, key, operation, rule });
    this.#denials.push(denial);
    // Trimmed in batches so a denial costs O(1) amortized; readers see only the newest maxHistorySize.
    if (this.#denials.length > 2 * this.#denialLimit) this.#denials = this.#recentDenials();
    if (this.#sink) this.#emit('access.denied', { key, operation, rule }, actor, ctx);
  }

  get #denialLimit(): number {
    return Math.max(this.#options.maxHistorySize, 1);
  }

  #recentDenials(): AccessDenial[] {
    return this.#denials.slice(-this.#denialLimit);
  }

  #emit(type: BackpackEvent['type'], payload: Record<string, unknown>, actor: Actor, ctx: OpContext): void {
    const event: BackpackEvent = { type, payload };
    if (actor.nodeId !== undefined) event.nodeId = actor.nodeId;
    if (actor.nodeName !== undefined) event.nodeName = actor.nodeName;
    if (actor.namespace !== undefined) event.namespace = actor.namespace;
    if (ctx?.runId !== undefined) event.runId = ctx.runId;
    if (ctx?.spanId !== undefined) event.spanId = ctx.spanId;
    this.#sink!.emit(event);
  }

  /** A new, empty Backpack with this one's options and permissions. */
  #derive(sink: BackpackEventSink | undefined): Backpack {
    const b = new Backpack(undefined, { ...this.#options, ...(sink ? { eventStreamer: sink } : {}) });
    for (const [nodeId, perms] of this.#permissions) b.#permissions.set(nodeId, perms);
    return b;
  }

  #snapshotAt(seq: number): Backpack {
    const h = this.#history;
    const state = h.stateAt(seq);
    const snapshot = this.#derive(undefined);
    snapshot.#history = new History(this.#options, {
      state: { items: new Map(state.items), quarantined: new Map(state.quarantined) },
      seq,
      timestamp: seq === h.baseSeq ? h.baseTimestamp : h.at(seq).timestamp,
      prunedNodes: [],
      lineages: [...h.lineages, snapshot.#lineage],
    });
    snapshot.#setState(state);
    return snapshot;
  }
}

function checkNoExtraOptions(options: unknown): void {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new BackpackError('Options must be an object');
  }
}
