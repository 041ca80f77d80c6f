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
import { deniedBy, formatPath, checkItemAccessControl, type Denial } from './access.js';
import { Actor, OWNER, type OpContext } from './actor.js';
import { summarizeValue } from './codec.js';
import { diffBackpacks, type ItemSource } from './diff.js';
import { AccessDeniedError, BackpackError, HistoryPrunedError, KeyNotFoundError } from './errors.js';
import { BackpackHandle, NodeBinding, type HandleOps } from './handle.js';
import { applyCommit, Commit, FOUND, History, LARGE, PREV_COPY_ON_READ, COPY_ON_READ, storeValue, toPublicCommit, type CommitInit, type State, type StateListener } from './history.js';
import { checkTags, resolveOptions, type ResolvedOptions } from './options.js';
import { checkSegments, compileNamespacePattern } from './patterns.js';
import { NodeRegistry } from './registry.js';
import { parseBackpackJSON, serializeBackpack, type BackpackJSON, type RestoredParts } from './serialize.js';
import { exportState, importState, type BackpackState } from './state.js';
import type {
  AccessDenial,
  AsNodeOptions,
  BackpackCommit,
  BackpackDiff,
  BackpackEvent,
  BackpackEventSink,
  BackpackItem,
  BackpackOptions,
  HandlePackOptions,
  NodeIdentity,
  NodePermissions,
  NodeRegistration,
  PackOptions,
  QuarantinedItem,
  ValidationResult,
} from './types.js';
import { setOwn } from './values.js';

export { DEFAULT_OPTIONS, type ResolvedOptions } from './options.js';

const keyError = (message: string): BackpackError => new BackpackError(message);

function checkKey(key: unknown): asserts key is string {
  checkSegments(key, 'Backpack key', keyError);
}

function newLineage(): string {
  return randomUUID().slice(0, 8);
}

/**
 * The Backpack. The raw object is the owner's view (DESIGN D6): `nodeId` is optional on every operation and without
 * one no access check applies; with one, the operation runs as that registered node, with its permissions and its
 * registered identity as provenance. Nodes work through handles ({@link Backpack.registerNode},
 * {@link Backpack.forNode}), which never give the owner's view back.
 *
 * Values are stored as deep-frozen copies (D7); every write, read (unless `recordReads: false`), delete, quarantine
 * and clear is a commit (D8); snapshots are exact for every retained commit.
 */
export class Backpack {
  #state: State = { items: new Map(), quarantined: new Map() };
  /** The real values of LARGE items (history keeps only a reference). */
  #large = new Map<Commit, unknown>();
  /** namespace -> keys of active items from that namespace. */
  #namespaces = new Map<string, Set<string>>();
  #registry = new NodeRegistry();
  #denials: AccessDenial[] = [];
  #history: History;
  #lineage: string;
  readonly #options: Readonly<ResolvedOptions>;
  readonly #sink: BackpackEventSink | undefined;
  /** Keeps the namespace index and the large values in step with the active items. */
  readonly #listener: StateListener = {
    added: (item) => this.#index(item),
    removed: (item, by) => {
      this.#unindex(item);
      if (item.flags & LARGE && by.action !== 'quarantine') this.#large.delete(item);
    },
  };
  /** What handles do through this Backpack (held privately by every handle). */
  readonly #ops: HandleOps = {
    pack: (actor, ctx, key, value, options) => this.#pack(actor, ctx, key, value, options),
    unpack: (actor, ctx, key, required) => this.#unpack(actor, ctx, key, required),
    peek: (actor, key) => {
      const item = this.#readable(actor, key);
      return item === undefined ? undefined : this.#valueOf(item);
    },
    getItem: (actor, key) => {
      const item = this.#readable(actor, key);
      return item === undefined ? undefined : this.#publicItem(item);
    },
    keys: (actor) => this.#readableKeys(actor),
    unpackByNamespace: (actor, ctx, pattern) => this.#unpackByNamespace(actor, ctx, pattern),
    getItemsByNamespace: (actor, pattern) => this.#itemsByNamespace(actor, pattern).map((item) => this.#publicItem(item)),
    delete: (actor, ctx, key) => this.#delete(actor, ctx, key),
    quarantine: (actor, ctx, key, options) => this.#quarantine(actor, ctx, key, options),
    register: (node, parent) => this.#registry.register(node, parent),
  };

  /**
   * @param initialData keys and values packed by the owner before anything else
   * @param options history limits, strict mode, event sink (see {@link BackpackOptions})
   */
  constructor(initialData?: Record<string, unknown>, options?: BackpackOptions) {
    this.#options = resolveOptions(options);
    this.#sink = options?.eventStreamer;
    this.#lineage = newLineage();
    this.#history = this.#newHistory({ items: new Map(), quarantined: new Map() }, 0, Number.NEGATIVE_INFINITY);
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
    return this.#state.items.size;
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
   * Stores a frozen copy of `value` under `key` and records a `pack` commit. With `nodeId` (a registered node), the
   * write runs as that node: provenance is its registered identity and its permissions and the item's rules are
   * checked (a denied write always throws AccessDeniedError). Throws BackpackError for a key with an empty segment,
   * or a function, symbol or other non-data value, naming the key and where in the value.
   */
  pack(key: string, value: unknown, options?: PackOptions): void {
    this.#pack(this.#actorFrom(options), undefined, key, value, options);
  }

  /**
   * The value under `key`, or undefined when it is missing or (graceful mode) the node may not read it. A denied
   * read is recorded and emitted; in strict mode it throws AccessDeniedError. Records an `unpack` commit.
   */
  unpack<V = unknown>(key: string, nodeId?: string): V | undefined {
    return this.#unpack(this.#as(nodeId), undefined, key, false) as V | undefined;
  }

  /**
   * The value under `key`. Throws KeyNotFoundError when it is missing (or an item rule hides it from the node) and
   * AccessDeniedError when the node's rules refuse the key, whether or not it exists.
   */
  unpackRequired<V = unknown>(key: string, nodeId?: string): V {
    return this.#unpack(this.#as(nodeId), undefined, key, true) as V;
  }

  /** The value under `key` without a commit or event (as `nodeId`, only if it may read it). */
  peek<V = unknown>(key: string, nodeId?: string): V | undefined {
    return this.#ops.peek(this.#as(nodeId), key) as V | undefined;
  }

  /** True when `key` is in the active state (as `nodeId`: and it may read it). */
  has(key: string, nodeId?: string): boolean {
    return this.#readable(this.#as(nodeId), key) !== undefined;
  }

  /** Keys of the active state, in first-pack order (as `nodeId`: those it may read). */
  keys(nodeId?: string): string[] {
    return this.#readableKeys(this.#as(nodeId));
  }

  /** The item under `key` with its metadata, or undefined (no commit; as `nodeId`: only if it may read it). */
  getItem(key: string, nodeId?: string): BackpackItem | undefined {
    return this.#ops.getItem(this.#as(nodeId), key);
  }

  /** Version of the item under `key` (0 when there is none). */
  getVersion(key: string): number {
    return this.#state.items.get(key)?.version ?? 0;
  }

  /** The active state as a plain object of key to value (as `nodeId`: what it may read). */
  toObject(nodeId?: string): Record<string, unknown> {
    const actor = this.#as(nodeId);
    const out: Record<string, unknown> = {};
    for (const [key, item] of this.#state.items) if (this.#mayRead(actor, item)) setOwn(out, key, this.#valueOf(item));
    return out;
  }

  /** Removes `key` (a `delete` commit). Returns false, without a commit, when the key is not active. */
  delete(key: string, options?: { nodeId?: string }): boolean {
    return this.#delete(this.#actorFrom(options), undefined, key);
  }

  /** Removes every active item (one `clear` commit); quarantined items stay. A node needs write access to each key. */
  clear(options?: { nodeId?: string }): void {
    const actor = this.#actorFrom(options);
    if (actor !== OWNER) for (const key of this.#state.items.keys()) this.#checkWrite(actor, undefined, key);
    if (this.#state.items.size === 0) return;
    this.#commit(actor, { action: 'clear', key: '*', detail: Object.freeze([...this.#state.items.values()]) });
  }

  // ---------------------------------------------------------------- namespaces

  /** Values of the active items whose source namespace matches `pattern` (D5); as `nodeId`, those it may read. */
  unpackByNamespace(pattern: string, nodeId?: string): Record<string, unknown> {
    return this.#unpackByNamespace(this.#as(nodeId), undefined, pattern);
  }

  /** Active items (with metadata) whose source namespace matches `pattern` (D5); as `nodeId`, those it may read. */
  getItemsByNamespace(pattern: string, nodeId?: string): BackpackItem[] {
    return this.#ops.getItemsByNamespace(this.#as(nodeId), pattern);
  }

  /** Namespaces that active items come from, sorted. */
  getNamespaces(): string[] {
    return [...this.#namespaces.keys()].sort();
  }

  // ---------------------------------------------------------------- nodes and access control

  /**
   * Registers a node this Backpack serves (flows do this for every node they add): its id, class name, full
   * namespace and access rules (D9). Provenance of everything it does comes from this registration. Full namespaces
   * are unique: another node at a registered namespace is an error naming both. Returns the node's binding, whose
   * `handle` is what the node works through.
   */
  registerNode(node: NodeRegistration): NodeBinding {
    return new NodeBinding(this.#ops, this.#registry.register(node));
  }

  /**
   * A handle acting as `identity` (D6): the registered node with that id and namespace, or (when none is registered
   * there) a new registration without access rules. Its events carry `eventContext`. O(1): nothing is copied.
   */
  forNode(identity: NodeIdentity, eventContext?: { runId?: string; spanId?: string }): BackpackHandle {
    if (!identity || typeof identity !== 'object') throw new BackpackError('forNode needs an identity { nodeId, nodeName, namespace }');
    let actor: Actor | undefined;
    for (const a of this.#registry.values()) {
      if (a.nodeId === identity.nodeId && (a.namespace ?? '') === identity.namespace && a.parent === undefined) actor = a;
    }
    if (actor !== undefined && actor.nodeName !== identity.nodeName) {
      throw new BackpackError(`Node '${identity.nodeId}' is registered as '${actor.nodeName}', not '${String(identity.nodeName)}'`, { nodeId: identity.nodeId });
    }
    actor ??= this.#registry.register(identity);
    return new BackpackHandle(this.#ops, actor, eventContext);
  }

  /** Sets the access rules of the registered node `nodeId` (D9), replacing earlier ones. */
  registerPermissions(nodeId: string, permissions: NodePermissions): void {
    const a = this.#registry.resolve(nodeId);
    this.#registry.register({ nodeId, nodeName: a.nodeName!, namespace: a.namespace ?? '', permissions }, a.parent);
  }

  /** The access rules registered for `nodeId`, if any. */
  getPermissions(nodeId: string): Readonly<NodePermissions> | undefined {
    for (const a of this.#registry.values()) if (a.nodeId === nodeId) return a.permissions;
    return undefined;
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
    return this.#quarantine(this.#actorFrom(options), undefined, key, options);
  }

  /** Quarantined items by key (a copy); as `nodeId`, those it may read. */
  getQuarantined(options?: AsNodeOptions): Map<string, QuarantinedItem> {
    const actor = this.#as(options?.nodeId);
    const out = new Map<string, QuarantinedItem>();
    for (const [key, c] of this.#state.quarantined) {
      const { item, reason } = c.quarantined;
      if (!this.#mayRead(actor, item)) continue;
      out.set(key, Object.freeze({ ...this.#publicItem(item), quarantine: { reason, nodeId: c.actor.nodeId, timestamp: c.timestamp, seq: c.seq } }));
    }
    return out;
  }

  // ---------------------------------------------------------------- history

  /**
   * Retained commits, oldest first; with `sinceSeq`, only those after it (HistoryPrunedError if some were pruned).
   * As `nodeId`: only commits of items it may read, reads that found one, and no previous values.
   */
  getHistory(options?: { sinceSeq?: number } & AsNodeOptions): BackpackCommit[] {
    const since = options?.sinceSeq;
    if (since !== undefined) {
      if (!Number.isSafeInteger(since) || since < 0) throw new BackpackError(`sinceSeq must be an integer >= 0, got ${String(since)}`);
      if (since < this.#history.baseSeq) {
        throw new HistoryPrunedError(`Commits after seq ${since}`, `the oldest retained commit is seq ${this.#history.baseSeq + 1}`);
      }
    }
    const commits = this.#history.commitsSince(since ?? 0);
    const actor = this.#as(options?.nodeId);
    if (actor === OWNER) return commits.map(toPublicCommit);
    const out: BackpackCommit[] = [];
    for (const c of commits) if (this.#commitVisible(actor, c)) out.push(Object.freeze({ ...toPublicCommit(c), previousValue: undefined }));
    return out;
  }

  /** The state after every commit with timestamp <= `timestamp`, as a new Backpack (HistoryPrunedError if pruned). */
  getSnapshot(timestamp: number, options?: AsNodeOptions): Backpack {
    if (typeof timestamp !== 'number' || Number.isNaN(timestamp)) throw new BackpackError(`getSnapshot needs a timestamp in ms, got ${String(timestamp)}`);
    return this.#snapshotAt(this.#history.seqAtTimestamp(timestamp), this.#as(options?.nodeId));
  }

  /** The state right after commit `commitId`, as a new Backpack (as `nodeId`: only what it may read). */
  getSnapshotAtCommit(commitId: string, options?: AsNodeOptions): Backpack {
    return this.#snapshotAt(this.#history.seqOfCommit(commitId), this.#as(options?.nodeId));
  }

  /** The state just before the first commit by `nodeId`, as a new Backpack (as `options.nodeId`: only what it may read). */
  getSnapshotBeforeNode(nodeId: string, options?: AsNodeOptions): Backpack {
    return this.#snapshotAt(this.#history.seqBeforeNode(nodeId), this.#as(options?.nodeId));
  }

  /**
   * A new Backpack branched at commit `commitId`: its state is the state after that commit, its history the retained
   * commits up to it, and it keeps this Backpack's options, event sink and registered nodes, so a flow can run on.
   */
  replayFromCommit(commitId: string): Backpack {
    const seq = this.#history.seqOfCommit(commitId);
    const h = this.#history;
    const branch = this.#derive(this.#sink);
    branch.#history = branch.#newHistory(h.stateAt(h.baseSeq), h.baseSeq, h.baseTimestamp, h.prunedNodes, h.lineages);
    branch.#setState(h.stateAt(h.baseSeq));
    for (let s = h.baseSeq + 1; s <= seq; s++) branch.#apply(h.at(s));
    return branch;
  }

  /** Keys added, modified and deleted from `before` to `after` (as `nodeId`: keys it may read in this Backpack). */
  diff(before: Backpack, after: Backpack, options?: AsNodeOptions): BackpackDiff {
    const actor = this.#as(options?.nodeId);
    if (actor === OWNER) return diffBackpacks(before, after);
    const view = (b: Backpack): ItemSource => ({
      keys: () => b.keys().filter((k) => this.#keyVisible(actor, k, b.#state.items.get(k))),
      getItem: (k) => (this.#keyVisible(actor, k, b.#state.items.get(k)) ? b.getItem(k) : undefined),
    });
    return diffBackpacks(view(before), view(after));
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

  /**
   * Plain, versioned JSON of everything: items, metadata, tags, history, quarantine, registered nodes and options.
   * As `nodeId`: the JSON of the state that node may read, without history or other nodes' registrations (history
   * would show what it may not read).
   */
  toJSON(options?: AsNodeOptions): BackpackJSON {
    const actor = this.#as(options?.nodeId);
    if (actor !== OWNER) {
      const view = this.#snapshotAt(this.#history.headSeq, actor);
      view.#registry = new NodeRegistry();
      return view.toJSON();
    }
    return serializeBackpack({
      lineage: this.#lineage,
      options: this.#options,
      history: this.#history,
      large: this.#large,
      nodes: this.#registry.values(),
      denials: this.#recentDenials(),
    });
  }

  /**
   * Restores what {@link toJSON} produced. Validates the input and throws BackpackError naming the JSON path of the
   * first problem. The event sink is not serialized: pass it here.
   */
  static fromJSON(json: unknown, options?: { eventStreamer?: BackpackEventSink }): Backpack {
    return Backpack.#restore(parseBackpackJSON(json), options?.eventStreamer);
  }

  static #restore(parts: RestoredParts, sink: BackpackEventSink | undefined): Backpack {
    const backpack = new Backpack(undefined, { ...parts.options, ...(sink ? { eventStreamer: sink } : {}) });
    backpack.#lineage = parts.lineage;
    const actors: Actor[] = [];
    for (const { registration, parent } of parts.nodes) {
      actors.push(backpack.#registry.register(registration, parent === undefined ? undefined : actors[parent]));
    }
    backpack.#denials = parts.denials;
    backpack.#history = backpack.#newHistory(parts.base, parts.baseSeq, parts.baseTimestamp, parts.prunedNodes, parts.lineages);
    backpack.#setState({ items: new Map(parts.base.items), quarantined: new Map(parts.base.quarantined) });
    for (const c of parts.commits) backpack.#apply(c);
    for (const [c, value] of parts.large) backpack.#large.set(c, value);
    return backpack;
  }

  // ---------------------------------------------------------------- state form (durable runs)

  /**
   * The state-only form (no history): active and quarantined items with values through the value codec and their
   * provenance. With `keys`, only those keys; as `nodeId`, only items it may read. Durable runs checkpoint this form.
   */
  exportState(keys?: Iterable<string>, options?: AsNodeOptions): BackpackState {
    const actor = this.#as(options?.nodeId);
    return exportState({
      items: this.#state.items,
      quarantined: this.#state.quarantined,
      valueOf: (item) => this.#valueOf(item),
      readable: actor === OWNER ? undefined : (item) => this.#mayRead(actor, item),
    }, keys);
  }

  /**
   * Replaces the whole state with `state` (from {@link exportState}), keeping each item's provenance, version and
   * timestamp. History restarts with that state as its base; registered nodes and options stay. Throws BackpackError
   * naming the JSON path of the first problem, before anything changes.
   */
  importState(state: unknown): void {
    const imported = importState(state, this.#lineage, this.#options.maxValueBytes);
    this.#history = this.#newHistory(imported.base, imported.seq, imported.timestamp);
    this.#large = imported.large;
    this.#setState({ items: new Map(imported.base.items), quarantined: new Map(imported.base.quarantined) });
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

  // ---------------------------------------------------------------- internals: writes

  /** The actor an owner's call names: the owner, or the registered node (claims must match its registration). */
  #actorFrom(options: { nodeId?: unknown; nodeName?: unknown; namespace?: unknown } | undefined): Actor {
    if (options !== undefined && (typeof options !== 'object' || options === null)) throw new BackpackError('Options must be an object');
    if (!options || (options.nodeId === undefined && options.nodeName === undefined && options.namespace === undefined)) return OWNER;
    if (options.nodeId === undefined) throw new BackpackError("Options 'nodeName' and 'namespace' describe a node: pass its 'nodeId' (a registered node)");
    return this.#registry.resolve(options.nodeId, options);
  }

  #as(nodeId: string | undefined): Actor {
    return nodeId === undefined ? OWNER : this.#registry.resolve(nodeId);
  }

  #pack(actor: Actor, ctx: OpContext, key: string, value: unknown, options: HandlePackOptions | undefined): void {
    checkKey(key);
    if (actor !== OWNER) this.#checkWrite(actor, ctx, key);
    const tags = checkTags(key, options?.tags);
    const acl = options?.accessControl === undefined ? undefined : checkItemAccessControl(key, options.accessControl);
    const v = storeValue(key, value, this.#options.maxValueBytes);
    const prev = this.#state.items.get(key);
    const flags = v.flags | (prev && prev.flags & COPY_ON_READ ? PREV_COPY_ON_READ : 0);
    const commit = this.#commit(actor, {
      action: 'pack', key, value: v.stored, previousValue: prev?.value, version: (prev?.version ?? 0) + 1, tags, acl, bytes: v.bytes, flags,
    });
    if (flags & LARGE) this.#large.set(commit, v.real);
    if (this.#sink) {
      const payload: Record<string, unknown> = { key, version: commit.version, valueSummary: summarizeValue(v.real) };
      if (tags.length > 0) payload.tags = tags;
      this.#emit('backpack.packed', payload, actor, ctx);
    }
  }

  #delete(actor: Actor, ctx: OpContext, key: string): boolean {
    checkKey(key);
    if (actor !== OWNER) this.#checkWrite(actor, ctx, key);
    const item = this.#state.items.get(key);
    if (item === undefined) return false;
    this.#commit(actor, { action: 'delete', key, previousValue: item.value, flags: item.flags & COPY_ON_READ ? PREV_COPY_ON_READ : 0 });
    return true;
  }

  #quarantine(actor: Actor, ctx: OpContext, key: string, options: { reason: string }): boolean {
    checkKey(key);
    const reason = options?.reason;
    if (typeof reason !== 'string' || reason.trim() === '') {
      throw new BackpackError(`quarantine('${key}') needs a reason (a non-empty string)`, { key });
    }
    if (actor !== OWNER) this.#checkWrite(actor, ctx, key);
    const item = this.#state.items.get(key);
    if (item === undefined) return false;
    const replaced = this.#state.quarantined.get(key);
    if (replaced && replaced.quarantined.item.flags & LARGE) this.#large.delete(replaced.quarantined.item);
    this.#commit(actor, { action: 'quarantine', key, flags: item.flags & COPY_ON_READ ? PREV_COPY_ON_READ : 0, detail: { item, reason } });
    if (this.#sink) this.#emit('backpack.quarantined', { key, reason }, actor, ctx);
    return true;
  }

  /** Builds a commit from `init` (one object, never positional), applies it to the live state and appends it. */
  #commit(actor: Actor, init: Omit<CommitInit, 'seq' | 'lineage' | 'timestamp' | 'actor'>): Commit {
    const h = this.#history;
    const commit = new Commit({ ...init, seq: h.headSeq + 1, lineage: this.#lineage, timestamp: h.now(), actor });
    this.#apply(commit);
    return commit;
  }

  /** Applies a commit (new, restored or branched) to the live state and appends it to history. */
  #apply(commit: Commit): void {
    applyCommit(this.#state, commit, this.#listener);
    this.#history.append(commit, this.#state);
  }

  // ---------------------------------------------------------------- internals: reads and access

  #unpack(actor: Actor, ctx: OpContext, key: string, required: boolean): unknown {
    checkKey(key);
    const item = this.#state.items.get(key);
    if (actor !== OWNER) {
      const denial = this.#readDenial(actor, key, item);
      if (denial !== undefined) {
        // What the node learns must not depend on whether the item exists (D9): it gets exactly what a read of a
        // missing key gets. Refused for the key itself: AccessDeniedError (strict or required) with the key's rule;
        // refused only because of the item (its rules, its source namespace): a missing key.
        const asMissing = item === undefined ? denial : this.#readDenial(actor, key, undefined);
        this.#deny(actor, ctx, key, 'read', denial, asMissing?.rule);
        if (asMissing === undefined) {
          if (required) throw new KeyNotFoundError(key, actor.nodeId);
          return undefined;
        }
        if (required || this.#options.strictMode) throw new AccessDeniedError(key, actor.nodeId!, 'read', asMissing.rule);
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
    if (this.#options.recordReads) this.#commit(actor, { action: 'unpack', key, flags: item ? FOUND : 0 });
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
      setOwn(out, item.key, this.#valueOf(item));
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
        const item = this.#state.items.get(key)!;
        if (this.#mayRead(actor, item)) out.push(item);
      }
    }
    return out;
  }

  #readableKeys(actor: Actor): string[] {
    const out: string[] = [];
    for (const [key, item] of this.#state.items) if (this.#mayRead(actor, item)) out.push(key);
    return out;
  }

  #readDenial(actor: Actor, key: string, item: Commit | undefined): Denial | undefined {
    return deniedBy('read', key, actor, item && { acl: item.acl, namespace: item.actor.namespace });
  }

  #mayRead(actor: Actor, item: Commit): boolean {
    return actor === OWNER || this.#readDenial(actor, item.key, item) === undefined;
  }

  /** The active item under `key` if `actor` may read it (no commit, no record). */
  #readable(actor: Actor, key: string): Commit | undefined {
    const item = this.#state.items.get(key);
    return item !== undefined && this.#mayRead(actor, item) ? item : undefined;
  }

  /** A key in a node's view of a (possibly other) Backpack: its key rules, and the item's rules if it exists. */
  #keyVisible(actor: Actor, key: string, item: Commit | undefined): boolean {
    return item === undefined ? this.#readDenial(actor, key, undefined) === undefined : this.#mayRead(actor, item);
  }

  /** Whether a commit shows in a node's history: it touches only items the node may read (and a read found one). */
  #commitVisible(actor: Actor, c: Commit): boolean {
    switch (c.action) {
      case 'pack':
        return this.#mayRead(actor, c);
      case 'quarantine':
        return this.#mayRead(actor, c.quarantined.item);
      case 'clear':
        return (c.detail as readonly Commit[]).every((item) => this.#mayRead(actor, item));
      case 'unpack':
        return (c.flags & FOUND) !== 0 && c.actor === actor;
      case 'delete':
        return this.#readDenial(actor, c.key, undefined) === undefined;
    }
  }

  #checkWrite(actor: Actor, ctx: OpContext, key: string): void {
    const item = this.#state.items.get(key);
    const denial = deniedBy('write', key, actor, item && { acl: item.acl, namespace: item.actor.namespace });
    if (denial === undefined) return;
    // An item rule's writer list is never shown to the node.
    const shown = denial.byItem ? 'the item does not allow this node to write it' : denial.rule;
    this.#deny(actor, ctx, key, 'write', denial, shown);
    throw new AccessDeniedError(key, actor.nodeId!, 'write', shown);
  }

  /**
   * Records a denial (the full reason, for the owner) and emits `access.denied`. `shown` is the rule the node itself
   * is told; without one the event is marked `hidden` (to the node the key is missing, so its event view drops it).
   */
  #deny(actor: Actor, ctx: OpContext, key: string, operation: 'read' | 'write', denial: Denial, shown: string | undefined): void {
    const record: AccessDenial = Object.freeze({ timestamp: Date.now(), nodeId: actor.nodeId!, key, operation, rule: denial.rule });
    this.#denials.push(record);
    // Trimmed in batches so a denial costs O(1) amortized; readers see only the newest maxHistorySize.
    if (this.#denials.length > 2 * this.#denialLimit) this.#denials = this.#recentDenials();
    if (this.#sink) {
      const payload: Record<string, unknown> = shown === undefined ? { key, operation, rule: denial.rule, hidden: true } : { key, operation, rule: shown };
      this.#emit('access.denied', payload, actor, ctx);
    }
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

  // ---------------------------------------------------------------- internals: state and snapshots

  #newHistory(state: State, seq: number, timestamp: number, prunedNodes: Iterable<string> = [], lineages: Iterable<string> = []): History {
    return new History(this.#options, { state, seq, timestamp, prunedNodes, lineages: [...lineages, this.#lineage] });
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
    this.#state = state;
    this.#namespaces = new Map();
    for (const item of state.items.values()) this.#index(item);
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

  /** A new, empty Backpack with this one's options and registered nodes. */
  #derive(sink: BackpackEventSink | undefined): Backpack {
    const b = new Backpack(undefined, { ...this.#options, ...(sink ? { eventStreamer: sink } : {}) });
    b.#registry = this.#registry;
    return b;
  }

  /** The state after `seq` as a new Backpack; as a node, holding only the items it may read. */
  #snapshotAt(seq: number, actor: Actor): Backpack {
    const h = this.#history;
    const state = h.stateAt(seq);
    if (actor !== OWNER) {
      for (const [key, item] of state.items) if (!this.#mayRead(actor, item)) state.items.delete(key);
      for (const [key, q] of state.quarantined) if (!this.#mayRead(actor, q.quarantined.item)) state.quarantined.delete(key);
    }
    const snapshot = this.#derive(undefined);
    const timestamp = seq === h.baseSeq ? h.baseTimestamp : h.at(seq).timestamp;
    snapshot.#history = snapshot.#newHistory({ items: new Map(state.items), quarantined: new Map(state.quarantined) }, seq, timestamp, [], h.lineages);
    snapshot.#setState(state);
    return snapshot;
  }
}
