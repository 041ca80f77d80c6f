/**
 * A Backpack seen as one node (DESIGN D6): every operation runs with the handle's registered identity, so provenance
 * and access checks use it and its events carry the handle's run and span. The Backpack behind a handle is held in
 * a true private field: nothing reachable from a handle returns the owner's view or a value the node may not read.
 * Nothing is monkey-patched, so any number of handles can be used concurrently with correct attribution.
 */
import type { Actor, OpContext } from './actor.js';
import { BackpackError } from './errors.js';
import type { ReservedNodes } from './registry.js';
import type { BackpackItem, HandlePackOptions, NodeIdentity, NodeRegistration } from './types.js';
import { hardenClass } from '../harden.js';

/** The operations a Backpack performs for its handles (internal: created by the Backpack, held privately). */
export interface HandleOps {
  pack(actor: Actor, ctx: OpContext, key: string, value: unknown, options: HandlePackOptions | undefined): void;
  unpack(actor: Actor, ctx: OpContext, key: string, required: boolean): unknown;
  peek(actor: Actor, key: string): unknown;
  getItem(actor: Actor, key: string): BackpackItem | undefined;
  /** The item rule of `key` when `actor` may read it (not shown to nodes by getItem: see LiveState.publicItem). */
  itemRule(actor: Actor, key: string): BackpackItem['accessControl'];
  keys(actor: Actor): string[];
  unpackByNamespace(actor: Actor, ctx: OpContext, pattern: string): Record<string, unknown>;
  getItemsByNamespace(actor: Actor, pattern: string): BackpackItem[];
  delete(actor: Actor, ctx: OpContext, key: string): boolean;
  quarantine(actor: Actor, ctx: OpContext, key: string, options: { reason: string }): boolean;
  register(node: NodeRegistration, parent: Actor | undefined): Actor;
  reserve(nodes: ReservedNodes, id: string, nodeName: string, position: number): boolean;
  adopt(nodes: ReservedNodes, id: string, nodeName: string): Actor;
}

type Spoofable = { nodeId?: unknown; nodeName?: unknown; namespace?: unknown } | undefined | null;

/**
 * What registering a node gives its flow: the node's handle, and handles for its executions (whose events carry
 * the execution's run and span). Flows keep this to themselves and hand nodes only handles.
 */
export class NodeBinding {
  readonly #ops: HandleOps;
  readonly #actor: Actor;
  /** The run of the handle that registered this node with `registerChild`, if that handle had one. */
  readonly #runId: string | undefined;
  /** The span of the handle that registered this node with `registerChild`, if that handle had one. */
  readonly #spanId: string | undefined;
  /**
   * The handle that registered this node with `registerChild`, if it was: every handle of this binding closes when
   * that one does (a node's execution ends), so a timer or a promise the node left running cannot act through its
   * children in a later step either.
   */
  readonly #within: BackpackHandle | undefined;
  /** Made when first asked for: most nodes of a large flow never are (they run through per-execution handles). */
  #handle: BackpackHandle | undefined;

  /** @internal Created by `Backpack.registerNode` and `BackpackHandle.registerChild`. */
  constructor(ops: HandleOps, actor: Actor, runId?: string, within?: BackpackHandle, spanId?: string) {
    this.#ops = ops;
    this.#actor = actor;
    this.#runId = runId;
    this.#within = within;
    this.#spanId = spanId;
  }

  /** The node's handle outside any execution (one per binding); closed with the handle that registered the node, if any. */
  get handle(): BackpackHandle {
    return (this.#handle ??= new BackpackHandle(this.#ops, this.#actor, this.#runId === undefined ? undefined : { runId: this.#runId, spanId: this.#spanId }, this.#within));
  }

  /**
   * A handle of the same node whose events carry `eventContext` (one per execution). A child registered through a
   * handle of a run (`registerChild` during an execution) stays in that run: its events carry that run's id, and
   * any other `runId` is refused, so node code cannot file its children's events under another run; likewise a child
   * registered through a handle of a span (a node's execution) files its events under that span, and any other
   * `spanId` is refused, so node code cannot file them under another node's span.
   */
  withContext(eventContext: { runId?: string; spanId?: string }): BackpackHandle {
    // One read of each field (a getter could answer this run to the check and another to the handle); only strings,
    // as the library's own contexts hold: they go into events that other nodes read.
    const { runId, spanId } = eventContext ?? {};
    for (const [name, id] of [['runId', runId], ['spanId', spanId]] as const) {
      if (id !== undefined && typeof id !== 'string') {
        throw new BackpackError(`Node '${this.#actor.nodeId}': the ${name} of a handle's events must be a string, got ${id === null ? 'null' : typeof id}`, { nodeId: this.#actor.nodeId });
      }
    }
    if (this.#runId === undefined) return new BackpackHandle(this.#ops, this.#actor, { runId, spanId }, this.#within);
    if (runId !== undefined && runId !== this.#runId) {
      throw new BackpackError(
        `Node '${this.#actor.nodeId}' was registered inside run '${this.#runId}': its events cannot carry run '${String(runId)}'`,
        { nodeId: this.#actor.nodeId },
      );
    }
    if (this.#spanId !== undefined && spanId !== undefined && spanId !== this.#spanId) {
      throw new BackpackError(
        `Node '${this.#actor.nodeId}' was registered inside span '${this.#spanId}' (the execution that registered it): its events cannot carry span '${spanId}'`,
        { nodeId: this.#actor.nodeId },
      );
    }
    return new BackpackHandle(this.#ops, this.#actor, { runId: this.#runId, spanId: this.#spanId ?? spanId }, this.#within);
  }
}

declare const registeredNode: unique symbol;

/** A node as a {@link NodeRegistrar} registered it: opaque to everything but its registrar (it is the node's identity). */
export interface RegisteredNode {
  readonly [registeredNode]: true;
}

/**
 * The class name `registered` was registered under (read once, when its flow added it): what its events name, whatever
 * the class's `name` says later (node code can redefine it). Internal: for the library's own events.
 */
export function registeredNodeName(registered: RegisteredNode): string {
  // A RegisteredNode is the registrar's Actor under an opaque type (frozen: nothing can change it).
  return (registered as unknown as Actor).nodeName!;
}

/**
 * Registers the nodes of one flow and makes their handles (internal: flows get one with {@link nodeRegistrar} and
 * keep it, and each node's {@link RegisteredNode}, to themselves). One per flow, where a {@link NodeBinding} per node
 * would cost a flow of a million nodes a million objects. Registration is exactly `registerNode`'s (or
 * `registerChild`'s, for a flow that runs inside a node), and a handle made here is the one such a binding makes.
 */
export class NodeRegistrar {
  readonly #ops: HandleOps;
  readonly #parent: Actor | undefined;

  /** @internal Made by {@link nodeRegistrar}. */
  constructor(ops: HandleOps, parent: Actor | undefined) {
    this.#ops = ops;
    this.#parent = parent;
  }

  /** Registers `node` (inside the registrar's node, if any): see `Backpack.registerNode` and `BackpackHandle.registerChild`. */
  register(node: NodeRegistration): RegisteredNode {
    return this.#ops.register(node, this.#parent) as unknown as RegisteredNode;
  }

  /**
   * The reservations of a flow's nodes that are built on first use: they sit under `namespace`, inside the
   * registrar's node if any; the flow's own functions answer where each is and make its node (see {@link ReservedNodes}).
   */
  reservations(namespace: string, flow: Pick<ReservedNodes, 'position' | 'idAt'> & { actor(id: string): RegisteredNode }): ReservedNodes {
    // A RegisteredNode is the registrar's Actor under an opaque type: the flow's function is the one called.
    return { namespace, parent: this.#parent, position: flow.position, idAt: flow.idAt, actor: flow.actor as unknown as ReservedNodes['actor'] };
  }

  /**
   * Registers node `id` of `nodes` (class name `nodeName`, at `position` among its flow's nodes) before it is built,
   * with the checks and errors of {@link register}; false when it is registered there already (see NodeRegistry.reserve).
   */
  reserve(nodes: ReservedNodes, id: string, nodeName: string, position: number): boolean {
    return this.#ops.reserve(nodes, id, nodeName, position);
  }

  /** The registration of reserved node `id`, when its flow builds it (once). */
  adopt(nodes: ReservedNodes, id: string, nodeName: string): RegisteredNode {
    return this.#ops.adopt(nodes, id, nodeName) as unknown as RegisteredNode;
  }

  /** A handle acting as `node`, which this registrar registered; its events carry `eventContext`. */
  handle(node: RegisteredNode, eventContext?: { runId?: string; spanId?: string }): BackpackHandle {
    return new BackpackHandle(this.#ops, node as unknown as Actor, eventContext);
  }
}

let childRegistrar: (handle: BackpackHandle) => NodeRegistrar;
let closer: (handle: BackpackHandle) => void;
let actorOf: (handle: BackpackHandle) => Actor;
let ruleOf: (handle: BackpackHandle, key: string) => BackpackItem['accessControl'];

/**
 * The registrar of the nodes of a flow that runs inside `handle`'s node (see {@link BackpackHandle.registerChild}).
 * Not exported from the package: node code registers children with `registerChild`, and never holds an identity.
 */
export function childRegistrarOf(handle: BackpackHandle): NodeRegistrar {
  return childRegistrar(handle);
}

/** A Backpack bound to a registered node. Get one from `Backpack.forNode` or `Backpack.registerNode`. */
export class BackpackHandle {
  readonly #ops: HandleOps;
  readonly #actor: Actor;
  readonly #ctx: OpContext;
  readonly #identity: Readonly<NodeIdentity>;
  /** Cleared by {@link closeHandle} when the node execution it was made for ends. */
  #open = true;
  /** The handle that registered this handle's node with `registerChild`, if it was: this one is closed when that one is. */
  readonly #within: BackpackHandle | undefined;

  static {
    childRegistrar = (handle) => new NodeRegistrar(handle.#ops, handle.#actor);
    closer = (handle) => {
      handle.#open = false;
    };
    actorOf = (handle) => handle.#actor;
    ruleOf = (handle, key) => handle.#ops.itemRule(handle.#actor, key);
  }

  /** The closed handle that closes this one: itself, or the handle that registered its node (and so on up); undefined while open. */
  #closedBy(): BackpackHandle | undefined {
    if (!this.#open) return this;
    const within = this.#within;
    return within === undefined ? undefined : within.#closedBy();
  }

  /** Throws once the handle is closed: a timer or promise the node left running must not act in a later step. */
  #live(): void {
    const closed = this.#closedBy();
    if (closed === undefined) return;
    const { nodeId } = this.#identity;
    const why = closed === this ? 'its execution ended' : `the execution of node '${closed.#identity.nodeId}' that registered it ended`;
    throw new BackpackError(
      `Node '${nodeId}': its backpack handle is closed, ${why} (a timer or a promise left running after prep, exec or post returned); use the handle passed to the running execution`,
      { nodeId },
    );
  }

  /** @internal Handles are made by the Backpack; a handle built over anything else reaches nothing. */
  constructor(ops: HandleOps, actor: Actor, eventContext: OpContext, within?: BackpackHandle) {
    this.#ops = ops;
    this.#actor = actor;
    this.#within = within;
    const { runId, spanId } = eventContext ?? {};
    this.#ctx = runId !== undefined || spanId !== undefined ? { runId, spanId } : undefined;
    this.#identity = Object.freeze({ nodeId: actor.nodeId!, nodeName: actor.nodeName!, namespace: actor.namespace ?? '' });
  }

  /** The node this handle acts as. */
  get identity(): Readonly<NodeIdentity> {
    return this.#identity;
  }

  #noSpoofing(operation: string, key: string, options: Spoofable): void {
    if (options === undefined || options === null) return;
    for (const field of ['nodeId', 'nodeName', 'namespace'] as const) {
      const given = options[field];
      if (given !== undefined && given !== this.#identity[field]) {
        throw new BackpackError(
          `Node '${this.#identity.nodeId}' cannot ${operation} '${key}' as ${field} '${String(given)}': a handle always acts as its own node (${field} '${this.#identity[field]}')`,
          { nodeId: this.#identity.nodeId },
        );
      }
    }
  }

  /** Packs `value` under `key` as this node. */
  pack(key: string, value: unknown, options?: HandlePackOptions): void {
    this.#live();
    this.#noSpoofing('pack', key, options as Spoofable);
    this.#ops.pack(this.#actor, this.#ctx, key, value, options);
  }

  /** The value under `key` if this node may read it (see `Backpack.unpack`). */
  unpack<V = unknown>(key: string): V | undefined {
    this.#live();
    return this.#ops.unpack(this.#actor, this.#ctx, key, false) as V | undefined;
  }

  /** The value under `key`; throws KeyNotFoundError or AccessDeniedError (see `Backpack.unpackRequired`). */
  unpackRequired<V = unknown>(key: string): V {
    this.#live();
    return this.#ops.unpack(this.#actor, this.#ctx, key, true) as V;
  }

  /** The value under `key` if this node may read it, without a commit, log entry or event. */
  peek<V = unknown>(key: string): V | undefined {
    this.#live();
    return this.#ops.peek(this.#actor, key) as V | undefined;
  }

  /** True when `key` is active and this node may read it. */
  has(key: string): boolean {
    this.#live();
    return this.#ops.getItem(this.#actor, key) !== undefined;
  }

  /** Active keys this node may read, in first-pack order. */
  keys(): string[] {
    this.#live();
    return this.#ops.keys(this.#actor);
  }

  /** The item under `key` with metadata, if this node may read it (no commit). */
  getItem(key: string): BackpackItem | undefined {
    this.#live();
    return this.#ops.getItem(this.#actor, key);
  }

  /** Values of readable items whose source namespace matches `pattern` (D5). */
  unpackByNamespace(pattern: string): Record<string, unknown> {
    this.#live();
    return this.#ops.unpackByNamespace(this.#actor, this.#ctx, pattern);
  }

  /** Readable items (with metadata) whose source namespace matches `pattern` (D5). */
  getItemsByNamespace(pattern: string): BackpackItem[] {
    this.#live();
    return this.#ops.getItemsByNamespace(this.#actor, pattern);
  }

  /** Deletes `key` as this node; false when it is not active, or this node may not read it (whether or not it existed). */
  delete(key: string, options?: { nodeId?: string }): boolean {
    this.#live();
    this.#noSpoofing('delete', key, options);
    return this.#ops.delete(this.#actor, this.#ctx, key);
  }

  /** Quarantines `key` as this node (D10); false when it is not active, or this node may not read it (whether or not it existed). */
  quarantine(key: string, options: { reason: string; nodeId?: string }): boolean {
    this.#live();
    this.#noSpoofing('quarantine', key, options);
    return this.#ops.quarantine(this.#actor, this.#ctx, key, options);
  }

  /**
   * Registers a node that runs inside this one (a composite's internal node, a tool's node): its namespace must be
   * under this node's, and this node's rules bound its own. Flows built on this handle call it for their nodes.
   */
  registerChild(node: NodeRegistration): NodeBinding {
    this.#live();
    return new NodeBinding(this.#ops, this.#ops.register(node, this.#actor), this.#ctx?.runId, this, this.#ctx?.spanId);
  }
}

/**
 * Whether `a` and `b` act as the same registered node (one registration: the same identity, the same rules, inside
 * the same node), whatever execution each was made for. Names are not compared: two registrations may share a
 * namespace string (a subflow's node and a node of the flow). Not exported from the package.
 */
export function sameNode(a: BackpackHandle, b: BackpackHandle): boolean {
  return actorOf(a) === actorOf(b);
}

/** Whether `handle` acts as node `registered` (a flow nested on that node has such a handle). Internal. */
export function actsAs(handle: BackpackHandle, registered: RegisteredNode): boolean {
  return actorOf(handle) === (registered as unknown as Actor);
}

/**
 * The item rule (`accessControl`) of `key` when `handle`'s node may read it: for the library's own copies (a route's
 * mappings keep the source item's rule), never shown to node code (D9). Not exported from the package.
 */
export function itemRuleOf(handle: BackpackHandle, key: string): BackpackItem['accessControl'] {
  return ruleOf(handle, key);
}

/**
 * Closes `handle`: every later operation through it throws. Called by the nodes layer when the node execution the
 * handle was made for ends. Not exported from the package.
 */
export function closeHandle(handle: BackpackHandle): void {
  closer(handle);
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(NodeBinding);
hardenClass(NodeRegistrar);
hardenClass(BackpackHandle);
