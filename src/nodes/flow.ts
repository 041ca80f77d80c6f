import { Backpack, BackpackHandle, type BackpackOptions } from '../backpack/index.js';
import { checkPermissions } from '../backpack/access.js';
import { nodeRegistrar, packInRun } from '../backpack/backpack.js';
import { actsAs, itemRuleOf, sameNode, type NodeRegistrar, type RegisteredNode } from '../backpack/handle.js';
import type { ReservedNodes } from '../backpack/registry.js';
import { EventStreamer, StreamEventType, newRunId, newSpanId } from '../events/index.js';
import {
  BaseFlow,
  BaseNode,
  FlowError,
  ROOT_SCOPE,
  enterScope,
  missingRouteMessage,
  type MissingRoutePolicy,
  type RouteMappings,
  type RunScope,
  type StepBoundary,
} from '../flow/index.js';
import { BackpackNode, backpackKeyProblem, bindNode, checkNodeRoute, configOf, holdContracts, describeError, setConfigIdentity, nodeBinding, nodePermissions, nodeRegistration, wasReported, type BackpackNodeClass, type BackpackNodeConfig, type DependencyLookup } from './backpack-node.js';
import { isRunAbort, routeOf, routeTable, setRouteGuard } from '../flow/node.js';
import { reachesProxy } from '../flow/errors.js';
import { setEntryGuard } from '../flow/flow.js';
import { makeScope, type RunControls } from '../flow/scope.js';
import { asBuilder, currentExecution, grantStep, markRunStarted, takeStep } from './execution.js';
import { flowToken } from './flow-token.js';
import { pauseInfo, unlessForged } from './interrupt.js';
import { checkNamespace, checkSegment, composeNamespace } from './namespace.js';
import { hardenClass, hardenPrototype } from '../harden.js';
import { rememberSchema } from './secret-params.js';
import type { ZodType } from 'zod';

/** Options of a namespaced flow. */
export interface FlowOptions {
  /** Id of the flow (as a node inside another flow). Default: its namespace, or `'flow'`. */
  id?: string;
  /** The flow's namespace; its nodes' namespaces are composed under it. Default: empty (top level). */
  namespace?: string;
  /**
   * The Backpack to share, or a node's handle: then the flow runs inside that node (its nodes are registered under
   * it, with namespaces under its own and its permissions bounding theirs, and `run(input)` packs as that node).
   * Default: a new Backpack.
   */
  backpack?: Backpack | BackpackHandle;
  /** Options for the Backpack the flow creates when none is given. */
  backpackOptions?: BackpackOptions;
  /** Keys packed (by the owner) into the Backpack the flow creates, as BackpackFlow v2 took them; `run(input)` does the same per run. */
  initialData?: Record<string, unknown>;
  /** Where the flow's events go. Default: a new EventStreamer. */
  eventStreamer?: EventStreamer;
  /** Most steps per execution (default 1000). */
  maxSteps?: number;
  /** What to do with an action that has no route (default 'warn': end the flow and emit `route.missing`). */
  onMissingRoute?: MissingRoutePolicy;
  /** Dependencies handed to every node (and inherited by internal flows and subflows). */
  deps?: DependencyLookup;
}

/** What {@link Flow.getStats} reports. */
export interface FlowStats {
  /** The flow's namespace. */
  namespace: string;
  /** Nodes at every level (this flow's, its subflows', its composites' internal flows'). */
  nodeCount: number;
  /** Routes at every level. */
  edgeCount: number;
  /** Nodes with an internal flow, at every level. */
  compositeNodeCount: number;
  /** Subflows at every level. */
  subflowCount: number;
  /** Nesting depth of internal flows: 0 without composites. */
  maxDepth: number;
  /** Whether the flow has an entry node. */
  hasEntryNode: boolean;
  /** Times this flow ran (as a whole, a subflow or an internal flow; a batch flow once per batch). */
  executions: number;
  /** Steps (node executions) its runs took, over all of them; a nested flow's steps count in that flow's stats. */
  stepsRun: number;
  /** Active keys of the owner's Backpack (absent for a flow that runs inside a node). */
  backpackSize?: number;
}

/** Something that turns a flow config (JSON) into a Flow: the serialization module's FlowLoader. */
export interface FlowConfigLoader {
  /** The Flow that `config` describes, its nodes built with `deps`; a FlowLoadError naming what is wrong otherwise. */
  loadFlow(config: unknown, deps?: unknown): Promise<Flow>;
}

let defaultConfigLoader: FlowConfigLoader | undefined;

/**
 * The nodes of a flow config that a flow loader adds to a flow to be built on first use (see {@link deferNode}):
 * the config's nodes in order, each the record of a node (what `build` takes), replaced by the node once the flow
 * has it, or undefined once none can be had from it.
 */
export interface DeferredNodes {
  readonly entries: (object | undefined)[];
  /** The position in `entries` of the node config with id `id`, whether added yet or not; undefined when none has it. */
  position(id: string): number | undefined;
  /** The id of the node `record` describes. */
  idOf(record: object): string;
  /** The class and config of the node `record` describes: exactly what `addNode` would have been given. */
  build(record: object): { NodeClass: BackpackNodeClass; config: BackpackNodeConfig };
}

/** What a flow knows of its loaded nodes (see {@link DeferredNodes}): how many were added, and their reservation. */
interface Deferred {
  readonly source: DeferredNodes;
  readonly reserved: ReservedNodes;
  /** Entries at positions below this were added (the loader adds them in order). */
  added: number;
}

let startDeferring: (flow: Flow, source: DeferredNodes) => void;
let defer: (flow: Flow, NodeClass: BackpackNodeClass, id: string, position: number) => boolean;
let place: (flow: Flow, position: number, node: BaseNode | undefined) => void;

/**
 * Makes `source` the list of `flow`'s loaded nodes; the loader then adds them in order, each with
 * {@link deferNode} or (built at once, by `addNode` or not at all) {@link placeNode}. Only before any node is added,
 * and for a flow loaded from a config whose nodes are added by no one but the loader (no `fromConfig`). Not
 * exported from the package.
 */
export function deferNodes(flow: Flow, source: DeferredNodes): void {
  startDeferring(flow, source);
}

/**
 * Adds node `id` of `NodeClass`, at `position` of the flow's {@link DeferredNodes}, as `addNode` would, with the same
 * checks and errors (id, uniqueness, namespace segment, the Backpack's registration), but builds it only on first
 * use: when it is asked for (`getNode`, `getAllNodes`, a route, the entry, export) or its registration is (the
 * Backpack's `toJSON`, `forNode`, `resolve`). Only for a node whose creation is the library's alone, so that when it
 * happens cannot be told: a class that declares no constructor, no instance fields, no `permissions`,
 * `namespaceSegment` or `paramsSchema` (see `constructsPlainly` in the serialization module), a config with no
 * namespace segment or permissions, valid retry settings and checked params; not the flow's first node (its entry).
 * False, with nothing added, when the same node is registered at its namespace already (another flow of the same
 * nodes on the Backpack): then add it with `addNode`, whose registration replaces that one in its place.
 */
export function deferNode(flow: Flow, NodeClass: BackpackNodeClass, id: string, position: number): boolean {
  return defer(flow, NodeClass, id, position);
}

/** Records that the node at `position` of the flow's {@link DeferredNodes} was added now (`node`) or could not be (undefined). */
export function placeNode(flow: Flow, position: number, node: BaseNode | undefined): void {
  place(flow, position, node);
}

/**
 * The top-level run of each Flow: the one under way, or the last. A Flow holds the state of its runs (its Backpack,
 * with their history and provenance): `flow.run` goes on from what the last run left (a conversation kept in
 * memory), but never while another top-level run of the flow is under way, which would share that state with it (one
 * run's input in the other's record). A durable run records its whole start: `runFlow` takes a Flow that has not run,
 * so its record never starts from what another run left (another user's data, in a server that built its flow once);
 * `resumeRun` and `forkRun` replace the whole state with the recorded one, so they take any Flow not in a run.
 * `claimed`: such a call took the flow before packing or restoring its state, and has not started the run yet;
 * `abandoned`: it failed before it did (after packing part of its input, maybe).
 */
interface TopLevelRun {
  by: string;
  runId: string | undefined;
  phase: 'claimed' | 'running' | 'ended' | 'abandoned';
}
const topLevelRuns = new WeakMap<Flow, TopLevelRun>();
/**
 * The option a durable runtime call's `flow.run` carries its claim in (see {@link claimTopLevelRun}): the claim object
 * itself, which only that call holds, so nothing else can present it; passed on by a subclass's `run` that calls
 * `super.run(input, options)`, whenever it does.
 */
const CLAIM = Symbol('backpackflow.claimedRun');

function usedFlowMessage(flow: Flow, run: TopLevelRun, by: string): string {
  const which = `run ${run.runId === undefined ? '' : `${JSON.stringify(run.runId)} `}(${run.by})`;
  const build = 'build a Flow for each run (a function that builds it, as resumeRun and forkRun take)';
  if (run.phase === 'claimed' || run.phase === 'running') {
    return `${by}: Flow '${flow.id}' is ${run.phase === 'running' ? 'running' : 'being started for'} ${which}: two runs of one Flow at once would share one state (its Backpack); ${build}`;
  }
  const left = run.phase === 'ended' ? `has run (${which}): its Backpack holds what that run left` : `was given to ${which}, which did not start (see its error): its Backpack may hold part of that run's input`;
  return `${by}: Flow '${flow.id}' ${left}, which this run would record as its start. runFlow takes a Flow that has not run: ${build}`;
}

/**
 * Takes `flow` for a durable run (`by`: runFlow, resumeRun, forkRun) before its state is packed (`fresh`) or
 * replaced by a recorded one: a FlowError while another run of the flow is under way, and for a fresh run when the
 * flow has run (see TopLevelRun). The call then starts the run with the claim's `run`, or releases it when it failed
 * before that.
 */
export function claimTopLevelRun(flow: Flow, by: string, runId: string, fresh: boolean): TopLevelClaim {
  const run = topLevelRuns.get(flow);
  if (run !== undefined && (fresh || run.phase === 'claimed' || run.phase === 'running')) throw new FlowError(usedFlowMessage(flow, run, by));
  const claim: TopLevelRun = { by, runId, phase: 'claimed' };
  topLevelRuns.set(flow, claim);
  return {
    run: (options) => flow.run(undefined, { ...options, [CLAIM]: claim } as FlowRunOptions),
    release: () => {
      if (claim.phase === 'claimed') claim.phase = 'abandoned';
    },
  };
}

/** A durable runtime call's hold on a Flow (see {@link claimTopLevelRun}). */
export interface TopLevelClaim {
  /** `flow.run(undefined, options)`, as the run that claimed the flow. */
  run(options: FlowRunOptions): Promise<string | undefined>;
  /** Ends the claim if its run never started (the call failed before): the flow is then no longer taken. */
  release(): void;
}

let streamerOf: (flow: Flow) => EventStreamer;
let handleOf: (flow: Flow, node: RegisteredNode, eventContext?: { runId?: string; spanId?: string }) => BackpackHandle;

/**
 * A handle of the node `flow` registered as `node` (see {@link bindNode}), whose events carry `eventContext`: a new
 * one per call (not exported from the package; nodes get theirs per execution).
 */
export function nodeHandle(flow: Flow, node: RegisteredNode, eventContext?: { runId?: string; spanId?: string }): BackpackHandle {
  const handle = handleOf(flow, node, eventContext);
  handleFlows.set(handle, flow);
  return handle;
}

/** The flow that made each node handle (see {@link nodeHandle}): what a flow built on a handle runs inside. */
const handleFlows = new WeakMap<BackpackHandle, Flow>();
let rootOf: (flow: Flow) => Flow | undefined;

/**
 * Whether a top-level run that `flow` is part of has started (or been claimed), under way or over: `flow` itself, or
 * the top-level flow it runs inside, through the nodes its flows were built on. Code outside every node's execution
 * is taken for the owner's; once node code has run, it can get there too (a FinalizationRegistry callback, a timer
 * made in one, left running into the next run of a long-lived Flow), so what only the owner may do to a node's flows
 * (change them, attach one, use a node's event view) is done before the flow's first run. Internal.
 */
export function runHasStarted(flow: Flow): boolean {
  const root = rootOf(flow);
  return root !== undefined && topLevelRuns.has(root);
}

/** The stream `flow` emits to, also for a flow that runs inside a node (its nodes emit there; not exported from the package). */
export function flowStreamer(flow: Flow): EventStreamer {
  return streamerOf(flow);
}

let givesOwnerView: (flow: Flow) => boolean;

/** Whether `flow` is a top-level flow: one whose Backpack is the owner's view (not a subflow nor one built on a node). Internal. */
export function isTopLevel(flow: Flow): boolean {
  return givesOwnerView(flow);
}
let parentOf: (flow: Flow) => BackpackHandle | undefined;

let changeCheck: (flow: Flow, what: string) => void;

/** Whether the flow whose node handle is `on` was built on `node`. */
function builtBy(on: BackpackHandle, node: BackpackNode): boolean {
  const registered = nodeRegistration(node);
  return registered !== undefined && actsAs(on, registered);
}

let parentFlowOf: (flow: Flow) => Flow | undefined;

/**
 * Whether `flow` runs inside `node`: built on it, or on a node of a flow that runs inside it, at any depth (a
 * composite in a config that `node` loads in its exec: the loader, in `node`'s execution, builds that composite's
 * internal flow). Such nodes' rules are bounded by `node`'s, so its code may build and change their flows. Internal.
 */
export function flowInside(flow: Flow, node: BackpackNode): boolean {
  const registered = nodeRegistration(node);
  if (registered === undefined) return false;
  for (let at: Flow | undefined = flow; at !== undefined; at = parentFlowOf(at)) if (builtOn(at, registered)) return true;
  return false;
}

/**
 * Throws a FlowError when the code running now may not change `flow`'s nodes or routes (`what`, for the message): a
 * flow that runs inside a node (see {@link builtOn}) changes only from that node's own code, the code of a node it runs
 * inside ({@link flowInside}), or code in no execution (the owner's) before the flow's first run. Internal.
 */
export function checkFlowChange(flow: Flow, what: string): void {
  changeCheck(flow, what);
}

/** Whether `flow` was built on node `registered` (its internal or a nested flow): it runs inside that node. Internal. */
export function builtOn(flow: Flow, registered: RegisteredNode): boolean {
  const parent = parentOf(flow);
  return parent !== undefined && actsAs(parent, registered);
}

/**
 * Why `node` cannot be routed to (or be the entry of, or run as a step of) a flow of BackpackNodes, or undefined.
 * Everything a flow's graph holds is reachable from node code (`this.successors`, a subflow's nodes), so it may hold
 * only BackpackNodes and flows that keep the owner's Backpack and streamer to themselves (subflows, flows that run
 * inside a node): a plain node would be handed the owner's Backpack as its shared state, and a top-level flow gives
 * out the owner's Backpack. Not exported from the package.
 */
export function stepProblem(node: BaseNode): string | undefined {
  if (node instanceof BackpackNode) return undefined;
  if (node instanceof Flow) {
    return givesOwnerView(node)
      ? `flow '${node.id}' holds the owner's Backpack (a top-level flow), and node code can reach a route's target: make it a subflow with flow.addSubflow`
      : undefined;
  }
  return `node '${node.id}' is a ${node.constructor.name}, not a BackpackNode: a flow of BackpackNodes would hand it the owner's Backpack as its shared state; make it a BackpackNode and add it with flow.addNode`;
}

/**
 * Sets the loader `Flow.fromConfig` uses when none is passed: the serialization module sets its default loader, once,
 * when it loads. Not exported from the package (node code must not choose the loader of the owner's next flow).
 */
export function setDefaultFlowConfigLoader(loader: FlowConfigLoader): void {
  if (defaultConfigLoader !== undefined) throw new FlowError('The default flow config loader is set once, by the serialization module');
  defaultConfigLoader = loader;
}

/** Options for running a flow at the top level. */
export interface FlowRunOptions {
  /** Run id for the events (default: a new one). */
  runId?: string;
  /**
   * Aborts the run before its next step (or inside a node that waits on it, `scope.signal`): the run rejects with the
   * signal's reason, which no node retries, passes to `execFallback` or wraps, and `run.failed` carries `aborted: true`.
   */
  signal?: AbortSignal;
  /** Resume position: node ids from the outermost flow inwards. */
  resume?: string[];
  /** Called after every step, awaited (the durable runtime checkpoints here). */
  onStep?: RunControls['onStep'];
  /**
   * Called once `run.started` is emitted, and awaited before the first node runs (the durable runtime records the
   * run's start there, and the answer a resume gives); a rejection fails the run before any node runs.
   */
  onStart?: () => Promise<void>;
  /**
   * Answers to the run's interrupts, by the namespace of the node that asked, in order (the durable runtime passes
   * them on resume; see `BackpackNode.interrupt`).
   */
  answers?: ReadonlyMap<string, readonly unknown[]>;
  /**
   * Whether an answer in `answers` answers the question its node asks now (see RunControls.sameQuestion): the durable
   * runtime compares it with the question recorded with the answer.
   */
  sameQuestion?: RunControls['sameQuestion'];
  /** This run is a fork of another run's step (reported by `run.started`; a fork is not a resume). */
  forkedFrom?: { runId: string; step: number };
  /**
   * Resumes a run whose last step ended the flow, with the action that step's node returned (the durable runtime
   * passes it when a run's writer died before recording its end): no node runs, and the flow's own `post` gives the
   * run's action. Not with `resume`.
   */
  resumeAtEnd?: { action: string };
}

/** Seals the internal flow node `nodeId` declared (see BackpackNode.buildInternalFlow): node code may not add to it. */
export let closeDeclaredFlow: (flow: Flow, nodeId: string) => void;

/**
 * A flow of BackpackNodes with graph-assigned namespaces (tech spec decision 5, DESIGN D4): `addNode(NodeClass,
 * config)` creates a node whose namespace is this flow's namespace plus the node's segment, bound to the flow's
 * Backpack and event streamer. The first node added is the entry unless `setEntryNode` says otherwise. Every step,
 * route and state access is reported as an event.
 */
export class Flow extends BaseFlow<any> {
  /** The flow's namespace ('' at the top level). */
  readonly namespace: string;
  /** Dependencies handed to every node. */
  readonly deps: DependencyLookup | undefined;
  /** The owner's Backpack, when this flow holds it (not for a flow that runs inside a node). */
  readonly #backpack: Backpack | undefined;
  /** The node this flow runs inside, as its handle. */
  readonly #parent: BackpackHandle | undefined;
  readonly #streamer: EventStreamer;
  /** Registers this flow's nodes with the Backpack (inside #parent's node, if any) and makes their handles. */
  readonly #registrar: NodeRegistrar;
  /** The nodes by id, in the order added, but for those of {@link #deferred}. */
  readonly #nodes = new Map<string, BaseNode>();
  /** A loaded flow's nodes, built on first use (see {@link deferNode}); they come before the others. */
  #deferred: Deferred | undefined;
  /**
   * The nodes whose namespace segment is not their id, by segment (for the others, the id is the segment, and ids are
   * unique): all that is needed to keep namespaces unique, without a map entry per node of a large flow.
   */
  readonly #ownSegments = new Map<string, string>();
  readonly #subflows: Flow[] = [];
  /** The flow this one is a subflow of (see {@link addSubflow}): then it holds the owner's Backpack privately. */
  #enclosing: Flow | undefined;
  #sealed = false;
  /** Set for the internal flow a node declared (buildInternalFlow): the node's id. */
  #declaredBy: string | undefined;

  static {
    streamerOf = (flow) => flow.#streamer;
    handleOf = (flow, node, eventContext) => flow.#registrar.handle(node, eventContext);
    startDeferring = (flow, source) => flow.#startDeferring(source);
    defer = (flow, NodeClass, id, position) => flow.#defer(NodeClass, id, position);
    place = (flow, position, node) => flow.#place(position, node);
    givesOwnerView = (flow) => flow.#parent === undefined && flow.#enclosing === undefined;
    parentOf = (flow) => flow.#parent;
    changeCheck = (flow, what) => flow.#checkChanger(what);
    // The library's checks of every route and entry change, whichever method makes it (the exported base methods
    // too) and whatever a node's class defines.
    setEntryGuard((flow, node) => {
      if (flow instanceof Flow) flow.#checkEntry(node);
    });
    setRouteGuard((from, action, to) => {
      if (from instanceof Flow) from.#checkRoute(action, to);
      else if (from instanceof BackpackNode) {
        checkNodeRoute(from, action, to);
        // A BackpackNode's mappings copy Backpack keys: they have a key's syntax.
        return backpackKeyProblem;
      }
      return undefined;
    });
    parentFlowOf = (flow) => {
      const parent = flow.#outermost().#parent;
      return parent === undefined ? undefined : handleFlows.get(parent);
    };
    rootOf = (flow) => {
      for (let at: Flow | undefined = flow; at !== undefined; at = parentFlowOf(at)) {
        if (at.#outermost().#parent === undefined) return at.#outermost();
      }
      return undefined; // a flow built on a handle no flow made (the owner's registerNode): no run of ours holds it
    };
  }

  constructor(options: FlowOptions = {}) {
    const given = options.backpack;
    const parent = given instanceof BackpackHandle ? given : undefined;
    let namespace = options.namespace ? checkNamespace(options.namespace, 'Flow namespace') : '';
    if (parent) {
      const own = parent.identity.namespace;
      if (namespace === '') namespace = own;
      else if (namespace !== own && !namespace.startsWith(`${own}.`)) namespace = composeNamespace(own, namespace);
    }
    super({ id: options.id ?? (namespace || 'flow'), maxSteps: options.maxSteps, onMissingRoute: options.onMissingRoute });
    this.namespace = namespace;
    this.#streamer = options.eventStreamer ?? new EventStreamer();
    this.deps = options.deps;
    this.#parent = parent;
    if (options.initialData !== undefined && given !== undefined) {
      throw new FlowError(`Flow '${this.id}': initialData fills the Backpack the flow creates; with a given backpack, pack the data into it (or pass it to run(input))`);
    }
    this.#backpack = parent ? undefined : given instanceof Backpack ? given : new Backpack(options.initialData, { ...options.backpackOptions, eventStreamer: this.#streamer });
    this.#registrar = nodeRegistrar(parent ?? this.#backpack!);
  }

  /**
   * The Backpack every node of the flow shares: the owner's view, for the code that built the flow. A flow that runs
   * inside a node (an internal flow, a tool's flow, a nested `loadFlow`) does not give it out: read state there
   * through the node's handle.
   */
  get backpack(): Backpack {
    if (this.#backpack === undefined) {
      throw new FlowError(`Flow '${this.id}' runs inside node '${this.#parent!.identity.nodeId}': its Backpack is the owner's; read state through the node's handle`);
    }
    this.#refuseSubflow('Backpack', 'backpack');
    return this.#backpack;
  }

  /**
   * The stream every event of the flow goes to (the owner's). A flow that runs inside a node, and a subflow, do not
   * give it out.
   */
  get eventStreamer(): EventStreamer {
    if (this.#parent !== undefined) {
      throw new FlowError(`Flow '${this.id}' runs inside node '${this.#parent.identity.nodeId}': its events are read through that node's eventStreamer view`);
    }
    this.#refuseSubflow('event streamer', 'eventStreamer');
    return this.#streamer;
  }

  /** The flow this one is a subflow of, at any depth, or this flow. */
  #outermost(): Flow {
    return this.#enclosing === undefined ? this : this.#enclosing.#outermost();
  }

  /** A subflow is reachable from node code (it is a route's target): it keeps the owner's `what` to itself. */
  #refuseSubflow(what: string, property: string): void {
    const top = this.#outermost();
    if (top !== this) {
      throw new FlowError(`Flow '${this.id}' is a subflow of flow '${top.id}': it does not give out the owner's ${what} (node code can reach a subflow through routes); use flow '${top.id}'.${property}`);
    }
  }

  /**
   * Loads a flow from its JSON config with the node types registered on the loader (default: the package's default
   * FlowLoader). Refuses an invalid config with every problem and its JSON path.
   */
  static fromConfig(config: unknown, options: { loader?: FlowConfigLoader; deps?: unknown } = {}): Promise<Flow> {
    const loader = options.loader ?? defaultConfigLoader;
    if (!loader) return Promise.reject(new FlowError('Flow.fromConfig: no flow loader is set; pass { loader } or import the package entry point'));
    return loader.loadFlow(config, options.deps);
  }

  /**
   * Creates a node of `NodeClass` with `config`, composes its namespace (config segment, else the class's static
   * `namespaceSegment`, else the id), registers its permissions with the Backpack and returns it.
   *
   * The node's identity is the flow's to give, not its class's: its id, its namespace and, when `config` has
   * `permissions`, its access rules are taken from `config`, copied before the class's constructor runs (which is
   * node code). A node whose constructor handed `super` another id or namespace, or assigned its `id` or `namespace`,
   * is refused with a FlowError; the namespace segment and rules it handed `super` are replaced by the caller's, so
   * `node.config` and `exportFlow` show what the flow registered. Once added, a node's `id`, `namespace` and retry
   * settings are read-only. The node's own `permissions` (in the config it hands `super`, an instance field or getter,
   * or `static permissions`) apply when `config` has none.
   */
  addNode<T extends BackpackNode>(NodeClass: BackpackNodeClass<T>, config: BackpackNodeConfig): T {
    this.#checkOpen('add a node');
    refuseProxyClass(this, NodeClass);
    if (typeof NodeClass !== 'function' || (NodeClass !== BackpackNode && !(NodeClass.prototype instanceof BackpackNode))) {
      throw new TypeError(`Flow '${this.id}': addNode takes a BackpackNode class, got ${String(NodeClass)}`);
    }
    // The caller's config, copied before the class's constructor (node code) can change it: the node's id, namespace
    // and rules are the flow author's.
    const given: BackpackNodeConfig = config !== null && typeof config === 'object' ? { ...config } : config;
    // The class's code (its static getters, its constructor) runs as no node: see asBuilder.
    const { node, segment, namespace, registration } = asBuilder(undefined, () => {
      const { segment, namespace } = this.#checkNew(NodeClass, given?.id, given?.namespaceSegment ?? NodeClass.namespaceSegment);
      const id = given.id;
      if (given.permissions !== undefined) given.permissions = checkPermissions(id, given.permissions);
      const node = refuseProxy(this, NodeClass, id, new NodeClass({ ...given }, { namespace, flow: flowToken(this), deps: this.deps }));
      // What may run node code (a class's `name` or `permissions` getter) is read before the node is checked and locked.
      const registration = { nodeId: id, nodeName: NodeClass.name, namespace, permissions: given.permissions ?? nodePermissions(node) };
      return { node, segment, namespace, registration };
    });
    const id = registration.nodeId;
    const nodeName = registration.nodeName;
    lockNode(this, nodeName, node, given, namespace);
    // The node keeps its registration (no binding object per node): mappings on its routes are committed as the node
    // (see applyMappings).
    bindNode(node, this.#registrar.register(registration), this);
    this.#nodes.set(id, node);
    if (segment !== id) this.#ownSegments.set(segment, id);
    if (!this.entryNode) super.setEntryNode(node);
    return node;
  }

  /**
   * The checks of a node about to be added (as `id`, with namespace segment `own` or its id), with addNode's errors:
   * its id, its uniqueness, its segment, and that no other node of the flow has that segment. Returns its segment
   * and full namespace.
   */
  #checkNew(NodeClass: BackpackNodeClass, id: unknown, own: string | undefined): { segment: string; namespace: string } {
    if (typeof id !== 'string' || id === '') {
      throw new TypeError(`Flow '${this.id}': addNode(${NodeClass.name}, config) needs config.id, a non-empty string`);
    }
    if (this.#has(id)) {
      throw new FlowError(`Flow '${this.id}' already has a node with id '${id}': node ids must be unique within a flow`);
    }
    const segment = checkSegment(own ?? id, `Namespace segment of node '${id}'`);
    const namespace = composeNamespace(this.namespace, segment);
    // Another node with this segment: one that chose it, or (for a node that chose its own) the node of that id
    // (a node built on first use has its id as its segment).
    const named = segment === id ? undefined : this.#nodes.get(segment);
    const holder =
      this.#ownSegments.get(segment) ??
      (named instanceof BackpackNode && named.namespace === namespace ? named.id : segment !== id && this.#reservedAt(segment) !== undefined ? segment : undefined);
    if (holder !== undefined) {
      throw new FlowError(
        `Nodes '${holder}' and '${id}' of flow '${this.id}' would share namespace '${namespace}': ` +
          `give one of them its own segment with config.namespaceSegment`,
      );
    }
    const subflow = this.#subflows.find((sub) => atOrUnder(namespace, sub.namespace));
    if (subflow !== undefined) {
      throw new FlowError(
        `Node '${id}' (namespace '${namespace}') of flow '${this.id}' overlaps subflow '${subflow.id}' ('${subflow.namespace}'): ` +
          "namespaces are unique within a flow, and one's nodes may not sit under another's; give the node its own segment with config.namespaceSegment",
      );
    }
    return { segment, namespace };
  }

  /** The id of the node of this flow whose namespace segment is `segment` (added, or built on first use), if any. */
  #segmentHolder(segment: string): string | undefined {
    const chosen = this.#ownSegments.get(segment);
    if (chosen !== undefined) return chosen;
    const named = this.#nodes.get(segment);
    if (named instanceof BackpackNode && named.namespace === composeNamespace(this.namespace, segment)) return named.id;
    return this.#reservedAt(segment) !== undefined ? segment : undefined;
  }

  /** See {@link deferNodes}. */
  #startDeferring(source: DeferredNodes): void {
    if (this.#deferred !== undefined || this.#nodes.size > 0) throw new FlowError(`Flow '${this.id}': nodes built on first use are the flow's first nodes, listed once`);
    this.#deferred = {
      source,
      added: 0,
      reserved: this.#registrar.reservations(this.namespace, {
        position: (id) => this.#reservedAt(id),
        idAt: (at) => this.#reservedIdAt(at),
        actor: (id) => nodeBinding(this.#node(id)!, this)!,
      }),
    };
  }

  /** See {@link deferNode}. */
  #defer(NodeClass: BackpackNodeClass, id: string, position: number): boolean {
    const deferred = this.#deferred;
    if (deferred === undefined || position < deferred.added || !this.entryNode) {
      throw new FlowError(`Flow '${this.id}': node '${String(id)}' cannot be built on first use here (the entry node, or out of order)`);
    }
    this.#checkOpen('add a node');
    refuseProxyClass(this, NodeClass);
    // The class's statics are its code: read as no node (see asBuilder), not as the node whose step builds this one.
    const { segment, name } = asBuilder(undefined, () => ({ segment: typeof NodeClass === 'function' ? NodeClass.namespaceSegment : undefined, name: typeof NodeClass === 'function' ? NodeClass.name : '' }));
    if (typeof NodeClass !== 'function' || !(NodeClass.prototype instanceof BackpackNode) || segment !== undefined) {
      throw new TypeError(`Flow '${this.id}': a node built on first use is of a BackpackNode class without a namespaceSegment, got ${String(NodeClass)}`);
    }
    asBuilder(undefined, () => this.#checkNew(NodeClass, id, undefined));
    if (deferred.source.position(id) !== position) throw new FlowError(`Flow '${this.id}': node '${id}' is not at position ${position} of its config`);
    if (!this.#registrar.reserve(deferred.reserved, id, name, position)) return false;
    deferred.added = position + 1;
    return true;
  }

  /** See {@link placeNode}. */
  #place(position: number, node: BaseNode | undefined): void {
    const deferred = this.#deferred;
    if (deferred === undefined || position < deferred.added || (node !== undefined && this.#nodes.get(node.id) !== node)) {
      throw new FlowError(`Flow '${this.id}': cannot place a node at position ${position}`);
    }
    deferred.source.entries[position] = node;
    deferred.added = position + 1;
  }

  /** True when the flow has a node with id `id` (built or not). */
  #has(id: string): boolean {
    if (this.#nodes.has(id)) return true;
    const deferred = this.#deferred;
    if (deferred === undefined) return false;
    const at = deferred.source.position(id);
    return at !== undefined && at < deferred.added && deferred.source.entries[at] !== undefined;
  }

  /** The position of node `id` when it was added to be built on first use (built since or not), else undefined. */
  #reservedAt(id: string): number | undefined {
    const deferred = this.#deferred;
    if (deferred === undefined) return undefined;
    const at = deferred.source.position(id);
    return at !== undefined && this.#reservedIdAt(at) === id ? at : undefined;
  }

  /** The id of the node added at `position` to be built on first use (built since or not), else undefined. */
  #reservedIdAt(position: number): string | undefined {
    const deferred = this.#deferred;
    if (deferred === undefined || position >= deferred.added) return undefined;
    const entry = deferred.source.entries[position];
    if (entry === undefined) return undefined;
    if (!(entry instanceof BaseNode)) return deferred.source.idOf(entry);
    // A node the loader added at once is in #nodes; one built here is not.
    return this.#nodes.get(entry.id) === entry ? undefined : entry.id;
  }

  /** The node `id`, built now if it was added to be built on first use; undefined when there is none. */
  #node(id: string): BaseNode | undefined {
    const added = this.#nodes.get(id);
    if (added !== undefined) return added;
    const deferred = this.#deferred;
    const at = deferred?.source.position(id);
    if (deferred === undefined || at === undefined || at >= deferred.added) return undefined;
    return this.#nodeAt(deferred, at);
  }

  /** The node at `position` of the loaded nodes (built now if it is not yet), or undefined. */
  #nodeAt(deferred: Deferred, position: number): BaseNode | undefined {
    const entry = deferred.source.entries[position];
    if (entry === undefined || entry instanceof BaseNode) return entry;
    const { NodeClass, config } = deferred.source.build(entry);
    const id = config.id;
    const namespace = composeNamespace(this.namespace, id);
    // The class's code runs as no node (see asBuilder), whoever first reached for the node.
    const { node, nodeName } = asBuilder(undefined, () => {
      const node = refuseProxy(this, NodeClass, id, new NodeClass(config, { namespace, flow: flowToken(this), deps: this.deps }));
      return { node, nodeName: NodeClass.name };
    });
    // Its access rules are its registration's, made when it was added (none: its class and config gave none then), as
    // for a node built then: rules a class is given later change neither.
    if (node.id !== id) throw new FlowError(`Flow '${this.id}': node '${id}' was added to be built on first use, but its class gives it id '${node.id}'`);
    lockNode(this, nodeName, node, config, namespace);
    bindNode(node, this.#registrar.adopt(deferred.reserved, id, nodeName), this);
    deferred.source.entries[position] = node;
    return node;
  }

  /** Every node id, in the order added (building no node). */
  #ids(): string[] {
    return this.#walk(
      (deferred, at) => {
        const entry = deferred.source.entries[at];
        return entry === undefined || entry instanceof BaseNode ? entry?.id : deferred.source.idOf(entry);
      },
      (node) => node.id,
    );
  }

  /**
   * The flow's nodes in the order added, as `loaded` gives the one at a position of the loaded nodes (skipped when
   * undefined) and `later` any other (added after the loaded ones; the loader's own are in #nodes and at their position).
   */
  #walk<T>(loaded: (deferred: Deferred, position: number) => T | undefined, later: (node: BaseNode) => T): T[] {
    const deferred = this.#deferred;
    const out: T[] = [];
    if (deferred !== undefined) {
      for (let at = 0; at < deferred.added; at++) {
        const item = loaded(deferred, at);
        if (item !== undefined) out.push(item);
      }
    }
    for (const node of this.#nodes.values()) {
      const at = deferred?.source.position(node.id);
      if (at === undefined || at >= deferred!.added || deferred!.source.entries[at] !== node) out.push(later(node));
    }
    return out;
  }

  /** Makes `node` (or the node added with that id, as BackpackFlow v2 allowed) the entry node. */
  override setEntryNode(node: BaseNode | string): this {
    if (typeof node === 'string') {
      this.#checkOpen('change the entry node');
      const found = this.#node(node) ?? this.#subflows.find((sub) => sub.id === node);
      if (!found) throw new FlowError(`Flow '${this.id}': no node with id '${node}' to make the entry node (nodes: ${this.#ids().join(', ') || 'none'})`);
      return super.setEntryNode(found);
    }
    return super.setEntryNode(node);
  }

  /** See {@link setEntryNode}: checked by BaseFlow's `setEntryNode`, however it is called (its entry guard). */
  #checkEntry(node: BaseNode): void {
    this.#checkOpen('change the entry node');
    if (node instanceof BackpackNode && this.#node(node.id) !== node) {
      throw new FlowError(`Flow '${this.id}': entry node '${node.id}' was not added to this flow (use flow.addNode)`);
    }
    const problem = stepProblem(node);
    if (problem !== undefined) throw new FlowError(`Flow '${this.id}': cannot make it the entry node: ${problem}`);
  }

  /**
   * Routes from this flow as a node (a BackpackNode or a subflow; see BaseNode.on) are refused once the flow has run,
   * and from another node's code: checked by BaseNode's `on`, however it is called.
   */
  #checkRoute(action: string, node: BaseNode): void {
    if (this.#sealed || this.#enclosing?.sealed) throw new FlowError(`Flow '${this.id}' ${this.sealedBecause}: its routes cannot change`);
    this.#checkChanger('add a route');
    const problem = stepProblem(node);
    if (problem !== undefined) throw new FlowError(`Flow '${this.id}', route '${String(action)}': ${problem}`);
  }

  /**
   * As a subflow: only as a step its enclosing flow takes (node code reaches subflows through routes). A flow that
   * runs inside a node likewise runs as a step only when its flow takes it (else with `run()`, from that node).
   */
  override _run(shared: unknown, scope: RunScope): Promise<string | undefined> {
    if (this.#enclosing !== undefined && !takeStep(this, scope)) {
      return Promise.reject(new FlowError(`Flow '${this.id}' is a subflow of flow '${this.#enclosing.id}': it runs only as a step of that flow (a route to it), not directly`));
    }
    if (this.#enclosing === undefined && this.#parent !== undefined && !takeStep(this, scope)) {
      return Promise.reject(new FlowError(`Flow '${this.id}' runs inside node '${this.#parent.identity.nodeId}': run it with run() from that node's prep, exec or post`));
    }
    return this.#enter(shared, enterScope(scope, this.id));
  }

  /** Runs the flow with `scope`, a scope made for it here (see {@link execute}). */
  #enter(shared: unknown, scope: RunScope): Promise<string | undefined> {
    entries.set(scope, this);
    return this.execute(shared as Backpack | BackpackHandle | undefined, scope);
  }

  /**
   * Runs one step of this flow's run (`scope`, the scope of an orchestration the engine started): one of its own
   * nodes or subflows (anything else is refused, whatever put it in the graph), with no shared state: a node works
   * through its own handle. It is run by BackpackNode's (or Flow's) own `_run`: a subclass's override is not called.
   */
  protected override runStep(node: BaseNode, _shared: unknown, scope: RunScope): Promise<string | undefined> {
    if (orchestrations.get(scope) !== this) return Promise.reject(notOrchestrating(this, 'take a step'));
    const problem = stepProblem(node);
    if (problem !== undefined) return Promise.reject(new FlowError(`Flow '${this.id}' cannot run it: ${problem}`));
    const own = node instanceof BackpackNode ? nodeBinding(node, this) !== undefined : this.#subflows.includes(node as Flow);
    if (!own) {
      return Promise.reject(new FlowError(`Flow '${this.id}' cannot run '${node.id}' as a step: it was not added to this flow (a route leads only to nodes and subflows of the route's own flow)`));
    }
    grantStep(node, scope);
    // The library's own step, whatever a class defines as `_run`: the engine's scope (and its run's controls) reaches
    // no node code.
    return node instanceof BackpackNode ? BackpackNode.prototype._run.call(node, undefined, scope) : Flow.prototype._run.call(node, undefined, scope);
  }

  /** The node added with `id`, or undefined. */
  getNode(id: string): BaseNode | undefined {
    return this.#node(id);
  }

  /** Every node added to this flow, in the order added. */
  getAllNodes(): BaseNode[] {
    return this.#walk((deferred, at) => this.#nodeAt(deferred, at), (node) => node);
  }

  /** Why the flow is {@link sealed}: it has run, or it is a node's declared internal flow (complete once declared). */
  get sealedBecause(): string {
    return this.#declaredBy === undefined ? 'has already run' : `is the internal flow node '${this.#declaredBy}' declared (buildInternalFlow), complete once declared`;
  }

  /** True once the flow has run (or is a node's declared internal flow): its nodes and routes can no longer change. */
  get sealed(): boolean {
    return this.#sealed;
  }

  /**
   * A flow nested under this one's namespace (`namespace` is a segment, or several), sharing its Backpack and
   * event streamer. Route to it like to any node.
   */
  addSubflow(options: { namespace: string; id?: string; maxSteps?: number; onMissingRoute?: MissingRoutePolicy }): Flow {
    this.#checkOpen('add a subflow');
    const segment = checkNamespace(options.namespace, `Subflow namespace of flow '${this.id}'`);
    // Namespaces are unique (D4): a subflow's nodes under a node's namespace would be taken for parts of that node
    // (what it may see of their events, what runs inside it).
    const namespace = composeNamespace(this.namespace, segment);
    const holder = this.#segmentHolder(segment.split('.')[0]!);
    const other = this.#subflows.find((sub) => atOrUnder(sub.namespace, namespace) || atOrUnder(namespace, sub.namespace));
    if (holder !== undefined || other !== undefined) {
      throw new FlowError(
        `Flow '${this.id}': subflow namespace '${namespace}' overlaps ${holder !== undefined ? `node '${holder}'` : `subflow '${other!.id}' ('${other!.namespace}')`}: ` +
          "namespaces are unique within a flow, and one's nodes may not sit under another's; give the subflow another namespace",
      );
    }
    const subflow = new Flow({
      id: options.id ?? segment,
      namespace,
      backpack: this.#parent ?? this.#backpack,
      eventStreamer: this.#streamer,
      deps: this.deps,
      maxSteps: options.maxSteps ?? this.maxSteps,
      onMissingRoute: options.onMissingRoute ?? this.onMissingRoute,
    });
    subflow.#enclosing = this;
    this.#subflows.push(subflow);
    // Node code reaches a subflow through routes: it may not change what the subflow runs (README: threat model).
    Object.freeze(subflow);
    return subflow;
  }

  /** The subflows added with `addSubflow`, in order. */
  getSubflows(): Flow[] {
    return [...this.#subflows];
  }

  /**
   * The internal flow of a composite node of this flow: it runs inside the node (see
   * {@link BackpackNode.createNestedFlow}) with this flow's dependencies and (unless overridden) its step limit and
   * missing-route policy.
   */
  createChildFlow(node: BackpackNode, overrides: { maxSteps?: number; onMissingRoute?: MissingRoutePolicy } = {}): Flow {
    if (this.#node(node.id) !== node) throw new FlowError(`Flow '${this.id}': node '${node.id}' was not added to this flow`);
    return node.createNestedFlow({ maxSteps: overrides.maxSteps ?? this.maxSteps, onMissingRoute: overrides.onMissingRoute ?? this.onMissingRoute });
  }

  /**
   * Runs the flow. `input` entries are packed into the Backpack first (by the owner, attributed to no node). A flow
   * built on a node's handle (a composite's internal flow) runs as part of that node's execution: same run, nested
   * span. A flow with a Backpack of its own is a run of its own wherever it is run from, reported by `run.started`
   * and `run.completed`, `run.waiting` or `run.failed`; it goes on from the state the flow's last run left, and a
   * FlowError refuses it while another run of this flow is under way (two runs would share one state).
   */
  override async run(input?: Record<string, unknown>, options: FlowRunOptions = {}): Promise<string | undefined> {
    if (input instanceof BaseNode) {
      throw new FlowError(
        `Flow '${this.id}': run(node, input) is the BackpackFlow v2 call shape; here run(input) starts at the entry node. ` +
          `Call flow.setEntryNode(${input instanceof BackpackNode ? `'${input.id}'` : 'node'}) before the first run, then flow.run(input) (see MIGRATING.md)`,
      );
    }
    const parent = currentExecution.getStore();
    if (this.#enclosing !== undefined) {
      // Reachable from node code through routes: a run of its own would pack `input` as the owner.
      throw new FlowError(`Flow '${this.id}' is a subflow of flow '${this.#enclosing.id}': it runs as a step of that flow (route to it), not on its own`);
    }
    if (this.#parent !== undefined && (parent === undefined || parent.handle === undefined || !sameNode(parent.handle, this.#parent))) {
      // Outside its node's execution a nested flow would be a run of its own, under any run id its caller gives, on
      // the owner's event stream: node code could announce runs that never happened. Inside another node's execution,
      // that node's code would act as this flow's node.
      throw new FlowError(`Flow '${this.id}' runs inside node '${this.#parent.identity.nodeId}': run it from that node's prep, exec or post, as part of the node's run`);
    }
    if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) {
      throw new TypeError(`Flow '${this.id}': run(input) takes an object of backpack keys to values`);
    }
    if (this.#parent !== undefined) {
      // A nested flow (a composite's internal flow, a flow tool's): part of its node's execution (checked above), its
      // input packed by that node.
      if (input !== undefined) for (const [key, value] of Object.entries(input)) this.#parent.pack(key, value);
      return this.#enter(this.#parent, enterScope(parent!.scope, parent!.node.id, { spanId: parent!.spanId }));
    }
    // A flow with a Backpack of its own is a run of its own wherever it is run from, a node's code included (as part
    // of another run, it would pack its input as the owner into a state another run may be using, and a durable run
    // would record nothing). Taken (see TopLevelRun) before its input is packed, and its id chosen first, so that the
    // events of packing its input carry it.
    const runId = options.runId ?? newRunId();
    const topLevel = this.#takeTopLevel(runId, (options as { [CLAIM]?: TopLevelRun })[CLAIM]);
    if (input !== undefined) {
      try {
        for (const [key, value] of Object.entries(input)) packInRun(this.#backpack!, runId, key, value);
      } catch (error) {
        topLevel.phase = 'ended';
        throw error;
      }
    }
    // Outside the execution of whichever node's code called it (if any): a run of its own, whose nodes' pauses and
    // steps are its own, not that node's (which may end before it).
    return currentExecution.exit(() => this.#runTopLevel({ ...options, runId }, topLevel));
  }

  /** The top-level run this call starts (see TopLevelRun): a FlowError while another is under way, or a durable run took the flow. */
  #takeTopLevel(runId: string | undefined, claim: TopLevelRun | undefined): TopLevelRun {
    const run = topLevelRuns.get(this);
    if (run !== undefined && run.phase === 'claimed' && claim === run) {
      run.phase = 'running';
      return run;
    }
    if (run !== undefined && (run.phase === 'claimed' || run.phase === 'running')) throw new FlowError(usedFlowMessage(this, run, 'run'));
    const taken: TopLevelRun = { by: 'flow.run', runId, phase: 'running' };
    topLevelRuns.set(this, taken);
    return taken;
  }

  async #runTopLevel(options: FlowRunOptions, topLevel: TopLevelRun): Promise<string | undefined> {
    try {
      return await this.#runOnce(options, topLevel);
    } finally {
      topLevel.phase = 'ended';
    }
  }

  async #runOnce(options: FlowRunOptions, topLevel: TopLevelRun): Promise<string | undefined> {
    markRunStarted();
    const runId = options.runId!;
    topLevel.runId = runId;
    const spanId = newSpanId();
    // Answers belong to the node execution at the run's position (the entry, or the resume position): spent at the
    // run's first step boundary, as the log reader (`pendingAnswers`) drops them at each checkpoint. A later execution
    // of the same node (a loop, a composite run again) asks again. A copy: the caller's map is not emptied.
    const answers = options.answers?.size ? new Map(options.answers) : undefined;
    const fields: RunScope = { ...ROOT_SCOPE, runId, spanId, signal: options.signal };
    const started = performance.now();
    let steps = 0;
    // A step is a resumable position: a nested flow's last node belongs to its enclosing node's step (as in a durable run's checkpoints).
    const count = (b: StepBoundary): void => {
      if (b.next !== undefined || b.path.length === 0) {
        steps++;
        answers?.clear();
      }
    };
    if (options.resumeAtEnd !== undefined && options.resume?.length) throw new FlowError(`Flow '${this.id}': resumeAtEnd resumes after the last step, so it takes no resume position`);
    const atEnd = options.resumeAtEnd === undefined ? undefined : { action: options.resumeAtEnd.action, taken: false };
    const controls: RunControls = { resume: options.resume, answers, sameQuestion: options.sameQuestion, atEnd, onStep: options.onStep ? (b) => (count(b), options.onStep!(b)) : count };
    const countingScope = makeScope(fields, controls);
    this.#streamer.emit({
      type: StreamEventType.RUN_START,
      runId,
      spanId,
      namespace: this.namespace || undefined,
      payload: {
        flowNamespace: this.namespace,
        entryNodeId: this.entryNode?.id ?? null,
        resumed: (Boolean(options.resume?.length) || atEnd !== undefined) && options.forkedFrom === undefined,
        ...(options.forkedFrom ? { forkedFrom: options.forkedFrom } : {}),
      },
    });
    try {
      await options.onStart?.();
      const action = await this.#enter(this.#parent ?? this.#backpack!, countingScope);
      this.#streamer.emit({
        type: StreamEventType.RUN_END,
        runId,
        spanId,
        namespace: this.namespace || undefined,
        payload: { durationMs: performance.now() - started, steps, action: action ?? 'default' },
      });
      return action;
    } catch (thrown) {
      const base = { runId, spanId, namespace: this.namespace || undefined };
      // Only a pause a node's interrupt() made in this run is one (see RunInterrupted), recorded as interrupt() captured it.
      const error = unlessForged(thrown, controls, `Flow '${this.id}'`);
      const paused = pauseInfo(error);
      if (paused !== undefined) {
        // Paused for a person: not a failure. The run waits (a durable run records it and can be resumed).
        this.#streamer.emit({ ...base, type: StreamEventType.RUN_WAITING, payload: { durationMs: performance.now() - started, steps, interrupt: paused } });
      } else {
        const payload: Record<string, unknown> = { durationMs: performance.now() - started, steps, error: describeError(error) };
        if (wasReported(error)) payload.reported = true;
        // Stopped by its own signal (the caller's abort): not a failure of the run, which resumes from where it stopped.
        if (isRunAbort(error, options.signal)) payload.aborted = true;
        this.#streamer.emit({ ...base, type: StreamEventType.RUN_ERROR, payload });
      }
      throw error;
    }
  }

  /**
   * Runs the flow (prep, the orchestration, post) with a scope made for it by its own `run` or `_run`, once; any other
   * call is refused (node code reaches flows, and this method is a plain JS method): only then may it take steps.
   */
  protected override execute(shared: Backpack | BackpackHandle | undefined, scope: RunScope): Promise<string | undefined> {
    if (entries.get(scope) !== this) {
      return Promise.reject(new FlowError(`Flow '${this.id}' runs with run() (or as a step its flow takes), not through execute()`));
    }
    entries.delete(scope);
    orchestrations.set(scope, this);
    this.#seal();
    return super.execute(shared, scope).finally(() => orchestrations.delete(scope));
  }

  /** Follows routes from the entry (see BaseFlow): only in a run of this flow (see {@link execute}). */
  protected override _orchestrate(shared: unknown, scope: RunScope): Promise<string | undefined> {
    if (orchestrations.get(scope) !== this) return Promise.reject(notOrchestrating(this, 'follow its routes'));
    return super._orchestrate(shared, scope);
  }

  /** Seals this flow and its subflows: node code reaches subflows through routes, and may not add to them mid-run. */
  #seal(): void {
    this.#sealed = true;
    for (const sub of this.#subflows) sub.#seal();
  }

  static {
    closeDeclaredFlow = (flow, nodeId) => {
      flow.#declaredBy = nodeId;
      flow.#seal();
    };
  }

  /**
   * Edge data mappings (`from.on(action, to, { mappings })`, `edges[].mappings` in JSON): when the route is taken,
   * before `to` runs, each target key gets the value of its source key, as a commit **made by `from`** through its
   * own handle, exactly as if its `post` had called `pack(target, unpackRequired(source))`. So a mapping can do
   * nothing the source node could not do itself: the read and the write are checked against its permissions (D9),
   * the commit carries its id, class and namespace, the copy keeps the source item's own access rules (whoever an
   * item rule kept out of `results` is kept out of `documents` too), and it is tagged `mapped-from:<source>`. Every
   * source is read before any target is written (so `{ a: 'b', b: 'a' }` swaps). A source the node cannot read
   * (missing, or refused) fails the step with a FlowError naming the route: a copy left from an earlier pass of a
   * loop is never passed on as if it were new. A route from a subflow maps as the flow's own actor (the owner, or the
   * node the flow runs inside), the one that packs `run(input)`. The copy is part of the step that took the route,
   * so a durable run's checkpoint of that step holds it.
   */
  protected override applyMappings(from: BaseNode, action: string, to: BaseNode, mappings: RouteMappings, _shared: unknown, scope: RunScope): void {
    if (orchestrations.get(scope) !== this) throw notOrchestrating(this, 'copy mapped keys');
    const registered = nodeBinding(from, this);
    const context = { runId: scope.runId, spanId: scope.spanId };
    const actor: Pick<BackpackHandle, 'unpackRequired' | 'getItem' | 'pack'> = registered ? this.#registrar.handle(registered, context) : this.#parent ?? this.#backpack!;
    const who = registered ? `node '${from.id}'` : this.#parent ? `node '${this.#parent.identity.nodeId}'` : 'the owner';
    const route = `Flow '${this.id}': route '${from.id}' -(${action})-> '${to.id}'`;
    const copies = Object.entries(mappings).map(([source, target]) => {
      try {
        const value = actor.unpackRequired(source);
        return { source, target, value, accessControl: actor instanceof BackpackHandle ? itemRuleOf(actor, source) : actor.getItem(source)?.accessControl };
      } catch (error) {
        throw new FlowError(`${route} maps '${source}' to '${target}', but ${who} cannot read '${source}': ${(error as Error).message}`, { cause: error });
      }
    });
    for (const { source, target, value, accessControl } of copies) {
      try {
        actor.pack(target, value, { tags: [`mapped-from:${source}`], ...(accessControl ? { accessControl } : {}) });
      } catch (error) {
        throw new FlowError(`${route} maps '${source}' to '${target}', but ${who} cannot write '${target}': ${(error as Error).message}`, { cause: error });
      }
    }
  }

  /**
   * Counts of the flow's structure and use: nodes (at every level: this flow's, its subflows' and its composites'
   * internal flows'), routes, composite nodes, subflows, nesting depth (0 without composites; as `getMaxDepth`),
   * executions of this flow and the steps they took (its own nodes' steps, not those of flows nested in it), and
   * for a flow holding the owner's Backpack, the number of active keys.
   */
  getStats(): FlowStats {
    const stats: FlowStats = {
      namespace: this.namespace,
      nodeCount: 0,
      edgeCount: 0,
      compositeNodeCount: 0,
      subflowCount: 0,
      maxDepth: 0,
      hasEntryNode: this.entryNode !== undefined,
      executions: this.executions,
      stepsRun: this.stepsRun,
    };
    const visit = (flow: Flow, depth: number): void => {
      stats.maxDepth = Math.max(stats.maxDepth, depth);
      for (const node of [...flow.getAllNodes(), ...flow.getSubflows()]) stats.edgeCount += routeOf(node, undefined).count;
      for (const node of flow.getAllNodes()) {
        stats.nodeCount++;
        const inner = node instanceof BackpackNode ? node.internalFlow : undefined;
        if (inner) {
          stats.compositeNodeCount++;
          visit(inner, depth + 1);
        }
      }
      for (const sub of flow.getSubflows()) {
        stats.subflowCount++;
        visit(sub, depth);
      }
    };
    visit(this, 0);
    if (givesOwnerView(this)) stats.backpackSize = this.#backpack!.size;
    return stats;
  }

  protected override routeTaken(from: BaseNode, action: string, to: BaseNode, scope: RunScope): void {
    if (orchestrations.get(scope) !== this) throw notOrchestrating(this, 'report a route');
    const { mappings } = routeOf(from, action);
    this.#streamer.emit({
      type: StreamEventType.ROUTE,
      runId: scope.runId,
      parentSpanId: scope.spanId,
      nodeId: from.id,
      namespace: namespaceOf(from, this.namespace),
      payload: mappings ? { action, from: from.id, to: to.id, mappings: { ...mappings } } : { action, from: from.id, to: to.id },
    });
  }

  protected override routeMissing(from: BaseNode, action: string, scope: RunScope): void {
    if (orchestrations.get(scope) !== this) throw notOrchestrating(this, 'report a route');
    if (this.onMissingRoute === 'end') return;
    if (this.onMissingRoute === 'throw') throw new FlowError(missingRouteMessage(this.id, from, action));
    this.#streamer.emit({
      type: StreamEventType.ROUTE_MISSING,
      runId: scope.runId,
      parentSpanId: scope.spanId,
      nodeId: from.id,
      namespace: namespaceOf(from, this.namespace),
      payload: { action, from: from.id, available: [...routeTable(from).keys()] },
    });
  }

  #checkOpen(what: string): void {
    if (this.#sealed) {
      throw new FlowError(`Flow '${this.id}' ${this.sealedBecause} and cannot change: cannot ${what}.${this.#declaredBy === undefined ? ' Build a new flow instead.' : ''}`);
    }
    this.#checkChanger(what);
  }

  /**
   * A flow that runs inside a node (a composite's internal flow, a nested flow, and their subflows) runs with that
   * node's rules: a node it holds reads what that node may read. Other nodes' code reaches it (through routes,
   * `internalFlow`) and can run between its creation and its first run (an event handler of theirs, when the run
   * packs its input; a timer): so only that node's own code, a node it runs inside, or code outside every execution
   * (the owner's) before the first run, may add to it or route in it. See {@link checkFlowChange}.
   */
  #checkChanger(what: string): void {
    const on = this.#parent ?? this.#outermost().#parent;
    if (on === undefined) return;
    const running = currentExecution.getStore();
    if (running === undefined) {
      if (!runHasStarted(this)) return;
      throw new FlowError(
        `Flow '${this.id}' runs inside node '${on.identity.nodeId}': code outside every node's execution cannot ${what} in it once its run has started (only that node's own code can; the owner builds it before the first run)`,
      );
    }
    // A node's own code: in its execution (its handle), or run by the library as that node outside a run (a
    // composite's buildInternalFlow: no handle).
    if (running.handle !== undefined ? sameNode(running.handle, on) : builtBy(on, running.node)) return;
    // A node's code on a flow inside it (a composite of a flow it built or loaded).
    if (flowInside(this, running.node)) return;
    throw new FlowError(`Node '${running.node.id}' cannot ${what} in flow '${this.id}': the flow runs inside node '${on.identity.nodeId}', and only that node's own code changes it`);
  }
}

/**
 * Scopes a flow's own `run` or `_run` made for it, each with that flow, until its `execute` takes it (see
 * {@link Flow.execute}).
 */
const entries = new WeakMap<RunScope, Flow>();
/**
 * The scopes of the orchestrations under way, each with its flow. `runStep`, `_orchestrate`, `applyMappings`,
 * `routeTaken` and `routeMissing` are protected only in TypeScript, and node code reaches flows (subflows and internal
 * flows through routes and `internalFlow`, flows it builds itself): each acts only for a scope here, with its own
 * flow, so node code cannot run a node out of its flow's order (a `publish` behind an `approve` that said no),
 * commit a mapping as another node, or report a route no run took. The engine's scopes reach no node code (a node
 * gets a copy, see BackpackNode's lifecycle).
 */
const orchestrations = new WeakMap<RunScope, Flow>();

function notOrchestrating(flow: Flow, what: string): FlowError {
  return new FlowError(`Flow '${flow.id}' cannot ${what} here: not in a run of this flow (a flow runs its own steps, with run() or as a step its flow takes)`);
}

/** `node`, unless its class's constructor returned a Proxy (whose traps would answer the flow's checks). */
function refuseProxy<T extends BackpackNode>(flow: Flow, NodeClass: BackpackNodeClass<T>, id: string, node: T): T {
  if (!reachesProxy(node)) return node;
  throw new FlowError(`Flow '${flow.id}': the constructor of node '${id}' of class ${NodeClass.name} returned a Proxy: a node class's constructor returns the node it built`);
}

/**
 * Refuses a node class with a Proxy in its constructor or prototype chain, before anything reads it: the library's
 * `instanceof` checks (here, in routing, in the guards) would run the Proxy's traps in whatever execution is current,
 * a composite's among them, where that class's code would act as the composite.
 */
export function refuseProxyClass(flow: Flow | undefined, NodeClass: unknown): void {
  if (!classReachesProxy(NodeClass)) return;
  throw new FlowError(`${flow === undefined ? '' : `Flow '${flow.id}': `}a node class with a Proxy in its prototype chain is refused (its traps would run as whichever node the library is acting for)`);
}

/** Whether `NodeClass` (a function) has a Proxy in its constructor chain or its prototype's chain; not a function: false. */
function classReachesProxy(NodeClass: unknown): boolean {
  if (typeof NodeClass !== 'function') return false;
  if (reachesProxy(NodeClass)) return true;
  // An own data property (a class's `prototype` is one): read without running a getter.
  const prototype = Object.getOwnPropertyDescriptor(NodeClass, 'prototype')?.value as unknown;
  return reachesProxy(prototype);
}

/** The fields of a node that the library sets and reads as its settings: read-only once added. */
const SETTINGS: ReadonlySet<PropertyKey> = new Set(['maxRetries', 'retryDelayMs']);

/**
 * Checks and locks a node its flow just built (its class's constructor is node code), before the flow binds it.
 *
 * Its identity is the flow's: its `id` and `namespace` must be those the flow gave it (own data fields, not
 * accessors; a constructor that passed `super` another id or namespace, or assigned them, is refused with a
 * FlowError). Its config's namespace segment, and its permissions when the caller gave some, are put back to those
 * of `given` (the caller's config), so that what the node shows and exports is what its flow registered.
 *
 * Node code reaches other nodes through routes, and may not change what another runs or who it is (README: threat
 * model). Sealed: no property can be added (an own `prep` over the class's), removed or redefined; a property holding
 * a function is read-only, and so are `id`, `namespace` and the retry settings (`config` and `params` are getters
 * without a setter). Other fields holding data stay writable, by the node's own code.
 */
function lockNode(flow: Flow, nodeName: string, node: BackpackNode, given: BackpackNodeConfig, namespace: string): void {
  lockNodeClass(node);
  holdContracts(node.constructor as BackpackNodeClass);
  const what = `node '${given.id}' of class ${nodeName}`;
  const problems: string[] = [];
  const locks: PropertyDescriptorMap = {};
  // Whether every own field is the library's or holds a function: then all are read-only, and freezing is cheaper.
  let onlyLocked = true;
  for (const key of Reflect.ownKeys(node)) {
    const own = Object.getOwnPropertyDescriptor(node, key)!;
    if (key === 'id' || key === 'namespace') continue;
    if (typeof own.value === 'function' || (own.writable === true && SETTINGS.has(key))) locks[key as string] = { writable: false };
    else onlyLocked = false;
  }
  for (const [key, want] of [['id', given.id], ['namespace', namespace]] as const) {
    const own = Object.getOwnPropertyDescriptor(node, key);
    if (own === undefined || !('value' in own)) problems.push(`its '${key}' is not a plain field`);
    else if (own.value !== want) problems.push(`its ${key} is ${JSON.stringify(own.value)}, not '${want}'`);
    locks[key] = { writable: false };
  }
  if (configOf(node).id !== given.id) problems.push(`the config it passed to super has id ${JSON.stringify(configOf(node).id)}`);
  if (problems.length > 0) {
    throw new FlowError(
      `Flow '${flow.id}': ${what} does not have the identity its flow gave it (${problems.join('; ')}): a node's id and namespace are its flow's; ` +
        'pass config and context on to super with their id and namespace (a class gives its nodes a segment with static namespaceSegment)',
    );
  }
  setConfigIdentity(node, given.namespaceSegment, given.permissions);
  if (onlyLocked) {
    Object.freeze(node);
  } else {
    Object.defineProperties(node, locks);
    Object.seal(node);
  }
}

/** The node classes {@link lockNodeClass} locked. */
const lockedClasses = new WeakSet<object>();

/** Statics the library reads of a node's class while it runs (contracts, masking, model providers, identity). */
const CLASS_READS: ReadonlySet<PropertyKey> = new Set(['inputs', 'outputs', 'paramsSchema', 'permissions', 'namespaceSegment', 'providers', 'name', 'fromConfig']);

/**
 * Locks the classes of a node its flow adds, from its own up to the library's (which are frozen, see seal.ts): node
 * code reaches them through the node (`Object.getPrototypeOf(node)`, `node.constructor`), and whatever it put there
 * would run as that node. Each prototype is hardened (frozen, its methods behind accessors that let an instance own a
 * property of the same name: see harden.ts); each class is made non-extensible (no new static, no
 * `Symbol.hasInstance`), with the statics the library reads ({@link CLASS_READS}) and every static that holds a
 * function or is an accessor read-only; a data static the library does not read (a counter, a cache) stays writable,
 * by the class's own code.
 */
function lockNodeClass(node: BackpackNode): void {
  // Up to the library's classes (hardened when their modules load), whether or not a class's prototype was frozen.
  for (let proto: object | null = Object.getPrototypeOf(node); proto !== null && proto !== BackpackNode.prototype && !lockedClasses.has(proto); proto = Object.getPrototypeOf(proto)) {
    const NodeClass = (Object.getOwnPropertyDescriptor(proto, 'constructor')?.value ?? undefined) as object | undefined;
    if (NodeClass !== undefined && (typeof NodeClass === 'function' || typeof NodeClass === 'object')) {
      for (const key of Reflect.ownKeys(NodeClass)) {
        const own = Object.getOwnPropertyDescriptor(NodeClass, key)!;
        if (!own.configurable && !own.writable) continue;
        const held = !('value' in own) || typeof own.value === 'function' || CLASS_READS.has(key);
        if (held) Object.defineProperty(NodeClass, key, 'value' in own ? { writable: false, configurable: false } : { configurable: false });
      }
      Object.preventExtensions(NodeClass);
    }
    hardenPrototype(proto);
    lockedClasses.add(proto);
    // What makes its params secret, as it is now (see rememberSchema): zod's schemas and registry stay changeable.
    if (NodeClass !== undefined) asBuilder(undefined, () => rememberSchema((NodeClass as BackpackNodeClass).paramsSchema as ZodType | undefined));
  }
}

/** Whether namespace `inner` is `outer` or one under it (whole segments). */
function atOrUnder(outer: string, inner: string): boolean {
  return inner === outer || inner.startsWith(`${outer}.`);
}

function namespaceOf(node: BaseNode, fallback: string): string | undefined {
  return node instanceof BackpackNode || node instanceof Flow ? node.namespace || undefined : fallback || undefined;
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(Flow);
