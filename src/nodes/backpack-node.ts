import type { ZodType } from 'zod';
import type { BackpackHandle, NodePermissions } from '../backpack/index.js';
import { closeHandle, registeredNodeName, type RegisteredNode } from '../backpack/handle.js';
import { newSpanId, StreamEventType, type InterruptInfo, type StreamEventTypeValue } from '../events/index.js';
import { BaseNode, FlowError, FlowSignal, Node, type Attempt, type RunScope } from '../flow/index.js';
import { checkSegments, encodeValue } from '../backpack/index.js';
import { checkAction } from '../flow/actions.js';
import { dataProperty, describeThrown, reachesProxy } from '../flow/errors.js';
import { checkPermissions } from '../backpack/access.js';
import { isRunAbort } from '../flow/node.js';
import { makeScope, runControls } from '../flow/scope.js';
import { answerJsonSchema, checkAnswer, makePause, RedactedAnswer, unlessForged } from './interrupt.js';
import { ContractValidationError, type ContractViolation } from './errors.js';
import { NodeEventView, nodeEvent } from './event-view.js';
import { asBuilder, currentExecution, executionSignal, takeStep, type NodeExecution } from './execution.js';
import { flowOfToken, type FlowToken } from './flow-token.js';
import { builtOn, checkFlowChange, closeDeclaredFlow, flowInside, runHasStarted, Flow, flowStreamer, nodeHandle, stepProblem, type FlowOptions } from './flow.js';
import { maskedForOthers, type MaskedConfig } from './secret-params.js';
import { hardenClass } from '../harden.js';

/**
 * How a BackpackNode is configured: an id, optional namespace segment and retry settings, and any params of its own
 * (these are what a flow exports to JSON).
 */
export interface BackpackNodeConfig {
  /** Unique within its flow. */
  id: string;
  /** Namespace segment; wins over the class's static `namespaceSegment` and the id (DESIGN D4). */
  namespaceSegment?: string;
  /** Total attempts of exec (D1). */
  maxRetries?: number;
  /** Milliseconds between attempts. */
  retryDelayMs?: number;
  /**
   * Access rules of this node; win over the class's (see {@link nodePermissions}). Given to `addNode`, they are the
   * node's whatever its class's constructor passes to `super`.
   */
  permissions?: NodePermissions;
  [param: string]: unknown;
}

/** What a node may know about the flow it belongs to (never the flow itself, whose Backpack is the owner's). */
export interface FlowView {
  /** The flow's id. */
  readonly id: string;
  /** The flow's namespace ('' at the top level). */
  readonly namespace: string;
}

/** What the flow hands a node it creates. */
export interface NodeContext {
  /** The node's full namespace. */
  namespace: string;
  /**
   * The flow the node belongs to, as an opaque token (only the BackpackNode base class can turn it into the flow,
   * which it keeps private; node code sees a {@link FlowView}). A subclass passes the context on to `super` as given:
   * a node whose id or namespace is not the one its flow gave it is refused (see `Flow.addNode`).
   */
  flow: FlowToken;
  /** Non-serializable things the node may need (LLM clients, the context engine), from the flow. */
  deps?: DependencyLookup;
}

/** Read access to injected dependencies; the serialization module's DependencyContainer is one. */
export interface DependencyLookup {
  /** The dependency registered under `key`; throws an error naming the key (and those registered) when there is none. */
  get<T = unknown>(key: string): T;
  /** Whether a dependency is registered under `key`. */
  has(key: string): boolean;
}

/** Zod schemas per backpack key: a node's data contract. */
export type DataContract = Record<string, ZodType>;

/** A contract as the library checks it: each key with its schema and that schema's `safeParse`, as they were. */
type HeldContract = readonly (readonly [key: string, schema: ZodType, parse: ZodType['safeParse']])[];

/**
 * The data contracts of each node class, taken when a flow first adds a node of the class ({@link holdContracts}):
 * the objects its `inputs` and `outputs` hold stay reachable from node code (`node.constructor.inputs`) and
 * changeable (a new key, a schema's `safeParse`), and what another node put there would run as this node.
 */
const heldContracts = new WeakMap<object, { inputs: HeldContract | undefined; outputs: HeldContract | undefined }>();

function heldContract(contract: DataContract | undefined): HeldContract | undefined {
  if (contract === undefined || contract === null) return undefined;
  return Object.freeze(Object.entries(contract).map(([key, schema]) => Object.freeze([key, schema, schema.safeParse] as const)));
}

/**
 * Takes the data contracts of `NodeClass` as they are now (see heldContracts), reading its statics as no node. The
 * flow calls it when it adds a node of the class, before any node code runs. Internal.
 */
export function holdContracts(NodeClass: BackpackNodeClass): void {
  if (heldContracts.has(NodeClass)) return;
  const { inputs, outputs } = asBuilder(undefined, () => ({ inputs: heldContract(NodeClass.inputs), outputs: heldContract(NodeClass.outputs) }));
  heldContracts.set(NodeClass, { inputs, outputs });
}

/** A BackpackNode class as `Flow.addNode` takes it. */
export interface BackpackNodeClass<T extends BackpackNode = BackpackNode> {
  new (config: any, context: NodeContext): T;
  namespaceSegment?: string;
  inputs?: DataContract;
  outputs?: DataContract;
  paramsSchema?: ZodType;
  permissions?: NodePermissions;
}

const SEGMENT_KEYS = new Set(['id', 'namespaceSegment', 'maxRetries', 'retryDelayMs', 'permissions']);

/**
 * The access rules of `node`: the one accessor flows use when they register a node (DESIGN D9). Precedence, first
 * declared wins: the node config's `permissions`, then `permissions` on the instance (a class field or a getter), then
 * the class's `static permissions`. A node that declares rules in any of these ways is restricted by them; rules are
 * read once, when the node is added to its flow. The config's rules are those the flow's author gave `addNode` (or a
 * flow file): a flow registers them, and puts them in the node's config, whatever its class's constructor passed to
 * `super`.
 */
export function nodePermissions(node: BackpackNode): NodePermissions | undefined {
  return node.config.permissions ?? (node as { permissions?: NodePermissions }).permissions ?? (node.constructor as BackpackNodeClass).permissions;
}

let configOfNode: (node: BackpackNode) => Readonly<BackpackNodeConfig>;
let setIdentity: (node: BackpackNode, namespaceSegment: string | undefined, permissions: NodePermissions | undefined) => void;

/**
 * The config `node` was created with, as BackpackNode keeps it (whatever a subclass's `config` getter says, and
 * unmasked: for the library's own reads of the id, segment, retry settings and rules, which hold no secret). Not
 * exported from the package.
 */
export function configOf(node: BackpackNode): Readonly<BackpackNodeConfig> {
  return configOfNode(node);
}

/**
 * Puts the namespace segment its flow gave `node` into its config, and the permissions too when the flow was given
 * some (whatever its constructor passed to `super`): what the node shows and exports is what its flow registered.
 * Flows call this once, before binding the node. Not exported from the package.
 */
export function setConfigIdentity(node: BackpackNode, namespaceSegment: string | undefined, permissions: NodePermissions | undefined): void {
  setIdentity(node, namespaceSegment, permissions);
}

/** The parts of a node that few nodes need, made on first use (a flow of a million nodes holds a million nodes). */
interface NodeMore {
  /** Dependencies given to the node's constructor that are not its flow's (see {@link BackpackNode.deps}). */
  deps?: DependencyLookup | undefined;
  /** The node's params (see {@link BackpackNode.params}). */
  params?: Readonly<Record<string, unknown>>;
  /** Its config and params as other nodes' code sees them (see {@link BackpackNode.config}). */
  masked?: MaskedConfig;
  events?: NodeEventView;
  /** The internal flow of a composite (the latest one built). */
  internalFlow?: Flow;
  /** True once the internal flow was declared (buildInternalFlow) or attached (a loader): the default exec runs it. */
  internalFlowDeclared?: boolean;
}

/** What {@link BackpackNode.flow} shows of each flow. */
const flowViews = new WeakMap<Flow, FlowView>();

let paramsOfNode: (node: BackpackNode) => Readonly<Record<string, unknown>>;

/**
 * `node`'s params as they are, secrets unmasked, whoever asks: for the library's own reads (an export with
 * `includeSensitive`, which masks them otherwise). Not exported from the package.
 */
export function paramsOf(node: BackpackNode): Readonly<Record<string, unknown>> {
  return paramsOfNode(node);
}

let bind: (node: BackpackNode, registered: RegisteredNode, flow: Flow) => void;
let bindingIn: (node: BaseNode, flow: Flow) => RegisteredNode | undefined;
let registrationOf: (node: unknown) => RegisteredNode | undefined;
let routeCheck: (from: BackpackNode, action: string, to: BaseNode) => void;
let inRunOf: (node: BackpackNode) => boolean;

/**
 * Whether code in no execution may act as the owner on `node` (its configuration: tools, flows): not once a run the
 * node is part of has started, when node code can get outside every execution too (see runHasStarted). Internal.
 */
export function ownerMayConfigure(node: BackpackNode): boolean {
  return !inRunOf(node);
}

/** Throws when a route from `from` to `to` may not be added now (see BackpackNode's route rules). Internal. */
export function checkNodeRoute(from: BackpackNode, action: string, to: BaseNode): void {
  routeCheck(from, action, to);
}

/** The registration of `node` in the flow that added it (undefined before it was added, or for anything else). Internal. */
export function nodeRegistration(node: unknown): RegisteredNode | undefined {
  return registrationOf(node);
}

/**
 * Gives a node its registration with the Backpack (flows call this once, right after creating and registering the
 * node; the node's handles are made by its flow's registrar, see {@link nodeHandle}). Not exported from the package:
 * node code never holds its registration.
 */
export function bindNode(node: BackpackNode, registered: RegisteredNode, flow: Flow): void {
  bind(node, registered, flow);
}

/**
 * The registration {@link bindNode} gave `node` in `flow`, or undefined when `node` is not a node bound to that flow
 * (a subflow, a node of another flow). Kept by the node, so that a flow of a million nodes holds no map of them.
 */
export function nodeBinding(node: BaseNode, flow: Flow): RegisteredNode | undefined {
  return bindingIn(node, flow);
}

/**
 * Access rules (D9) of a node, declared as a class field (`override readonly permissions = { read: ['query'] }`) or a
 * getter (`override get permissions() { ... }`); `static permissions` and the node config's `permissions` work too.
 * See {@link nodePermissions} for the precedence. Declared here, not as a class field, so that a getter in a subclass
 * is not shadowed by a field of the base class.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- declares a member subclasses define as a field or a getter
export interface BackpackNode {
  readonly permissions?: NodePermissions;
}

/**
 * A node that works on the Backpack. The flow that adds it assigns its namespace and gives it a handle bound to its
 * identity (DESIGN D6): everything it packs carries its id, class name and namespace, and the Backpack checks its
 * permissions on every access. `prep(backpack)` and `post(backpack, prepRes, execRes)` receive that handle; `exec` is
 * retried per `maxRetries` (D1). Optional `static inputs` / `static outputs` contracts are checked before `prep` and
 * after `post`.
 *
 * A composite node runs an internal flow: build it once up front by overriding `buildInternalFlow(flow)` (then the
 * default `exec` runs it), or call `createInternalFlow()` inside `exec` (once per execution) (D13).
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface above
export class BackpackNode<P = any, E = any> extends Node<any, P, E> {
  /** The namespace segment of every node of this class, unless its config names one. */
  static namespaceSegment?: string;
  /** Contract checked before prep: schema per backpack key. */
  static inputs?: DataContract;
  /** Contract checked after post: schema per backpack key. */
  static outputs?: DataContract;
  /**
   * Schema of the node's params (its config without id, segment and retry settings), checked when the node is
   * created. Mark secret params with `.meta({ secret: true })`: they export as `'***'` (DESIGN D14).
   */
  static paramsSchema?: ZodType;

  /** The node's full namespace, assigned by its flow (read-only once the flow added the node). */
  readonly namespace: string;
  /** The configuration the node was created with (see {@link config}). */
  #config: Readonly<BackpackNodeConfig>;
  readonly #flow: Flow;
  /** The node's registration with the Backpack (its handles are made from it by its flow). */
  #binding: RegisteredNode | undefined;
  /** What few nodes need (params read, an event view, an internal flow): made when first needed, one field per node. */
  #more: NodeMore | undefined;

  static {
    bind = (node, registered, flow) => {
      if (node.#binding !== undefined || node.#flow !== flow) throw new FlowError(`Node '${node.id}' is already bound to a flow`);
      node.#binding = registered;
    };
    bindingIn = (node, flow) => (node instanceof BackpackNode && node.#flow === flow ? node.#binding : undefined);
    registrationOf = (node) => (node instanceof BackpackNode ? node.#binding : undefined);
    routeCheck = (from, action, to) => BackpackNode.#checkRoute(from, action, to);
    inRunOf = (node) => BackpackNode.#inRun(node);
    paramsOfNode = (node) => BackpackNode.#ownParams(node);
    configOfNode = (node) => node.#config;
    setIdentity = (node, namespaceSegment, permissions) => {
      const config = node.#config;
      if (config.namespaceSegment === namespaceSegment && (permissions === undefined || config.permissions === permissions)) return;
      if (node.#binding !== undefined) throw new FlowError(`Node '${node.id}' is already bound to a flow`);
      const own = ownCopy(config);
      if (namespaceSegment === undefined) delete own.namespaceSegment;
      else own.namespaceSegment = namespaceSegment;
      if (permissions !== undefined) own.permissions = permissions;
      node.#config = Object.freeze(own);
      if (node.#more !== undefined) delete node.#more.masked;
    };
  }

  constructor(config: BackpackNodeConfig, context: NodeContext) {
    super(config);
    const flow = context ? flowOfToken(context.flow) : undefined;
    if (!context || typeof context.namespace !== 'string' || flow === undefined) {
      // The BackpackFlow v2 form, new Node(config, { namespace, backpack, eventStreamer }), lands here too.
      throw new TypeError(
        `${new.target.name} '${config?.id}': a BackpackNode is created by its flow: use flow.addNode(${new.target.name}, { id: ... }), ` +
          `which gives it its namespace, Backpack handle and events${context && 'backpack' in context ? ` (new ${new.target.name}(config, { namespace, backpack }) was the BackpackFlow v2 form; see MIGRATING.md)` : ''}`,
      );
    }
    const own = ownCopy(config);
    // Checked and frozen: what the flow compares with the rules its author gave (see Flow.addNode), and what exports.
    if (own.permissions !== undefined) own.permissions = checkPermissions(String(own.id), own.permissions);
    this.#config = Object.freeze(own);
    const schema = new.target.paramsSchema;
    if (schema) {
      const result = schema.safeParse(this.params);
      if (!result.success) {
        const problems = result.error.issues.map((i) => `params.${i.path.join('.') || '(root)'}: ${i.message}`);
        throw new TypeError(`${new.target.name} '${config.id}': invalid params: ${problems.join('; ')}`);
      }
    }
    this.namespace = context.namespace;
    // The flow's dependencies are read from the flow (no field per node); others given here are kept in #more.
    if (context.deps !== flow.deps) (this.#more ??= {}).deps = context.deps;
    this.#flow = flow;
  }

  /** Injected dependencies (from the flow), if any. */
  get deps(): DependencyLookup | undefined {
    const more = this.#more;
    return more !== undefined && 'deps' in more ? more.deps : this.#flow.deps;
  }

  /**
   * The configuration the node was created with (its params are what exports to JSON). The node's own code (its
   * constructor, prep, exec, post, what they leave running) and code outside any node's execution (the flow's owner)
   * read it as it is. Another node's code (which reaches this node through routes, `internalFlow` or a subflow) reads
   * a copy, frozen at every depth, whose secret params are masked as `exportFlow` masks them (DESIGN D14: marked
   * `.meta({ secret: true })` in the `paramsSchema`, named like a key, token, secret or password, or looking like
   * one): an LLM node's `apiKey` is its own.
   */
  get config(): Readonly<BackpackNodeConfig> {
    return BackpackNode.#readsOwn(this) ? this.#config : (BackpackNode.#masked(this).config as Readonly<BackpackNodeConfig>);
  }

  /**
   * The node's params: its config without id, namespace segment, retry settings and permissions. Secret params are
   * masked when another node's code reads them, as in {@link config}.
   */
  get params(): Readonly<Record<string, unknown>> {
    return BackpackNode.#readsOwn(this) ? BackpackNode.#ownParams(this) : BackpackNode.#masked(this).params;
  }

  /** The node's params as they are (secrets unmasked): its own reads, and the library's (see {@link paramsOf}). */
  static #ownParams(node: BackpackNode): Readonly<Record<string, unknown>> {
    return ((node.#more ??= {}).params ??= Object.freeze(Object.fromEntries(Object.entries(node.#config).filter(([key]) => !SEGMENT_KEYS.has(key)))));
  }

  /**
   * Whether the code running now may read `node`'s secret params: only the node's own (see {@link config}). Code in no
   * execution is not taken for the owner's: node code can get there by itself (a FinalizationRegistry callback, a
   * `beforeExit` listener), and the owner has the params it gave.
   */
  static #readsOwn(node: BackpackNode): boolean {
    // Not bound yet: its constructor, or the flow adding it (no other node's code holds it yet).
    if (node.#binding === undefined) return true;
    return currentExecution.getStore()?.node === node;
  }

  static #masked(node: BackpackNode): MaskedConfig {
    // The class's schema (its getters, a Proxy) runs as the node itself, never as the reader (see asBuilder).
    return ((node.#more ??= {}).masked ??= asBuilder(node, () => maskedForOthers(node.#config, (node.constructor as BackpackNodeClass).paramsSchema, SEGMENT_KEYS)));
  }

  /** The flow this node belongs to, as the node may see it: its id and namespace (one frozen view per flow). */
  get flow(): FlowView {
    const flow = this.#flow;
    let view = flowViews.get(flow);
    if (view === undefined) {
      view = Object.freeze({ id: flow.id, namespace: flow.namespace });
      flowViews.set(flow, view);
    }
    return view;
  }

  /** The event stream as this node may see it (see {@link NodeEventView}). */
  get eventStreamer(): NodeEventView {
    const registered = this.#binding;
    if (registered === undefined) throw new FlowError(`Node '${this.id}' is not bound to its flow yet: add it with flow.addNode`);
    const flow = this.#flow;
    let handle: BackpackHandle | undefined;
    // Frozen: other nodes' code reaches this view (`node.eventStreamer`) and must not put a method of its own on it
    // that this node's code would then call.
    const more = (this.#more ??= {});
    if (more.events === undefined) {
      Object.freeze((more.events = new NodeEventView(flowStreamer(flow), this, () => (handle ??= nodeHandle(flow, registered)), () => runHasStarted(flow))));
    }
    return more.events;
  }

  /**
   * Routes from this node are refused once the node's flow has run (internal flows are immutable after their first
   * run), and from another node's code when its flow runs inside a node: checked by BaseNode's `on` (`next`,
   * `onComplete`, …), however it is called. A route's `options.mappings` copies keys when it is taken (source key →
   * target key): a commit made by this node, as if its `post` had packed each target with the value of its source
   * (see {@link Flow} for the rules).
   */
  static #checkRoute(from: BackpackNode, action: string, node: BaseNode): void {
    if (from.#flow?.sealed) {
      throw new FlowError(`Node '${from.id}' belongs to flow '${from.#flow.id}', which ${from.#flow.sealedBecause}: its routes cannot change`);
    }
    if (from.#flow !== undefined) checkFlowChange(from.#flow, `add a route from node '${from.id}'`);
    const problem = stepProblem(node);
    if (problem !== undefined) throw new FlowError(`Node '${from.id}', route '${String(action)}': ${problem}`);
  }


  /**
   * The backpack as this node sees it: its execution's handle. Only while the node runs (prep, exec, post): a node's
   * handle is never reachable from another node's code.
   */
  get backpack(): BackpackHandle {
    const execution = currentExecution.getStore();
    if (execution?.node === this && !execution.ended) return execution.handle;
    throw new FlowError(`Node '${this.id}': its backpack is available only while it runs (prep, exec, post); outside, read the flow's Backpack`);
  }

  /** Packs `value` under `key` as this node. */
  pack(key: string, value: unknown, options?: Parameters<BackpackHandle['pack']>[2]): void {
    this.backpack.pack(key, value, options);
  }

  /** The value under `key` if this node may read it, else undefined. */
  unpack<T = unknown>(key: string): T | undefined {
    return this.backpack.unpack(key) as T | undefined;
  }

  /** The value under `key`; throws if it is missing or this node may not read it. */
  unpackRequired<T = unknown>(key: string): T {
    return this.backpack.unpackRequired(key) as T;
  }

  /** Values of the items whose source namespace matches `pattern` (D5), as far as this node may read them. */
  unpackByNamespace(pattern: string): Record<string, unknown> {
    return this.backpack.unpackByNamespace(pattern);
  }

  /** The internal flow of a composite node (the latest one built), if any. */
  get internalFlow(): Flow | undefined {
    BackpackNode.#declareInternalFlow(this);
    return this.#more?.internalFlow;
  }

  /** True when the node has an internal flow. */
  isComposite(): boolean {
    return this.internalFlow !== undefined;
  }

  /**
   * Override to declare the internal flow once, up front: add nodes to `flow` and wire them. Then `exportFlow` sees the
   * internal flow before any run, and the default `exec` runs it.
   */
  protected buildInternalFlow?(flow: Flow): void;

  /**
   * Creates the internal flow: it inherits this node's namespace, backpack and event streamer. Inside an execution it
   * may be called once per execution (each execution builds a fresh flow, so the node runs any number of times);
   * outside an execution, once per node. A second call throws.
   */
  createInternalFlow(): Flow {
    const execution = BackpackNode.#ownExecution(this);
    if (execution?.node === this) {
      if (execution.internalFlowCreated) {
        throw new FlowError(`Internal flow already created for node '${this.id}' in this execution: call createInternalFlow() once per execution`);
      }
      execution.internalFlowCreated = true;
    } else if (this.#more?.internalFlow) {
      throw new FlowError(`Internal flow already exists for node '${this.id}': call createInternalFlow() only once`);
    }
    const flow = this.createNestedFlow();
    (this.#more ??= {}).internalFlow = flow;
    return flow;
  }

  /**
   * A flow that runs inside this node: its nodes are registered under this node (namespaces under this node's, its
   * permissions bounding theirs), sharing its streamer and dependencies. `namespace` (default: this node's own) is
   * composed under this node's namespace. Tools and nested `loadFlow` calls use it; composites use
   * {@link createInternalFlow}.
   */
  createNestedFlow(options: Omit<FlowOptions, 'backpack' | 'eventStreamer' | 'backpackOptions'> = {}): Flow {
    BackpackNode.#ownExecution(this);
    return this.#nestedFlow(options);
  }

  /**
   * The current execution, which must be `node`'s own when there is one: a flow built on a node runs with its rules,
   * so the code of another node (which reaches this one through its routes) may not build one.
   */
  static #ownExecution(node: BackpackNode): NodeExecution | undefined {
    const running = currentExecution.getStore();
    // Its own code, or the code of a node it runs inside (a composite of a flow that node built or loaded).
    if (running !== undefined && running.node !== node && !(node.#flow !== undefined && flowInside(node.#flow, running.node))) {
      throw new FlowError(`Node '${running.node.id}' cannot build a flow on node '${node.id}': a node builds flows only on itself and on the nodes it runs`);
    }
    if (running === undefined && BackpackNode.#inRun(node)) {
      throw new FlowError(`Code outside every node's execution cannot build a flow on node '${node.id}' once its flow's first run has started (only the node's own code can; the owner builds it before)`);
    }
    return running;
  }

  /** Whether a run that `node` is part of has started (see runHasStarted). */
  static #inRun(node: BackpackNode): boolean {
    return node.#flow !== undefined && runHasStarted(node.#flow);
  }

  #nestedFlow(options: Omit<FlowOptions, 'backpack' | 'eventStreamer' | 'backpackOptions'> = {}): Flow {
    if (this.#binding === undefined) throw new FlowError(`Node '${this.id}' is not bound to its flow yet: add it with flow.addNode`);
    const ns = options.namespace;
    const namespace = ns === undefined || ns === this.namespace || ns.startsWith(`${this.namespace}.`) ? (ns ?? this.namespace) : `${this.namespace}.${ns}`;
    const flow = new Flow({
      id: options.id ?? this.id,
      namespace,
      backpack: nodeHandle(this.#flow, this.#binding),
      eventStreamer: flowStreamer(this.#flow),
      deps: options.deps ?? this.deps,
      maxSteps: options.maxSteps ?? this.#flow.maxSteps,
      onMissingRoute: options.onMissingRoute ?? this.#flow.onMissingRoute,
    });
    // Frozen: node code reaches other nodes' internal flows (`internalFlow`) and may not change what they run.
    Object.freeze(flow);
    return flow;
  }

  /**
   * Gives the node a ready internal flow (a flow loader does this for a composite loaded from config); the default
   * `exec` runs it. Replaces any declared one. Only a flow built on this node (`flow.createChildFlow(node)`, or
   * `createInternalFlow()`), and never from another node's code (which reaches this node through routes and would
   * plant code that runs as this node and chooses its route): a FlowError otherwise.
   */
  attachInternalFlow(flow: Flow): void {
    BackpackNode.#ownExecution(this);
    // Frozen, as createNestedFlow makes it: other nodes reach an internal flow (`internalFlow`), and a flow built with
    // `new Flow({ backpack: handle })` would let them put a `run` of their own on it, which this node then calls.
    if (!(flow instanceof Flow) || this.#binding === undefined || !builtOn(flow, this.#binding) || !Object.isFrozen(flow)) {
      throw new FlowError(`Node '${this.id}': attachInternalFlow takes a flow built on this node (flow.createChildFlow(node), node.createNestedFlow() or node.createInternalFlow())`);
    }
    const more = (this.#more ??= {});
    more.internalFlowDeclared = true;
    more.internalFlow = flow;
  }

  // Static, as every private method here: a private method gives each instance a brand (a field, 8 B per node).
  static #declareInternalFlow(node: BackpackNode): void {
    if (node.#more?.internalFlowDeclared === true || !node.buildInternalFlow) return;
    const more = (node.#more ??= {});
    more.internalFlowDeclared = true;
    const flow = node.#nestedFlow();
    // The node's own code, run outside the execution that first reached for the flow (another node's, maybe): it
    // reads its own params (secrets unmasked) and acts as no other node, nor as the owner (see asBuilder).
    asBuilder(node, () => node.buildInternalFlow!(flow));
    // Complete once declared: other nodes reach it (`internalFlow`) and must not add to what it runs.
    closeDeclaredFlow(flow, node.id);
    more.internalFlow = flow;
  }

  /** Reads what exec needs, through this node's backpack handle. */
  override prep(_backpack: BackpackHandle, _scope: RunScope): P | Promise<P> {
    return undefined as P;
  }

  /** Default exec: runs the declared or attached internal flow, if there is one, and returns its last action. */
  override exec(_prepRes: P, _attempt: Attempt): E | Promise<E> {
    const flow = this.internalFlow;
    if (flow && this.#more?.internalFlowDeclared === true) return flow.run() as Promise<E>;
    return undefined as E;
  }

  /**
   * Writes results through this node's backpack handle and returns the action to route on. Default: for a composite
   * whose internal flow the default `exec` ran, that flow's last action (so `composite.on('done', next)` follows an
   * internal flow that ends with `'done'`); otherwise undefined (`'default'`).
   */
  override post(_backpack: BackpackHandle, _prepRes: P, execRes: E): string | undefined | Promise<string | undefined> {
    return this.#more?.internalFlowDeclared === true && typeof execRes === 'string' ? execRes : undefined;
  }

  protected override onAttemptFailed(error: unknown, attempt: Attempt, delayMs: number, _scope: RunScope): void {
    const execution = currentExecution.getStore();
    if (execution?.node !== this || execution.ended) return;
    execution.failedAttempts++;
    BackpackNode.#emit(execution, StreamEventType.NODE_RETRY, {
      attempt: attempt.attempt,
      maxRetries: attempt.maxAttempts,
      delayMs,
      error: describeError(error),
    });
  }

  /**
   * One execution: contracts, prep, exec with retries, post, each reported as an event of this node's span. Only as a
   * step its flow takes; the flow calls this method as BackpackNode defines it (a subclass's override of `_run` is not
   * what a flow runs).
   */
  override _run(_shared: unknown, scope: RunScope): Promise<string | undefined> {
    if (!takeStep(this, scope)) {
      return Promise.reject(new FlowError(`Node '${this.id}' runs only as a step its flow takes (a route to it, or the entry): it cannot be run directly, by node code or by hand`));
    }
    const parent = currentExecution.getStore();
    if (parent?.ended === true) {
      // A flow a node left running (a timer, a promise) after its execution: its steps would land in a later step.
      return Promise.reject(new FlowError(`Node '${this.id}' cannot run inside node '${parent.node.id}', whose execution ended: run nested flows from prep, exec or post before they return`));
    }
    const spanId = newSpanId();
    const registered = BackpackNode.#bound(this);
    const execution: NodeExecution = {
      node: this,
      nodeName: registeredNodeName(registered),
      scope,
      spanId,
      handle: nodeHandle(this.#flow, registered, { runId: scope.runId, spanId }),
      internalFlowCreated: false,
      failedAttempts: 0,
      interrupts: 0,
      ended: false,
      parent,
    };
    return currentExecution.run(execution, () => BackpackNode.#lifecycle(this, execution));
  }

  static async #lifecycle(node: BackpackNode, execution: NodeExecution): Promise<string | undefined> {
    const { handle } = execution;
    // What node code gets: the scope's fields, frozen, without the run's controls. The controls are looked up by the
    // scope object (flow/scope.ts), and a node that held the engine's own scope could hand it to a flow of its own
    // (`_orchestrate` is reachable from JS) and record a checkpoint or use up a resume position through it.
    // With a signal of its own (see executionSignal): never the run's, which is the owner's object.
    const runSignal = execution.scope.signal;
    const own = runSignal === undefined ? undefined : executionSignal(runSignal, execution);
    const scope = makeScope(own === undefined ? execution.scope : { ...execution.scope, signal: own.signal });
    const ctor = node.constructor as BackpackNodeClass;
    const started = performance.now();
    BackpackNode.#emit(execution, StreamEventType.NODE_START, {});
    let phase: 'contract' | 'prep' | 'exec' | 'post' = 'contract';
    try {
      const contracts = heldContracts.get(ctor);
      if (contracts?.inputs) BackpackNode.#checkContract(node, 'input', contracts.inputs, handle);
      phase = 'prep';
      let mark = performance.now();
      const prepRes = await node.prep(handle, scope);
      BackpackNode.#emit(execution, StreamEventType.PREP_COMPLETE, { durationMs: performance.now() - mark });
      phase = 'exec';
      mark = performance.now();
      const execRes = await node._exec(prepRes, scope);
      BackpackNode.#emit(execution, StreamEventType.EXEC_COMPLETE, {
        durationMs: performance.now() - mark,
        attempts: execution.failedAttempts + 1,
      });
      phase = 'post';
      const action = checkAction(node.id, await node.post(handle, prepRes, execRes));
      phase = 'contract';
      if (contracts?.outputs) BackpackNode.#checkContract(node, 'output', contracts.outputs, handle);
      BackpackNode.#emit(execution, StreamEventType.NODE_END, { action: action ?? 'default', durationMs: performance.now() - started });
      return action;
    } catch (thrown) {
      // A pause (here or in a node inside this one) is not an error, nor is the run's own abort (it stops the run
      // where it is). A RunInterrupted that no interrupt() of this run made is this node's failure, not a pause. An
      // error a node inside this one reported is reported again here (this node failed too) but marked, so that it
      // is counted once.
      const error = inert(unlessForged(thrown, runControls(execution.scope), `Node '${node.id}' (${node.namespace})`, execution), node);
      if (!(error instanceof FlowSignal) && !isRunAbort(error, runSignal)) {
        const payload: Record<string, unknown> = { phase, error: describeError(error) };
        if (wasReported(error)) payload.propagated = true;
        else markReported(error);
        BackpackNode.#emit(execution, StreamEventType.ERROR, payload);
      }
      throw error;
    } finally {
      execution.ended = true;
      closeHandle(execution.handle);
      own?.release();
    }
  }

  static #checkContract(node: BackpackNode, direction: 'input' | 'output', contract: HeldContract, handle: BackpackHandle): void {
    const violations: ContractViolation[] = [];
    for (const [key, schema, parse] of contract) {
      const result = parse.call(schema, handle.peek(key));
      if (result.success) continue;
      for (const issue of result.error.issues) {
        const missing = issue.path.length === 0 && !handle.has(key);
        violations.push({ key, path: issue.path.join('.'), message: missing ? `missing (${issue.message})` : issue.message });
      }
    }
    if (violations.length > 0) throw new ContractValidationError(node.id, direction, violations);
  }

  static #bound(node: BackpackNode): RegisteredNode {
    if (node.#binding === undefined) throw new FlowError(`Node '${node.id}' is not bound to its flow: add it with flow.addNode`);
    return node.#binding;
  }

  /**
   * Pauses the run for a person (DESIGN D16): `payload` is what they see (a question, a draft to approve), `schema`
   * (zod) what their answer must be. Without an answer yet, the run stops here: a durable run records itself as
   * waiting and `runFlow`/`resumeRun` resolve with `status: 'waiting'` and this interrupt; `flow.run` rejects with
   * {@link RunInterrupted}. `resumeRun(flow, { runId, resume: answer })` checks the answer against the schema and
   * runs this node again **from `prep`**: this call then returns the answer. So code before an interrupt runs again
   * on resume and must be safe to repeat (read, do not write, before asking). Several interrupts in one execution
   * are answered in order. Only inside this node's own prep, exec or post.
   */
  async interrupt<T = unknown>(payload: unknown, options: { schema?: ZodType<T> } = {}): Promise<T> {
    const execution = currentExecution.getStore();
    if (execution?.node !== this || execution.ended) throw new FlowError(`Node '${this.id}': interrupt() is called from the node's own prep, exec or post, before they return`);
    const index = execution.interrupts++;
    const info: InterruptInfo = { nodeId: this.id, namespace: this.namespace, index, payload: encodeValue(payload) };
    // Read once: the schema recorded for the person is the one the answer is checked against.
    const schema = options.schema;
    if (schema) info.schema = answerJsonSchema(this.id, schema);
    const controls = runControls(execution.scope);
    let answers = controls?.answers?.get(this.namespace);
    let refused: { path: string; message: string }[] | undefined;
    // An answer given to another question (the node read something that changed while the run waited: "Transfer
    // $100?" was approved, it now asks "Transfer $10000?") is not this question's: the node asks again, saying why.
    if (answers !== undefined && index < answers.length && controls?.sameQuestion?.(this.namespace, index, info) === false) {
      refused = [{ path: '', message: 'the question changed since this answer was given (the node asks something else now; a question holding the time or a random id changes every time): it is asked again' }];
      answers = undefined;
    }
    if (answers !== undefined && answers[index] instanceof RedactedAnswer) {
      throw new FlowError(
        `Node '${this.id}' (${this.namespace}): the answer to its interrupt ${index} held a secret, which the run's log keeps redacted, ` +
          'so it cannot be given again when the node runs again from prep (after a later interrupt of the same execution was answered, or after a crash). ' +
          "Ask for a secret in a node's last interrupt (or in a node of its own) and use it before the node returns",
      );
    }
    if (answers !== undefined && index < answers.length) {
      if (!schema) return answers[index] as T;
      const checked = checkAnswer(schema, answers[index]);
      if (checked.ok) return checked.value as T;
      refused = checked.problems;
    }
    // The pause; after an answer the node's own schema refused (a zod refine JSON Schema cannot say), the new pause
    // says so: the log keeps the refused answer, the refusal and its problems, then the run waits again. Made (and
    // `info` frozen) before the event, which holds the same payload: node code that catches the pause changes neither.
    const pause = makePause(info, runControls(execution.scope), execution, refused);
    const event: Record<string, unknown> = { index, payload: info.payload };
    if (info.schema) event.schema = info.schema;
    if (refused) event.refused = refused;
    BackpackNode.#emit(execution, StreamEventType.NODE_INTERRUPT, event);
    throw pause;
  }

  /**
   * Emits an event of this node, for subclasses: the same as `this.eventStreamer.emit({ type, payload })`, with the
   * same rules (see {@link NodeEventView.emit}). Its id, class, namespace, and the run and span of its execution are
   * its own. A node emits `model.*`, `tool.*`, `memory.*` and `custom` events, from its prep, exec or post before they
   * return; any other type (`node.started`, `node.completed`, `error`, `route.taken`, `checkpoint.saved`, ...) is the
   * library's account of what happened and throws a TypeError, as does an emit from a timer or a promise left
   * running after the node's execution ended.
   */
  protected emitEvent(type: StreamEventTypeValue, payload: Record<string, unknown>): void {
    this.eventStreamer.emit({ type, payload });
  }

  /** The library's own events of a node's execution (its lifecycle, retries, interrupts): not reachable from subclasses. */
  static #emit(execution: NodeExecution, type: StreamEventTypeValue, payload: Record<string, unknown>): void {
    flowStreamer(execution.node.#flow).emit(nodeEvent(execution, type, payload));
  }

}

/**
 * A copy of `config`'s own enumerable properties (as `{ ...config }`, a `__proto__` key included as an own key),
 * built by adding them one by one: frozen, such copies share their hidden class. (A spread copy made in a hot loop
 * gets a hidden class of its own once frozen, about 180 bytes per node of a large flow.)
 */
function ownCopy(config: BackpackNodeConfig): BackpackNodeConfig {
  const out: Record<string | symbol, unknown> = {};
  for (const key of Reflect.ownKeys(config)) {
    if (!Object.prototype.propertyIsEnumerable.call(config, key)) continue;
    const value = (config as unknown as Record<string | symbol, unknown>)[key];
    if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
  }
  return out as unknown as BackpackNodeConfig;
}

/** Why `key` cannot be a Backpack key (an empty segment), or undefined. */
export function backpackKeyProblem(key: string): string | undefined {
  try {
    checkSegments(key, 'key', (message) => new TypeError(message));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The node whose execution the current async context belongs to, if any (a nested `loadFlow` shares its flow's Backpack). */
export function currentNode(): BackpackNode | undefined {
  const running = currentExecution.getStore();
  return running !== undefined && !running.ended ? running.node : undefined;
}

/**
 * `error` as node `node`'s execution ends with it, when reading it runs no code (the usual case: it is passed on as
 * it is); a Proxy, or a value with one on its prototype chain, becomes a FlowError naming the node. The error goes up
 * through the executions the node runs inside (a composite's retries, its `error` event, its flow), where the
 * library's `instanceof` checks would run the Proxy's traps, so code of this node would run as the composite.
 */
function inert(error: unknown, node: BackpackNode): unknown {
  if (!reachesProxy(error)) return error;
  return new FlowError(`Node '${node.id}' (${node.namespace}) threw a Proxy (or an object with one on its prototype chain): a node throws errors that are data, such as an Error`);
}

const reported = new WeakSet<object>();

function markReported(error: unknown): void {
  if (error !== null && typeof error === 'object') reported.add(error);
}

/**
 * True when a node already reported `error`, or an error it wraps (its `cause` chain: a composite's retry wrapper),
 * as an `error` event: then it is the same failure passing up, not a second one.
 */
export function wasReported(error: unknown): boolean {
  // `cause` read as data only: this runs in the execution of whichever node or flow the error passes through.
  for (let e: unknown = error, depth = 0; e !== null && typeof e === 'object' && depth < 32; e = dataProperty(e, 'cause'), depth++) {
    if (reported.has(e)) return true;
  }
  return false;
}

/**
 * The name and message of an error, for event payloads: strings, read without running code of the error (no getter,
 * Proxy trap or `toString`), since an error passes up through the executions of the nodes it runs inside (a
 * composite's), where code of the node that threw it must not run. An Error whose `name` or `message` is a getter is
 * described as `'Error'` or `''` there; the thrown error itself passes on unchanged.
 */
export function describeError(error: unknown): { name: string; message: string } {
  return describeThrown(error);
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(BackpackNode);
