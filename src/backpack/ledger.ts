/**
 * The engine behind a Backpack: its live state, history, registered nodes and access guard, and the one place where
 * operations become commits. Every operation takes the acting node (an Actor from the registry, or OWNER); handles
 * call these directly (a Ledger is the `HandleOps` every handle of its Backpack holds privately), the Backpack's
 * owner API resolves its `nodeId` options to actors first. Not exported from the package.
 */
import { randomBytes } from 'node:crypto';
import { checkItemAccessControl } from './access.js';
import { OWNER, type Actor, type OpContext } from './actor.js';
import { summarizeValue } from './codec.js';
import { AccessDeniedError, BackpackError, KeyNotFoundError } from './errors.js';
import { AccessGuard, type EmitAs } from './guard.js';
import type { HandleOps } from './handle.js';
import { applyCommit, Commit, CommitInit, COPY_ON_READ, FOUND, History, LARGE, PREV_COPY_ON_READ, storeValue, type State } from './history.js';
import { LiveState } from './live-state.js';
import { checkTags, type ResolvedOptions } from './options.js';
import { checkSegments, compileNamespacePattern } from './patterns.js';
import { NodeRegistry, type ReservedNodes } from './registry.js';
import type { BackpackEvent, BackpackEventSink, BackpackItem, HandlePackOptions, NodeRegistration } from './types.js';
import { prepareValue, setOwn } from './values.js';
import { hardenClass } from '../harden.js';

const keyError = (message: string): BackpackError => new BackpackError(message);

function checkKey(key: unknown): asserts key is string {
  checkSegments(key, 'Backpack key', keyError);
}

/** The state engine of one Backpack. */
export class Ledger implements HandleOps {
  readonly state = new LiveState();
  /** Reused for every commit (operations are synchronous; the Commit copies what it keeps). */
  readonly #init = new CommitInit('unpack', '');
  readonly guard: AccessGuard;
  registry = new NodeRegistry();
  history: History;
  /**
   * This Backpack's part of its commit ids. randomBytes, not randomUUID: Node's randomUUID draws from a cache that a
   * startup snapshot saves, so processes restored from one would repeat it.
   */
  lineage = randomBytes(4).toString('hex');
  /** Whether packs record arrays grown from the stored value (see Backpack.recordGrowth). */
  recordGrowth = false;

  constructor(
    readonly options: Readonly<ResolvedOptions>,
    readonly sink: BackpackEventSink | undefined,
  ) {
    this.guard = new AccessGuard(Math.max(options.maxHistorySize, 1), sink && this.#emit);
    this.history = this.newHistory({ items: new Map(), quarantined: new Map() }, 0, Number.NEGATIVE_INFINITY);
  }

  /** A history for this ledger starting from `state` after commit `seq`. */
  newHistory(state: State, seq: number, timestamp: number, prunedNodes: Iterable<string> = [], lineages: Iterable<string> = []): History {
    return new History(this.options, { state, seq, timestamp, prunedNodes, lineages: [...lineages, this.lineage] });
  }

  // ---------------------------------------------------------------- writes

  pack(actor: Actor, ctx: OpContext, key: string, value: unknown, options: HandlePackOptions | undefined): void {
    // An active key was checked when it was first packed.
    if (!this.state.items.has(key)) checkKey(key);
    if (actor !== OWNER) this.checkWrite(actor, ctx, key);
    // Each option is read once, and what is checked is what is kept (checkTags and the zod parse copy).
    const tags = checkTags(key, options?.tags);
    const rules = options?.accessControl;
    const acl = rules === undefined ? undefined : checkItemAccessControl(key, rules);
    // Copying the value comes first: nothing after it runs outside the library before the commit is built.
    const prev = this.state.items.get(key);
    const prepared = prepareValue(key, value, this.recordGrowth && prev !== undefined ? this.state.storedValueOf(prev) : undefined);
    const init = this.#init.reset('pack', key);
    const real = storeValue(init, key, prepared, this.options.maxValueBytes);
    if (prev && prev.flags & COPY_ON_READ) init.flags |= PREV_COPY_ON_READ;
    init.previousValue = prev?.value;
    init.version = (prev?.version ?? 0) + 1;
    init.tags = tags;
    init.acl = acl;
    const commit = this.#commit(actor, init);
    if (commit.flags & LARGE) this.state.setLarge(commit, real);
    if (this.sink) {
      const payload: Record<string, unknown> = { key, version: commit.version, valueSummary: summarizeValue(real) };
      if (tags.length > 0) payload.tags = tags;
      this.#emit('backpack.packed', payload, actor, ctx);
    }
  }

  delete(actor: Actor, ctx: OpContext, key: string): boolean {
    checkKey(key);
    if (actor !== OWNER) this.checkWrite(actor, ctx, key);
    const item = this.state.items.get(key);
    if (item === undefined) return false;
    const hidden = this.#hidden(actor, item);
    const init = this.#init.reset('delete', key);
    init.previousValue = item.value;
    init.flags = item.flags & COPY_ON_READ ? PREV_COPY_ON_READ : 0;
    this.#commit(actor, init);
    return !hidden;
  }

  /**
   * True when `actor` may not read `item`: then deleting or quarantining it answers as for a missing key (false), so
   * that a node allowed to write a key but not to read it never learns whether it exists (D9).
   */
  #hidden(actor: Actor, item: Commit): boolean {
    return actor !== OWNER && !this.guard.mayRead(actor, item);
  }

  quarantine(actor: Actor, ctx: OpContext, key: string, options: { reason: string }): boolean {
    checkKey(key);
    const reason = options?.reason;
    if (typeof reason !== 'string' || reason.trim() === '') {
      throw new BackpackError(`quarantine('${key}') needs a reason (a non-empty string)`, { key });
    }
    if (actor !== OWNER) this.checkWrite(actor, ctx, key);
    const item = this.state.items.get(key);
    if (item === undefined) return false;
    const hidden = this.#hidden(actor, item);
    const replaced = this.state.quarantined.get(key);
    if (replaced && replaced.quarantined.item.flags & LARGE) this.state.dropLarge(replaced.quarantined.item);
    const init = this.#init.reset('quarantine', key);
    init.flags = item.flags & COPY_ON_READ ? PREV_COPY_ON_READ : 0;
    init.detail = { item, reason };
    this.#commit(actor, init);
    // An item the actor may not read: its event is marked `hidden`, and the actor's event view drops it, so that what
    // the node sees (the answer false and no event) is the same whether the key existed or not (D9).
    if (this.sink) this.#emit('backpack.quarantined', hidden ? { key, reason, hidden: true } : { key, reason }, actor, ctx);
    return !hidden;
  }

  clear(actor: Actor): void {
    if (actor !== OWNER) for (const key of this.state.items.keys()) this.checkWrite(actor, undefined, key);
    if (this.state.items.size === 0) return;
    const init = this.#init.reset('clear', '*');
    init.detail = Object.freeze([...this.state.items.values()]);
    this.#commit(actor, init);
  }

  /** Throws AccessDeniedError (after recording the denial) when `actor` may not write `key`. */
  checkWrite(actor: Actor, ctx: OpContext, key: string): void {
    const refused = this.guard.checkWrite(actor, ctx, key, this.state.items.get(key));
    if (refused !== undefined) throw new AccessDeniedError(key, actor.nodeId!, 'write', refused);
  }

  /** Stamps `init` (seq, lineage, time, actor), builds the commit, applies it to the live state and appends it. */
  #commit(actor: Actor, init: CommitInit): Commit {
    const h = this.history;
    init.seq = h.headSeq + 1;
    init.lineage = this.lineage;
    init.timestamp = h.now();
    init.actor = actor;
    const commit = new Commit(init);
    this.apply(commit);
    return commit;
  }

  /** Applies a commit (new, restored or branched) to the live state and appends it to history. */
  apply(commit: Commit): void {
    applyCommit(this.state, commit, this.state.listener);
    this.history.append(commit, this.state);
  }

  // ---------------------------------------------------------------- reads

  unpack(actor: Actor, ctx: OpContext, key: string, required: boolean): unknown {
    const item = this.state.items.get(key);
    if (item === undefined) checkKey(key);
    const refused = actor === OWNER ? undefined : this.guard.checkRead(actor, ctx, key, item);
    if (refused !== undefined) {
      // To the node, exactly what a read of a missing key gets (D9).
      if (refused.asMissing) {
        if (required) throw new KeyNotFoundError(key, actor.nodeId);
        return undefined;
      }
      if (required || this.options.strictMode) throw new AccessDeniedError(key, actor.nodeId!, 'read', refused.rule);
      return undefined;
    }
    this.#recordRead(actor, ctx, key, item);
    if (item === undefined) {
      if (required) throw new KeyNotFoundError(key, actor.nodeId);
      return undefined;
    }
    return this.state.valueOf(item);
  }

  peek(actor: Actor, key: string): unknown {
    const item = this.readable(actor, key);
    return item === undefined ? undefined : this.state.valueOf(item);
  }

  getItem(actor: Actor, key: string): BackpackItem | undefined {
    const item = this.readable(actor, key);
    return item === undefined ? undefined : this.state.publicItem(item, actor === OWNER);
  }

  itemRule(actor: Actor, key: string): BackpackItem['accessControl'] {
    return this.readable(actor, key)?.acl;
  }

  keys(actor: Actor): string[] {
    const out: string[] = [];
    for (const [key, item] of this.state.items) if (this.guard.mayRead(actor, item)) out.push(key);
    return out;
  }

  unpackByNamespace(actor: Actor, ctx: OpContext, pattern: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const item of this.#itemsByNamespace(actor, pattern)) {
      this.#recordRead(actor, ctx, item.key, item);
      setOwn(out, item.key, this.state.valueOf(item));
    }
    return out;
  }

  getItemsByNamespace(actor: Actor, pattern: string): BackpackItem[] {
    return this.#itemsByNamespace(actor, pattern).map((item) => this.state.publicItem(item, actor === OWNER));
  }

  register(node: NodeRegistration, parent: Actor): Actor {
    return this.registry.register(node, parent);
  }

  reserve(nodes: ReservedNodes, id: string, nodeName: string, position: number): boolean {
    return this.registry.reserve(nodes, id, nodeName, position);
  }

  adopt(nodes: ReservedNodes, id: string, nodeName: string): Actor {
    return this.registry.adopt(nodes, id, nodeName);
  }

  /** The active item under `key` if `actor` may read it (no commit, no record). */
  readable(actor: Actor, key: string): Commit | undefined {
    const item = this.state.items.get(key);
    return item !== undefined && this.guard.mayRead(actor, item) ? item : undefined;
  }

  /** The `unpack` commit and event of an allowed read. */
  #recordRead(actor: Actor, ctx: OpContext, key: string, item: Commit | undefined): void {
    if (this.options.recordReads) {
      const init = this.#init.reset('unpack', key);
      init.flags = item ? FOUND : 0;
      this.#commit(actor, init);
    }
    if (this.sink) {
      const payload: Record<string, unknown> = { key, found: item !== undefined };
      if (item?.actor.nodeId !== undefined) payload.sourceNodeId = item.actor.nodeId;
      if (item?.actor.namespace !== undefined) payload.sourceNamespace = item.actor.namespace;
      this.#emit('backpack.unpacked', payload, actor, ctx);
    }
  }

  /** Active items matching `pattern` that `actor` may read (denied ones are skipped silently: a query, not a request). */
  #itemsByNamespace(actor: Actor, pattern: string): Commit[] {
    if (typeof pattern !== 'string' || pattern === '') throw new BackpackError(`Namespace patterns are non-empty strings, got ${String(pattern)}`);
    return this.state.inNamespaces(compileNamespacePattern(pattern), (item) => this.guard.mayRead(actor, item));
  }

  // ---------------------------------------------------------------- derived ledgers

  /** A new, empty ledger with these options, the given event sink and these registered nodes. */
  derive(sink: BackpackEventSink | undefined): Ledger {
    const l = new Ledger(this.options, sink);
    l.registry = this.registry;
    return l;
  }

  /** The state after `seq` as a new ledger without history of its own; as a node, holding only what it may read. */
  snapshotAt(seq: number, actor: Actor): Ledger {
    const h = this.history;
    const state = h.stateAt(seq);
    if (actor !== OWNER) {
      for (const [key, item] of state.items) if (!this.guard.mayRead(actor, item)) state.items.delete(key);
      for (const [key, q] of state.quarantined) if (!this.guard.mayRead(actor, q.quarantined.item)) state.quarantined.delete(key);
    }
    const snapshot = this.derive(undefined);
    const timestamp = seq === h.baseSeq ? h.baseTimestamp : h.at(seq).timestamp;
    snapshot.history = snapshot.newHistory({ items: new Map(state.items), quarantined: new Map(state.quarantined) }, seq, timestamp, [], h.lineages);
    snapshot.state.reset(state);
    return snapshot;
  }

  /** A new ledger branched after commit `seq`: the retained history up to it, this sink and registered nodes. */
  branchAt(seq: number): Ledger {
    const h = this.history;
    const branch = this.derive(this.sink);
    branch.history = branch.newHistory(h.stateAt(h.baseSeq), h.baseSeq, h.baseTimestamp, h.prunedNodes, h.lineages);
    branch.state.reset(h.stateAt(h.baseSeq));
    for (let s = h.baseSeq + 1; s <= seq; s++) branch.apply(h.at(s));
    return branch;
  }

  readonly #emit: EmitAs = (type: BackpackEvent['type'], payload, actor, ctx) => {
    const event: BackpackEvent = { type, payload };
    if (actor.nodeId !== undefined) event.nodeId = actor.nodeId;
    if (actor.nodeName !== undefined) event.nodeName = actor.nodeName;
    if (actor.namespace !== undefined) event.namespace = actor.namespace;
    if (ctx?.runId !== undefined) event.runId = ctx.runId;
    if (ctx?.spanId !== undefined) event.spanId = ctx.spanId;
    this.sink!.emit(event);
  };
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(Ledger);
