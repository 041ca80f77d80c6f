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
import type { ZodType } from 'zod';
import { formatPath } from './access.js';
import { OWNER, type Actor } from './actor.js';
import { diffBackpacks, type ItemSource } from './diff.js';
import { BackpackError, HistoryPrunedError } from './errors.js';
import { BackpackHandle, childRegistrarOf, NodeBinding, NodeRegistrar } from './handle.js';
import { FOUND, toPublicCommit, type Commit } from './history.js';
import { Ledger } from './ledger.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { NodeRegistry } from './registry.js';
import { parseBackpackJSON, serializeBackpack, type BackpackJSON } from './serialize.js';
import { exportState, exportStoredState, importState, type BackpackState, type StoredState } from './state.js';
import type {
  AccessDenial,
  AsNodeOptions,
  BackpackCommit,
  BackpackDiff,
  BackpackEventSink,
  BackpackItem,
  BackpackOptions,
  NodeIdentity,
  NodePermissions,
  NodeRegistration,
  PackOptions,
  QuarantinedItem,
  ValidationResult,
} from './types.js';
import { setOwn } from './values.js';
import { hardenClass } from '../harden.js';

export { DEFAULT_OPTIONS, type ResolvedOptions } from './options.js';

let wrap: (ledger: Ledger) => Backpack;
let ownRegistrar: (backpack: Backpack) => NodeRegistrar;
let ownerPackIn: (backpack: Backpack, runId: string, key: string, value: unknown) => void;

/** The owner's pack of `key` as part of run `runId` (a flow's input): its event carries the run's id, as the run's own do. */
export function packInRun(backpack: Backpack, runId: string, key: string, value: unknown): void {
  ownerPackIn(backpack, runId, key, value);
}

/**
 * The registrar of the nodes of a flow that holds `backpack` (or, given a node's handle, runs inside that node): see
 * {@link NodeRegistrar}. Not exported from the package.
 */
export function nodeRegistrar(backpack: Backpack | BackpackHandle): NodeRegistrar {
  return backpack instanceof Backpack ? ownRegistrar(backpack) : childRegistrarOf(backpack);
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
  readonly #ledger: Ledger;
  /** A ledger the next constructor call wraps instead of making one (snapshots, branches, restores). */
  static #wrapping: Ledger | undefined;

  static {
    wrap = (ledger) => {
      Backpack.#wrapping = ledger;
      return new Backpack();
    };
    ownRegistrar = (backpack) => new NodeRegistrar(backpack.#ledger, undefined);
    ownerPackIn = (backpack, runId, key, value) => backpack.#ledger.pack(OWNER, { runId }, key, value, undefined);
  }

  /**
   * @param initialData keys and values packed by the owner before anything else
   * @param options history limits, strict mode, event sink (see {@link BackpackOptions})
   */
  constructor(initialData?: Record<string, unknown>, options?: BackpackOptions) {
    const wrapping = Backpack.#wrapping;
    Backpack.#wrapping = undefined;
    this.#ledger = wrapping ?? new Ledger(resolveOptions(options), options?.eventStreamer);
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
    return this.#ledger.state.items.size;
  }

  /** Seq of the latest commit (0 when there is none). */
  get headSeq(): number {
    return this.#ledger.history.headSeq;
  }

  /** The options in effect (without the event sink). */
  get options(): Readonly<ResolvedOptions> {
    return this.#ledger.options;
  }

  /**
   * Stores a frozen copy of `value` under `key` and records a `pack` commit. With `nodeId` (a registered node), the
   * write runs as that node: provenance is its registered identity and its permissions and the item's rules are
   * checked (a denied write always throws AccessDeniedError). Throws BackpackError for a key with an empty segment,
   * or a function, symbol or other non-data value, naming the key and where in the value.
   */
  pack(key: string, value: unknown, options?: PackOptions): void {
    this.#ledger.pack(this.#actorFrom(options), undefined, key, value, options);
  }

  /**
   * The value under `key`, or undefined when it is missing or (graceful mode) the node may not read it. A denied
   * read is recorded and emitted; in strict mode it throws AccessDeniedError. Records an `unpack` commit.
   */
  unpack<V = unknown>(key: string, nodeId?: string): V | undefined {
    return this.#ledger.unpack(this.#as(nodeId), undefined, key, false) as V | undefined;
  }

  /**
   * The value under `key`. Throws KeyNotFoundError when it is missing (or an item rule hides it from the node) and
   * AccessDeniedError when the node's rules refuse the key, whether or not it exists.
   */
  unpackRequired<V = unknown>(key: string, nodeId?: string): V {
    return this.#ledger.unpack(this.#as(nodeId), undefined, key, true) as V;
  }

  /** The value under `key` without a commit or event (as `nodeId`, only if it may read it). */
  peek<V = unknown>(key: string, nodeId?: string): V | undefined {
    return this.#ledger.peek(this.#as(nodeId), key) as V | undefined;
  }

  /** True when `key` is in the active state (as `nodeId`: and it may read it). */
  has(key: string, nodeId?: string): boolean {
    return this.#ledger.readable(this.#as(nodeId), key) !== undefined;
  }

  /** Keys of the active state, in first-pack order (as `nodeId`: those it may read). */
  keys(nodeId?: string): string[] {
    return this.#ledger.keys(this.#as(nodeId));
  }

  /** The item under `key` with its metadata, or undefined (no commit; as `nodeId`: only if it may read it). */
  getItem(key: string, nodeId?: string): BackpackItem | undefined {
    return this.#ledger.getItem(this.#as(nodeId), key);
  }

  /** Version of the item under `key` (0 when there is none). */
  getVersion(key: string): number {
    return this.#ledger.state.items.get(key)?.version ?? 0;
  }

  /** The active state as a plain object of key to value (as `nodeId`: what it may read). */
  toObject(nodeId?: string): Record<string, unknown> {
    const actor = this.#as(nodeId);
    const { state, guard } = this.#ledger;
    const out: Record<string, unknown> = {};
    for (const [key, item] of state.items) if (guard.mayRead(actor, item)) setOwn(out, key, state.valueOf(item));
    return out;
  }

  /**
   * Removes `key` (a `delete` commit). Returns false, without a commit, when the key is not active; as a node that may
   * write the key but not read it, false either way (the key is removed if it was active).
   */
  delete(key: string, options?: { nodeId?: string }): boolean {
    return this.#ledger.delete(this.#actorFrom(options), undefined, key);
  }

  /** Removes every active item (one `clear` commit); quarantined items stay. A node needs write access to each key. */
  clear(options?: { nodeId?: string }): void {
    this.#ledger.clear(this.#actorFrom(options));
  }

  // ---------------------------------------------------------------- namespaces

  /** Values of the active items whose source namespace matches `pattern` (D5); as `nodeId`, those it may read. */
  unpackByNamespace(pattern: string, nodeId?: string): Record<string, unknown> {
    return this.#ledger.unpackByNamespace(this.#as(nodeId), undefined, pattern);
  }

  /** Active items (with metadata) whose source namespace matches `pattern` (D5); as `nodeId`, those it may read. */
  getItemsByNamespace(pattern: string, nodeId?: string): BackpackItem[] {
    return this.#ledger.getItemsByNamespace(this.#as(nodeId), pattern);
  }

  /** Namespaces that active items come from, sorted. */
  getNamespaces(): string[] {
    return this.#ledger.state.namespaces();
  }

  // ---------------------------------------------------------------- nodes and access control

  /**
   * Registers a node this Backpack serves (flows do this for every node they add): its id, class name, full
   * namespace and access rules (D9). Provenance of everything it does comes from this registration. Full namespaces
   * are unique: another node at a registered namespace is an error naming both. Returns the node's binding, whose
   * `handle` is what the node works through.
   */
  registerNode(node: NodeRegistration): NodeBinding {
    return new NodeBinding(this.#ledger, this.#ledger.registry.register(node));
  }

  /**
   * A handle acting as `identity` (D6): the registered node with that id and namespace, or (when none is registered
   * there) a new registration without access rules. Its events carry `eventContext`. O(1): nothing is copied.
   */
  forNode(identity: NodeIdentity, eventContext?: { runId?: string; spanId?: string }): BackpackHandle {
    if (!identity || typeof identity !== 'object') throw new BackpackError('forNode needs an identity { nodeId, nodeName, namespace }');
    // One read of each field: the identity looked up is the one registered.
    const { nodeId, nodeName, namespace } = identity;
    let actor: Actor | undefined;
    for (const a of this.#ledger.registry.withId(nodeId)) {
      if ((a.namespace ?? '') === namespace && a.parent === undefined) actor = a;
    }
    if (actor !== undefined && actor.nodeName !== nodeName) {
      throw new BackpackError(`Node '${nodeId}' is registered as '${actor.nodeName}', not '${String(nodeName)}'`, { nodeId });
    }
    actor ??= this.#ledger.registry.register({ nodeId, nodeName, namespace });
    return new BackpackHandle(this.#ledger, actor, eventContext);
  }

  /** Sets the access rules of the node `nodeId` (registering it without a namespace if it is new), replacing earlier ones. */
  registerPermissions(nodeId: string, permissions: NodePermissions): void {
    const a = this.#ledger.registry.resolve(nodeId);
    this.#ledger.registry.register({ nodeId, nodeName: a.nodeName!, namespace: a.namespace ?? '', permissions }, a.parent);
  }

  /** The access rules registered for `nodeId`, if any. */
  getPermissions(nodeId: string): Readonly<NodePermissions> | undefined {
    return this.#ledger.registry.withId(nodeId)[0]?.permissions;
  }

  /**
   * Keys `node` accessed, distinct, in first-access order, from the retained history: `write` covers pack,
   * delete, quarantine and clear; `read` covers unpack commits (recorded unless `recordReads` is false). `node` is a
   * node id, or `{ nodeId, namespace }` when several nodes have that id (see {@link NodeRef}).
   */
  getAccessLog(node: NodeRef, type: 'read' | 'write'): string[] {
    const isNode = this.#nodeMatcher(node);
    const keys = new Set<string>();
    for (const c of this.#ledger.history.commitsSince(0)) {
      if (!isNode(c.actor)) continue;
      if (type === 'read' ? c.action === 'unpack' && c.flags & FOUND : c.action !== 'unpack') {
        if (c.action === 'clear') for (const item of c.detail as readonly Commit[]) keys.add(item.key);
        else keys.add(c.key);
      }
    }
    return [...keys];
  }

  /** Recorded access denials (the newest maxHistorySize), optionally of one node; with the full reasons. */
  getAccessDenials(nodeId?: string): AccessDenial[] {
    return this.#ledger.guard.denials(nodeId);
  }

  // ---------------------------------------------------------------- quarantine

  /**
   * Moves `key` out of the active state into quarantine (a `quarantine` commit, D10): unpack, namespace queries and
   * snapshots' active state no longer see it; {@link getQuarantined} lists it. Returns false when the key is not active
   * (as a node that may not read the key, false either way).
   */
  quarantine(key: string, options: { reason: string; nodeId?: string }): boolean {
    return this.#ledger.quarantine(this.#actorFrom(options), undefined, key, options);
  }

  /** Quarantined items by key (a copy); as `nodeId`, those it may read. */
  getQuarantined(options?: AsNodeOptions): Map<string, QuarantinedItem> {
    const actor = this.#as(options?.nodeId);
    const { state, guard } = this.#ledger;
    const out = new Map<string, QuarantinedItem>();
    for (const [key, c] of state.quarantined) {
      const { item, reason } = c.quarantined;
      if (!guard.mayRead(actor, item)) continue;
      out.set(key, Object.freeze({ ...state.publicItem(item), quarantine: { reason, nodeId: c.actor.nodeId, timestamp: c.timestamp, seq: c.seq } }));
    }
    return out;
  }

  // ---------------------------------------------------------------- history

  /**
   * Retained commits, oldest first; with `sinceSeq`, only those after it (HistoryPrunedError if some were pruned).
   * As `nodeId`: only commits of items it may read, its own reads that found one, and no previous values.
   */
  getHistory(options?: { sinceSeq?: number } & AsNodeOptions): BackpackCommit[] {
    const h = this.#ledger.history;
    const since = options?.sinceSeq;
    if (since !== undefined) {
      if (!Number.isSafeInteger(since) || since < 0) throw new BackpackError(`sinceSeq must be an integer >= 0, got ${String(since)}`);
      if (since < h.baseSeq) throw new HistoryPrunedError(`Commits after seq ${since}`, `the oldest retained commit is seq ${h.baseSeq + 1}`);
    }
    const commits = h.commitsSince(since ?? 0);
    const actor = this.#as(options?.nodeId);
    if (actor === OWNER) return commits.map(toPublicCommit);
    const out: BackpackCommit[] = [];
    for (const c of commits) if (this.#ledger.guard.commitVisible(actor, c)) out.push(Object.freeze({ ...toPublicCommit(c), previousValue: undefined }));
    return out;
  }

  /** The state after every commit with timestamp <= `timestamp`, as a new Backpack (as `nodeId`: what it may read). */
  getSnapshot(timestamp: number, options?: AsNodeOptions): Backpack {
    if (typeof timestamp !== 'number' || Number.isNaN(timestamp)) throw new BackpackError(`getSnapshot needs a timestamp in ms, got ${String(timestamp)}`);
    return wrap(this.#ledger.snapshotAt(this.#ledger.history.seqAtTimestamp(timestamp), this.#as(options?.nodeId)));
  }

  /** The state right after commit `commitId`, as a new Backpack (as `nodeId`: only what it may read). */
  getSnapshotAtCommit(commitId: string, options?: AsNodeOptions): Backpack {
    return wrap(this.#ledger.snapshotAt(this.#ledger.history.seqOfCommit(commitId), this.#as(options?.nodeId)));
  }

  /**
   * The state just before the first commit by `node` (a node id, or `{ nodeId, namespace }`: see {@link NodeRef}), as
   * a new Backpack (as `options.nodeId`: only what it may read).
   */
  getSnapshotBeforeNode(node: NodeRef, options?: AsNodeOptions): Backpack {
    const isNode = this.#nodeMatcher(node);
    const nodeId = typeof node === 'string' ? node : node.nodeId;
    return wrap(this.#ledger.snapshotAt(this.#ledger.history.seqBeforeNode(nodeId, isNode), this.#as(options?.nodeId)));
  }

  /**
   * A new Backpack branched at commit `commitId`: its state is the state after that commit, its history the retained
   * commits up to it, and it keeps this Backpack's options, event sink and registered nodes, so a flow can run on.
   */
  replayFromCommit(commitId: string): Backpack {
    return wrap(this.#ledger.branchAt(this.#ledger.history.seqOfCommit(commitId)));
  }

  /** Keys added, modified and deleted from `before` to `after` (as `nodeId`: keys it may read in this Backpack). */
  diff(before: Backpack, after: Backpack, options?: AsNodeOptions): BackpackDiff {
    const actor = this.#as(options?.nodeId);
    if (actor === OWNER) return diffBackpacks(before, after);
    const guard = this.#ledger.guard;
    const view = (b: Backpack): ItemSource => ({
      keys: () => b.keys().filter((k) => guard.keyVisible(actor, k, b.#ledger.state.items.get(k))),
      getItem: (k) => (guard.keyVisible(actor, k, b.#ledger.state.items.get(k)) ? withoutRule(b.getItem(k)) : undefined),
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
   * As `nodeId`: the JSON of the state that node may read, without history or registrations (history would show what
   * it may not read).
   */
  toJSON(options?: AsNodeOptions): BackpackJSON {
    const actor = this.#as(options?.nodeId);
    const l = actor === OWNER ? this.#ledger : this.#ledger.snapshotAt(this.#ledger.history.headSeq, actor);
    if (actor !== OWNER) l.registry = new NodeRegistry();
    return serializeBackpack({ lineage: l.lineage, options: l.options, history: l.history, large: l.state.large, nodes: l.registry.values(), denials: actor === OWNER ? l.guard.denials() : [] });
  }

  /**
   * Restores what {@link toJSON} produced. Validates the input and throws BackpackError naming the JSON path of the
   * first problem. The event sink is not serialized: pass it here.
   */
  static fromJSON(json: unknown, options?: { eventStreamer?: BackpackEventSink }): Backpack {
    const parts = parseBackpackJSON(json);
    const l = new Ledger(resolveOptions(parts.options), options?.eventStreamer);
    l.lineage = parts.lineage;
    const actors: Actor[] = [];
    for (const { registration, parent } of parts.nodes) actors.push(l.registry.register(registration, parent === undefined ? undefined : actors[parent]));
    l.guard.restore(parts.denials);
    l.history = l.newHistory(parts.base, parts.baseSeq, parts.baseTimestamp, parts.prunedNodes, parts.lineages);
    l.state.reset({ items: new Map(parts.base.items), quarantined: new Map(parts.base.quarantined) });
    for (const c of parts.commits) l.apply(c);
    for (const [c, value] of parts.large) l.state.setLarge(c, value);
    return wrap(l);
  }

  // ---------------------------------------------------------------- state form (durable runs)

  /**
   * The state-only form (no history): active and quarantined items with values through the value codec and their
   * provenance. With `keys`, only those keys; as `nodeId`, only items it may read. Durable runs checkpoint this form.
   */
  exportState(keys?: Iterable<string>, options?: AsNodeOptions): BackpackState {
    const actor = this.#as(options?.nodeId);
    const { state, guard } = this.#ledger;
    const readable = actor === OWNER ? undefined : (item: Commit) => guard.mayRead(actor, item);
    return exportState({ items: state.items, quarantined: state.quarantined, valueOf: (item) => state.valueOf(item), readable }, keys);
  }

  /**
   * {@link exportState} of the owner's view with the values as stored instead of encoded: the frozen values the
   * Backpack holds (shared with it: never modify them; a value holding typed arrays is its stored copy too), for a
   * caller that compares values by identity from boundary to boundary (durable runs find what changed this way).
   */
  exportStoredState(keys?: Iterable<string>): StoredState {
    const { state } = this.#ledger;
    return exportStoredState({ items: state.items, quarantined: state.quarantined, valueOf: (item) => state.valueOf(item) }, keys);
  }

  /**
   * Replaces the whole state with `state` (from {@link exportState}), keeping each item's provenance, version and
   * timestamp. History restarts with that state as its base; registered nodes and options stay. Throws BackpackError
   * naming the JSON path of the first problem, before anything changes.
   */
  importState(state: unknown): void {
    const l = this.#ledger;
    // Numbered after every commit before it, one number left out: a reader that asks what changed since a commit of
    // the replaced history (changedKeysSince) is told to compare every key, never handed the new history's commits
    // as if they followed its own.
    const imported = importState(state, l.lineage, l.options.maxValueBytes, l.history.headSeq + 1);
    l.history = l.newHistory(imported.base, imported.seq, imported.timestamp);
    l.state.reset({ items: new Map(imported.base.items), quarantined: new Map(imported.base.quarantined) }, imported.large);
  }

  /**
   * From now on, a pack of an array that starts with the elements stored under its key (the same values, in place:
   * a list a node grew) records that it does, so that a reader comparing the two stored values by identity skips
   * those elements. The durable runtime turns it on for its step deltas (a boundary then costs what was appended,
   * not the list's length), and it stays on for this Backpack. Such a pack takes the kept elements in one tight pass
   * (a comparison per element, about 1.5x a plain pack's copy of them) and their size from the stored array's
   * record; off by default.
   */
  recordGrowth(): void {
    this.#ledger.recordGrowth = true;
  }

  /**
   * Keys whose item changed (packed, deleted, quarantined or cleared) in the commits after `seq`, in the order of
   * their first such commit; undefined when some of those commits were pruned, so the caller must compare every key.
   * Keys that left the active state in those commits (deleted, quarantined or cleared) are also added to `left`.
   */
  changedKeysSince(seq: number, left?: Set<string>): string[] | undefined {
    const h = this.#ledger.history;
    if (seq < h.baseSeq) return undefined;
    const keys = new Set<string>();
    for (const c of h.commitsSince(seq)) {
      if (c.action === 'clear') {
        for (const item of c.detail as readonly Commit[]) {
          keys.add(item.key);
          left?.add(item.key);
        }
      } else if (c.action !== 'unpack') {
        keys.add(c.key);
        if (c.action !== 'pack') left?.add(c.key);
      }
    }
    return [...keys];
  }

  // ---------------------------------------------------------------- actors

  /** The actor an owner's call names: the owner, or the registered node (claims must match its registration). */
  #actorFrom(options: { nodeId?: unknown; nodeName?: unknown; namespace?: unknown } | undefined): Actor {
    if (options !== undefined && (typeof options !== 'object' || options === null)) throw new BackpackError('Options must be an object');
    if (!options || (options.nodeId === undefined && options.nodeName === undefined && options.namespace === undefined)) return OWNER;
    if (options.nodeId === undefined) throw new BackpackError("Options 'nodeName' and 'namespace' describe a node: pass its 'nodeId' (a registered node)");
    return this.#ledger.registry.resolve(options.nodeId, options);
  }

  /**
   * Which actors are the node `node` names. Ids are unique only within a flow, and node code can register nodes
   * inside its own under any id, so a bare id names a node only while one namespace has it (among registered nodes
   * and retained commits); otherwise a BackpackError asks for `{ nodeId, namespace }`.
   */
  #nodeMatcher(node: NodeRef): (actor: Actor) => boolean {
    const nodeId = typeof node === 'string' ? node : typeof node === 'object' && node !== null ? node.nodeId : undefined;
    if (typeof nodeId !== 'string' || nodeId === '') throw new BackpackError(`A node is named by its id or { nodeId, namespace }, got ${String(node)}`);
    if (typeof node !== 'string') {
      if (typeof node.namespace !== 'string') throw new BackpackError(`Node '${nodeId}': namespace must be a string ('' for a node without one)`, { nodeId });
      const namespace = node.namespace === '' ? undefined : node.namespace;
      return (a) => a.nodeId === nodeId && a.namespace === namespace;
    }
    const namespaces = new Set<string>();
    for (const a of this.#ledger.registry.withId(nodeId)) namespaces.add(a.namespace ?? '');
    for (const c of this.#ledger.history.commitsSince(0)) if (c.actor.nodeId === nodeId) namespaces.add(c.actor.namespace ?? '');
    if (namespaces.size > 1) {
      throw new BackpackError(`Node id '${nodeId}' names ${namespaces.size} nodes (namespaces '${[...namespaces].join("', '")}'): name it as { nodeId, namespace }`, { nodeId });
    }
    return (a) => a.nodeId === nodeId;
  }

  #as(nodeId: string | undefined): Actor {
    return nodeId === undefined ? OWNER : this.#ledger.registry.resolve(nodeId);
  }
}

/** `item` without its item rule: what a node is shown of an item (D9: never who else a rule lets read or write). */
function withoutRule(item: BackpackItem | undefined): BackpackItem | undefined {
  if (item?.accessControl === undefined) return item;
  const { accessControl: _rule, ...rest } = item;
  return Object.freeze(rest);
}

/**
 * A node as the owner's queries name it: its id, or `{ nodeId, namespace }` (its full namespace, '' for none) when
 * several nodes have that id (ids are unique only within a flow; full namespaces are unique in the Backpack).
 */
export type NodeRef = string | { readonly nodeId: string; readonly namespace: string };

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(Backpack);
