import type { ZodType } from 'zod';
import { Backpack as BackpackClass, BackpackError, type Backpack, type NodePermissions } from '../backpack/index.js';
import { adoptValue } from '../backpack/values.js';
import { EventStreamer as EventStreamerClass, type EventStreamer } from '../events/index.js';
import { FlowError, mappingProblems, type BaseNode } from '../flow/index.js';
import { routeOf, routeTable } from '../flow/node.js';
import {
  BackpackNode,
  Flow,
  backpackKeyProblem,
  checkNamespace,
  composeNamespace,
  type BackpackNodeClass,
  type BackpackNodeConfig,
  type DependencyLookup,
  type FlowConfigLoader,
} from '../nodes/index.js';
import { configOf, currentNode, paramsOf } from '../nodes/backpack-node.js';
import { anyRunStarted, asBuilder, currentExecution, foreignExecution, type NodeExecution } from '../nodes/execution.js';
import { checkSegment } from '../nodes/namespace.js';
import { holdContracts } from '../nodes/backpack-node.js';
import { deferNode, deferNodes, isTopLevel, placeNode, refuseProxyClass, type DeferredNodes } from '../nodes/flow.js';
import { BACKPACK_DEP, DependencyContainer, EVENT_STREAMER_DEP } from './container.js';
import { FlowConfigError, pointer, type ConfigProblem } from './errors.js';
import { nestingProblem } from './limits.js';
import { constructorChange, constructsPlainly } from './plain-class.js';
import { parseFlowConfig } from './parse.js';
import { flattenEdges, flattenNodes, findNode, getCompositeNodes, getMaxDepth } from './query.js';
import { FlowConfigSchema, SUPPORTED_MAJOR_VERSION, type FlowConfig, type FlowEdge, type NodeConfig } from './schema.js';
import { checkFlowStructure } from './structure.js';
import { NameTable } from './name-table.js';
import { maskMarkedSecrets, maskSecrets, paramsAsWritten, resolveEnvRefs } from './secrets.js';

/** Options of {@link FlowLoader.exportFlow}. */
export interface ExportOptions {
  /** Levels of internal flows to include (default 10); 0 exports the top level only. */
  depth?: number;
  /**
   * Export secret params as they are instead of `'***'` (default false). Only for the owner: from code in no node's
   * execution, exporting a top-level flow (its nested flows included); otherwise secrets stay masked.
   */
  includeSensitive?: boolean;
}

/** Options of {@link FlowLoader.loadFlow}. */
export interface LoadOptions {
  /** Where `${ENV_NAME}` references resolve from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** The Backpack to share (default: the Backpack of the node whose execution calls loadFlow, else a new one). */
  backpack?: Backpack;
  /** The event streamer to use (default: the calling node's flow's, else a new one). */
  eventStreamer?: EventStreamer;
  /** Most nesting levels accepted (default 10). */
  maxDepth?: number;
  /** Longest config text accepted, in UTF-8 bytes, when `config` is text (default 16 MiB: DEFAULT_MAX_FLOW_BYTES). */
  maxBytes?: number;
  /**
   * Let the nodes keep the config's param values instead of copies (default: copies, so that changing `config` later
   * does not reach the loaded flow). For a config nobody changes afterwards, such as one just parsed, this loads a
   * large config without holding it twice. A config given as JSON text is always shared (nobody else has it).
   * Shared param values that are plain JSON data are frozen in place (deeply): a node that packs one into the
   * Backpack then stores it as it is, where a value of its own would be copied.
   */
  shareConfig?: boolean;
  /**
   * Called with the config as given (parsed, if it was text) once it is found valid and its dependencies are
   * present, before any node is built; the flow is built only when it resolves. The CLI records a run's config here,
   * so that a large parsed config is recorded before, not beside, the flow it becomes: the loader holds no reference
   * to the config as given once this returns. Of its own checked copy it drops each node's entry as soon as the node
   * is built; a node built on first use (see {@link FlowLoader.loadFlow}) keeps its entry, its only form until then.
   */
  beforeBuild?: (config: unknown) => void | Promise<void>;
}

/** Options of {@link FlowLoader.validateConfig}. */
export interface ValidateOptions {
  /** Most nesting levels accepted (default 10). */
  maxDepth?: number;
  /** Longest config text accepted, in UTF-8 bytes, when `config` is text (default 16 MiB). */
  maxBytes?: number;
  /**
   * The dependencies the flow is to be loaded with (what `loadFlow` would be given as `deps`): every key a
   * `dependencies` map of the config declares (at any level) must be among them, as loadFlow requires. Not checked
   * when not given.
   */
  dependencies?: DependencyLookup | Record<string, unknown>;
  /**
   * Whether a name holds a secret, as the redaction of the run the flow is for judges it (`secretNameTest` of the
   * runtime). A run writes node ids, class names and namespaces to its event log as they are (never redacted), so
   * with this each one that holds a secret is a problem at its JSON pointer (the secret is not quoted). Not checked
   * when not given.
   */
  secretName?: (name: string) => boolean;
  /**
   * Where `${ENV_NAME}` references resolve from, as in `loadFlow` (default `process.env`): each variable a param
   * references that is not set there is a problem at the param's JSON path, as loadFlow reports it.
   */
  env?: Record<string, string | undefined>;
}

/** Result of {@link FlowLoader.validateConfig}. */
export interface ConfigValidationReport {
  valid: boolean;
  errors: ConfigProblem[];
  /**
   * Set when the config's shape is invalid (its JSON structure, nesting or keys): the checks that need a valid shape
   * (node types, ids, edges, params against node schemas, names, dependencies) did not run, so fixing `errors` may show
   * more problems.
   */
  shapeOnly?: true;
}

/** The package's shared loaders (`defaultFlowLoader`): registrations only before the first run (see shareLoader). */
const sharedLoaders = new WeakSet<FlowLoader>();

/** Makes `loader` one of the package's shared loaders (see {@link FlowLoader.register}). Internal. */
export function shareLoader(loader: FlowLoader): FlowLoader {
  sharedLoaders.add(loader);
  return loader;
}

/** Context a node class's `static fromConfig` receives. */
export interface NodeLoadContext {
  /**
   * The flow the node must be added to, as a class's `fromConfig` may use it: its id, its namespace and `addNode`.
   * Not the flow itself: a node class is node code, and the flow of a top-level load gives the owner's view (its
   * Backpack, its events), which node code must never hold.
   */
  flow: NodeLoadFlow;
  /** Loads a nested flow config, as the loader that loads this node does (its `loadFlow`); nothing else of it. */
  loader: Pick<FlowLoader, 'loadFlow'>;
  /** JSON path of the node's config. */
  path: string;
}

/** What a node class's `fromConfig` is given of the flow it adds its node to (see {@link NodeLoadContext}). */
export interface NodeLoadFlow {
  readonly id: string;
  readonly namespace: string;
  /** Adds a node to the flow being loaded, as {@link Flow.addNode} does. */
  addNode<T extends BackpackNode>(NodeClass: BackpackNodeClass<T>, config: BackpackNodeConfig): T;
}

/** A node class as the loader sees it: optionally with its own `fromConfig`. */
export type LoadableNodeClass = BackpackNodeClass & {
  fromConfig?(config: BackpackNodeConfig, context: NodeLoadContext, deps: DependencyLookup | undefined): BackpackNode | Promise<BackpackNode>;
};

/**
 * A node instance as the exporter sees it: optionally with its own `toConfig`, whose `type` and `params` replace the
 * defaults (secrets in them are still masked; the internal flow is still exported by the loader).
 */
export interface ExportableNode extends BackpackNode {
  /** The node's own `type` and `params` for its exported config, replacing the defaults (the class's registered type, its config). */
  toConfig?(): Partial<Pick<NodeConfig, 'type' | 'params'>>;
}

const RESERVED_PARAMS = new Set(['id', 'namespaceSegment', 'maxRetries', 'retryDelayMs', 'permissions']);
const DEFAULT_DEPTH = 10;
const DEFAULT_MAX_STEPS = 1000;
const DEFAULT_MISSING_ROUTE = 'warn';

/** Why a name that holds a secret is refused (see ValidateOptions.secretName). */
const WRITTEN_AS_IS = 'names and ids are written to the event log as they are (never redacted), so they must not hold secrets; rename it';

/** The secret check of one validation: the test, and the classes whose name was reported already (once per class). */
interface NameCheck {
  readonly secret: (name: string) => boolean;
  readonly reported: Set<LoadableNodeClass>;
}

/**
 * What a check is given besides the config: the environment `${ENV}` references must resolve in (`env`), a table
 * of ids to fill per flow (`tables`, for a load) and the secret check of names (`names`).
 */
interface Checking {
  readonly env: Record<string, string | undefined>;
  readonly tables?: Map<FlowConfig, NameTable>;
  readonly names?: NameCheck;
}

/** What one load keeps while it adds nodes: the id tables of its check, and its verdict on each class (see constructsPlainly). */
interface LoadState {
  readonly tables: Map<FlowConfig, NameTable>;
  readonly plain: Map<LoadableNodeClass, boolean>;
}

/**
 * Turns flow configs (JSON) into running flows and flows back into configs (PRD-004 §4-§6, DESIGN D13-D14). Node
 * classes are registered under a type name; `loadFlow` validates the whole config first and refuses it with every
 * problem and its JSON path; `exportFlow` of a loaded flow gives back the normalized config.
 */
export class FlowLoader implements FlowConfigLoader {
  readonly #types = new Map<string, LoadableNodeClass>();
  readonly #names = new Map<LoadableNodeClass, string>();
  /** Params as written in the config (before `${ENV}` resolution), so exports never contain resolved secrets. */
  readonly #rawParams = new WeakMap<BackpackNode, Record<string, unknown>>();
  readonly #dependencies = new WeakMap<Flow, Record<string, string>>();
  /**
   * The node execution this loader was made in (undefined: the owner's code, as `defaultFlowLoader` is made): only
   * code of that context registers node types on it, so that a node's code cannot change what the owner's loaders
   * build (see {@link register}).
   */
  readonly #madeIn: NodeExecution | undefined = currentExecution.getStore();
  /**
   * Set when the loader first builds a flow (a load that passed its checks): from then on it takes no new node type
   * (see {@link register}). Code in no node's execution looks like the owner's but may be node code the runtime runs
   * later, and a class it registered would be built with the params (secrets included) of a config that names its
   * type.
   */
  #inUse = false;
  /** What a class's `fromConfig` gets of this loader (see NodeLoadContext.loader): frozen, its `loadFlow` alone. */
  readonly #facade: Pick<FlowLoader, 'loadFlow'> = Object.freeze({ loadFlow: (...args: Parameters<FlowLoader['loadFlow']>) => this.loadFlow(...args) });

  /**
   * A loader is frozen when made (its state is private): the library calls its methods for the owner, and no code that
   * reaches it may give it a method of its own (a subclass's instances are the subclass's to freeze).
   */
  constructor() {
    if (new.target === FlowLoader) Object.freeze(this);
  }

  /**
   * Registers `NodeClass` under `type`. Registering another class under a taken type is an error, and so is a
   * registration from a node's code on a loader made elsewhere (the owner's, `defaultFlowLoader`), a new type on a
   * loader of your own once it has loaded a flow, and one on `defaultFlowLoader` once a flow has run: a FlowError.
   * Registering the same class under its type again is always fine.
   */
  register(type: string, NodeClass: LoadableNodeClass): this {
    const running = foreignExecution(this.#madeIn);
    if (running !== undefined) {
      throw new FlowError(`Node '${running.node.id}' cannot register node types on a flow loader it did not make: the owner's loaders build what the owner registered`);
    }
    if (sharedLoaders.has(this) && anyRunStarted()) {
      throw new FlowError(`Node type '${type}' cannot be registered on defaultFlowLoader once a flow has run in this process: register types before the first run, or use a FlowLoader of your own`);
    }
    if (typeof type !== 'string' || type === '') throw new TypeError(`FlowLoader.register: type must be a non-empty string, got ${JSON.stringify(type)}`);
    // A Proxy on its chain is refused (see refuseProxyClass); any other code of the class runs as no node (asBuilder).
    refuseProxyClass(undefined, NodeClass);
    // Its data contracts as they are now, before any node code runs (a node built on first use is locked later).
    if (typeof NodeClass === 'function' && NodeClass.prototype instanceof BackpackNode) holdContracts(NodeClass as BackpackNodeClass);
    if (typeof NodeClass !== 'function' || (NodeClass !== BackpackNode && !asBuilder(undefined, () => NodeClass.prototype instanceof BackpackNode))) {
      throw new TypeError(`FlowLoader.register('${type}'): expected a BackpackNode class${foreignBackpackNode(NodeClass)}`);
    }
    const existing = this.#types.get(type);
    if (existing && existing !== NodeClass) throw new Error(`FlowLoader.register: type '${type}' is already registered to ${existing.name}`);
    if (existing === undefined && this.#inUse && !sharedLoaders.has(this)) {
      throw new FlowError(`Node type '${type}' cannot be registered on this loader: it has loaded flows. Register a loader's node types before it loads a flow`);
    }
    this.#types.set(type, NodeClass);
    if (!this.#names.has(NodeClass)) this.#names.set(NodeClass, type);
    return this;
  }

  /** True when `type` is registered. */
  isRegistered(type: string): boolean {
    return this.#types.has(type);
  }

  /** Registered type names, sorted. */
  getRegisteredTypes(): string[] {
    return [...this.#types.keys()].sort();
  }

  /**
   * Every problem of `config` (an object, or JSON text), each with its JSON path; valid when there is none. Refuses,
   * as `loadFlow` does, nesting deeper than MAX_JSON_NESTING, text over `maxBytes`, params that contain themselves or
   * a number that is not finite, and a `${ENV}` reference to a variable not set in `options.env` (default
   * `process.env`); with `options.dependencies`, a declared dependency they lack, and with `options.secretName`, a
   * name that holds a secret (see {@link ValidateOptions}).
   */
  validateConfig(config: unknown, options: ValidateOptions = {}): ConfigValidationReport {
    const secret = options.secretName;
    const check = secret === undefined ? undefined : { secret, reported: new Set<LoadableNodeClass>() };
    const { problems, config: checked } = this.#check(config, options.maxDepth ?? DEFAULT_DEPTH, options.maxBytes, { names: check, env: options.env ?? process.env });
    if (checked !== undefined && options.dependencies !== undefined) problems.push(...missingDependencies(checked, '', toLookup(options.dependencies)));
    return { valid: problems.length === 0, errors: problems, ...(checked === undefined && problems.length > 0 ? { shapeOnly: true as const } : {}) };
  }

  /**
   * Builds a Flow from `config`: validates it (a FlowConfigError lists every problem), resolves `${ENV}` params,
   * creates the nodes with the registered classes, internal flows, subflows and edges. Of a config the loader keeps
   * (text, or `shareConfig`), a node whose creation runs only the library's code (see `constructsPlainly`) is
   * checked now and built on first use: the flow holds its checked config until something asks for the node. `deps`
   * reach every node as `this.deps`; every key a `dependencies` map of the config declares must be in them. Inside a node's execution the
   * new flow shares that node's Backpack and streamer (and, when no `deps` are given, its dependencies).
   */
  async loadFlow(config: unknown, deps?: DependencyLookup | Record<string, unknown>, options: LoadOptions = {}): Promise<Flow> {
    const share = typeof config === 'string' || options.shareConfig === true;
    let input = typeof config === 'string' ? parseFlowConfig(config, 'flow config', { maxBytes: options.maxBytes }) : config;
    const tables = new Map<FlowConfig, NameTable>();
    const env = options.env ?? process.env;
    const { problems, config: parsed } = this.#check(input, options.maxDepth ?? DEFAULT_DEPTH, options.maxBytes, { tables, env });
    if (parsed === undefined || problems.length > 0) throw new FlowConfigError(problems);
    const caller = currentNode();
    const given = deps === undefined && caller?.deps ? caller.deps : toLookup(deps);
    const missing = missingDependencies(parsed, '', given);
    if (missing.length > 0) throw new FlowConfigError(missing, 'Flow config needs dependencies that were not given');
    // From here on the loader builds nodes of the types it holds: in use (see register). A load refused above (an
    // unknown type, a missing dependency) built nothing, and the types it lacked may still be registered.
    this.#inUse = true;
    // A Backpack or streamer among the dependencies (BackpackFlow v2 passed them so) is what the flow is built on; the
    // nodes never get them: they are the owner's view (DESIGN D6).
    const { backpack, eventStreamer, lookup } = ownerDependencies(given, options);
    if (options.beforeBuild) await options.beforeBuild(input);
    // From here on only the checked copy is read: the config as given is the caller's to keep or let go.
    config = input = undefined;
    const settings = { namespace: parsed.namespace || undefined, deps: lookup, maxSteps: parsed.maxSteps, onMissingRoute: parsed.onMissingRoute };
    // Inside a node's execution (and unless told otherwise) the flow runs inside that node, on its handle.
    const flow = caller && !backpack && !eventStreamer
      ? caller.createNestedFlow(settings)
      : new Flow({ ...settings, backpack, eventStreamer });
    const loadProblems: ConfigProblem[] = [];
    await this.#populate(flow, parsed, '', env, share, loadProblems, { tables, plain: new Map() });
    if (loadProblems.length > 0) throw new FlowConfigError(loadProblems, 'Flow config could not be loaded');
    return flow;
  }

  /**
   * A copy of a flow config as given (parsed JSON) with the params each node's class marks secret masked, at every
   * nesting level (see {@link maskMarkedSecrets}): what a run records of its flow file. Nodes of unknown types, and
   * anything not shaped like a flow config, are copied as they are.
   */
  maskConfigSecrets(config: unknown): unknown {
    const record = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
    const maskFlow = (flow: unknown): unknown => {
      if (!record(flow) || !Array.isArray(flow['nodes'])) return flow;
      const out: Record<string, unknown> = { ...flow, nodes: flow['nodes'].map(maskNode) };
      if (Array.isArray(flow['subflows'])) out['subflows'] = flow['subflows'].map(maskFlow);
      return out;
    };
    const maskNode = (node: unknown): unknown => {
      if (!record(node)) return node;
      const NodeClass = typeof node['type'] === 'string' ? this.#types.get(node['type']) : undefined;
      const out: Record<string, unknown> = { ...node };
      // (The class's static and schema run as no node: see asBuilder.)
      if (record(node['params'])) out['params'] = asBuilder(undefined, () => maskMarkedSecrets(node['params'] as Record<string, unknown>, NodeClass?.paramsSchema as ZodType | undefined));
      if (node['internalFlow'] !== undefined) out['internalFlow'] = maskFlow(node['internalFlow']);
      return out;
    };
    return maskFlow(config);
  }

  /** The config of `flow`, nested flows included down to `depth`; secret params masked unless `includeSensitive`. */
  exportFlow(flow: Flow, options: ExportOptions = {}): FlowConfig {
    const depth = options.depth ?? DEFAULT_DEPTH;
    if (!Number.isInteger(depth) || depth < 0) throw new RangeError(`exportFlow: depth must be an integer >= 0, got ${depth}`);
    // Secrets only for the owner: called in no node's execution, on a top-level flow (node code holds none: what it
    // reaches through routes are subflows and nodes' internal flows), so that code which left a node's execution (a
    // FinalizationRegistry callback) cannot export what it reaches with its secrets.
    const sensitive = options.includeSensitive === true && currentExecution.getStore() === undefined && isTopLevel(flow);
    return this.#export(flow, depth, sensitive, [], { maxSteps: DEFAULT_MAX_STEPS, onMissingRoute: DEFAULT_MISSING_ROUTE }, flow.namespace);
  }

  /** See {@link flattenNodes}. */
  flattenNodes(config: FlowConfig): NodeConfig[] {
    return flattenNodes(config);
  }
  /** See {@link flattenEdges}. */
  flattenEdges(config: FlowConfig): FlowEdge[] {
    return flattenEdges(config);
  }
  /** See {@link findNode}. */
  findNode(config: FlowConfig, path: string): NodeConfig | undefined {
    return findNode(config, path);
  }
  /** See {@link getCompositeNodes}. */
  getCompositeNodes(config: FlowConfig): NodeConfig[] {
    return getCompositeNodes(config);
  }
  /** See {@link getMaxDepth}. */
  getMaxDepth(config: FlowConfig): number {
    return getMaxDepth(config);
  }

  // ------------------------------------------------------------------ validation

  /**
   * Every problem of `input`, and the normalized config when its structure is valid (so that loading parses it once;
   * it loads only when there is no problem at all).
   */
  #check(input: unknown, maxDepth: number, maxBytes: number | undefined, checking: Checking): { problems: ConfigProblem[]; config?: FlowConfig } {
    let config = input;
    if (typeof input === 'string') {
      try {
        config = parseFlowConfig(input, 'flow config', { maxBytes });
      } catch (error) {
        return { problems: (error as FlowConfigError).errors };
      }
    } else {
      // (Text was checked as it was parsed.) Deeper values could not be processed: refuse them before anything recurses.
      const deep = nestingProblem(config);
      if (deep) return { problems: [deep] };
    }
    const structural = checkNesting(config, maxDepth);
    if (structural.length > 0) return { problems: structural };
    const problems: ConfigProblem[] = [];
    const normalized = checkFlowStructure(config, '', problems);
    if (normalized === undefined) {
      const version = (config as { version?: unknown } | null)?.version;
      if (typeof version === 'string' && /^\d+\./.test(version) && Number(version.split('.')[0]) !== SUPPORTED_MAJOR_VERSION) {
        problems.unshift({ path: '/version', message: unsupportedVersion(version) });
      }
      return { problems };
    }
    const major = Number(normalized.version.split('.')[0]);
    if (major !== SUPPORTED_MAJOR_VERSION) {
      problems.push({ path: '/version', message: unsupportedVersion(normalized.version) });
    }
    if (checking.names?.secret(normalized.namespace)) problems.push({ path: '/namespace', message: `the flow's namespace looks like a secret: ${WRITTEN_AS_IS}` });
    this.#checkFlow(normalized, '', normalized.namespace, true, problems, checking);
    return { problems, config: normalized };
  }

  /** Checks one flow of a config; `checking.tables` gets the flow's table of ids (a loader finds nodes by id with it). */
  #checkFlow(cfg: FlowConfig, path: string, namespace: string, top: boolean, problems: ConfigProblem[], checking: Checking): void {
    const { tables, names: check, env } = checking;
    if (namespace) {
      try {
        checkNamespace(namespace, 'namespace');
      } catch (error) {
        problems.push({ path: `${path}/namespace`, message: (error as Error).message });
      }
    }
    // Where each id and namespace segment was taken: a node's index (its path is made only for a problem), or a
    // subflow's path. Every node of this flow has a namespace under the same one, so segments tell namespaces apart
    // (no namespace string is made per node).
    // (The loader may put a node, or nothing, in place of a node config it built: each still has the id or none.)
    const nodes = cfg.nodes as ({ id: string } | undefined)[];
    const names = new NameTable((i) => nodes[i]?.id, nodes.length);
    tables?.set(cfg, names);
    const nodeAt = (where: number | string): string => (typeof where === 'number' ? `${path}/nodes/${where}` : where);
    // A namespace under one that holds a secret holds it too: only the first is reported.
    const namespaceSecret = check?.secret(namespace) ?? false;
    cfg.nodes.forEach((node, i) => {
      const at = nodeAt(i);
      const NodeClass = this.#types.get(node.type);
      if (!NodeClass) {
        const known = this.getRegisteredTypes();
        problems.push({ path: `${at}/type`, message: `unknown node type '${node.type}'${known.length ? ` (registered: ${known.join(', ')})` : ' (no types are registered)'}` });
      }
      const taken = names.idHolder(node.id);
      if (taken !== undefined) problems.push({ path: `${at}/id`, message: `duplicate node id '${node.id}' (also ${nodeAt(taken)})` });
      for (const key of Object.keys(node.params)) {
        if (RESERVED_PARAMS.has(key)) problems.push({ path: `${at}/params/${key}`, message: `'${key}' is a node setting, not a param: put it beside params` });
      }
      // A class's statics are its code (a getter): read as no node (see asBuilder), not as the node whose exec loads
      // this flow (review s53a H1).
      const classSegment = NodeClass === undefined ? undefined : asBuilder(undefined, () => NodeClass.namespaceSegment);
      const segment = node.namespaceSegment ?? classSegment ?? node.id;
      // Where the segment comes from (as addNode takes it): the config's namespaceSegment, the class's, or the id.
      const segmentAt = node.namespaceSegment !== undefined ? `${at}/namespaceSegment` : classSegment !== undefined ? `${at}/type` : `${at}/id`;
      try {
        checkSegment(segment, `Namespace segment of node '${node.id}'`);
      } catch (error) {
        problems.push({ path: segmentAt, message: (error as Error).message });
      }
      if (check !== undefined) checkNames(check, node.id, NodeClass, namespaceSecret ? undefined : composeNamespace(namespace, segment), at, segmentAt, problems);
      const holder = names.segmentHolder(segment);
      if (holder !== undefined) {
        problems.push({ path: `${at}/namespaceSegment`, message: `namespace '${composeNamespace(namespace, segment)}' is also taken by ${nodeAt(holder)}: give this node its own namespaceSegment` });
      }
      names.claimNode(node.id, segment, i);
      const found = paramsProblems(node.params, `${at}/params`, problems);
      // (Resolved here only to report the unset variables with every other problem; a load resolves them again as it
      // builds the node.)
      if (found === 'refs') resolveEnvRefs(node.params, `${at}/params`, env, problems, true);
      const schema = found === 'cycle' || NodeClass === undefined ? undefined : asBuilder(undefined, () => NodeClass.paramsSchema as ZodType | undefined);
      if (schema) {
        // The class's schema (its refinements, transforms, getters) runs as no node: see asBuilder.
        const result = asBuilder(undefined, () => schema.safeParse(node.params));
        if (!result.success) for (const issue of result.error.issues) problems.push({ path: `${at}/params${pointer(issue.path)}`, message: issue.message });
      }
      if (node.internalFlow) {
        const inner = node.internalFlow;
        const nodeNamespace = composeNamespace(namespace, segment);
        if (inner.namespace && inner.namespace !== nodeNamespace) {
          problems.push({ path: `${at}/internalFlow/namespace`, message: `an internal flow has its node's namespace '${nodeNamespace}', not '${inner.namespace}'` });
        }
        if (inner.version !== cfg.version) problems.push({ path: `${at}/internalFlow/version`, message: `version ${inner.version} differs from the enclosing flow's ${cfg.version}` });
        this.#checkFlow(inner, `${at}/internalFlow`, nodeNamespace, false, problems, checking);
      }
    });
    (cfg.subflows ?? []).forEach((sub, k) => {
      const at = `${path}/subflows/${k}`;
      const subNamespace = composeNamespace(namespace, sub.namespace);
      if (!sub.namespace) problems.push({ path: `${at}/namespace`, message: 'a subflow needs a namespace segment' });
      else if (names.idHolder(sub.namespace) !== undefined) problems.push({ path: `${at}/namespace`, message: `subflow '${sub.namespace}' has the id of ${nodeAt(names.idHolder(sub.namespace)!)}` });
      else {
        names.claimId(sub.namespace, at);
        // As addSubflow refuses them: a subflow's nodes may not sit under a node's namespace, nor two subflows' overlap.
        const underNode = names.segmentHolder(sub.namespace.split('.')[0]!);
        const overlapping = (cfg.subflows ?? []).findIndex((other, j) => j < k && !!other.namespace && namespacesOverlap(other.namespace, sub.namespace));
        if (underNode !== undefined || overlapping >= 0) {
          const what = underNode !== undefined ? nodeAt(underNode) : `the subflow at ${path}/subflows/${overlapping} ('${composeNamespace(namespace, cfg.subflows![overlapping]!.namespace)}')`;
          problems.push({ path: `${at}/namespace`, message: `subflow namespace '${subNamespace}' overlaps ${what}: namespaces are unique within a flow, and one's nodes may not sit under another's; give the subflow another namespace` });
        }
      }
      if (check !== undefined && (check.secret(sub.namespace) || (!namespaceSecret && check.secret(subNamespace)))) {
        problems.push({ path: `${at}/namespace`, message: `the subflow's namespace looks like a secret: ${WRITTEN_AS_IS}` });
      }
      this.#checkFlow(sub, at, subNamespace, false, problems, checking);
    });
    const routes = new Map<string, number>();
    cfg.edges.forEach((edge, j) => {
      for (const end of ['from', 'to'] as const) {
        if (names.idHolder(edge[end]) === undefined) problems.push({ path: `${path}/edges/${j}/${end}`, message: `edge ${end} '${edge[end]}': no node or subflow with that id in this flow` });
      }
      if (edge.mappings !== undefined) {
        for (const problem of mappingProblems(edge.mappings, backpackKeyProblem)) {
          problems.push({ path: `${path}/edges/${j}/mappings${problem.source === undefined ? '' : pointer([problem.source])}`, message: problem.message });
        }
      }
      const route = JSON.stringify([edge.from, edge.condition]);
      const earlier = routes.get(route);
      if (earlier !== undefined) {
        problems.push({ path: `${path}/edges/${j}/condition`, message: `'${edge.from}' already routes '${edge.condition}' (${path}/edges/${earlier}): one successor per action` });
      } else routes.set(route, j);
    });
    if (cfg.entry !== undefined && names.idHolder(cfg.entry) === undefined) problems.push({ path: `${path}/entry`, message: `entry '${cfg.entry}': no node or subflow with that id` });
    if (!top && cfg.nodes.length === 0 && (cfg.subflows ?? []).length === 0) problems.push({ path: `${path}/nodes`, message: 'a nested flow needs at least one node' });
  }

  // ------------------------------------------------------------------ loading

  /**
   * Adds the nodes, subflows and edges of `cfg` to `flow`. A config that is the loader's to keep (`share`) and whose
   * nodes no `fromConfig` adds has its plain nodes built on first use (see {@link #buildsLater}): the flow keeps the
   * checked node configs and the id table of the check (`tables`), and builds a node from them when it is asked for.
   */
  async #populate(
    flow: Flow,
    cfg: FlowConfig,
    path: string,
    env: Record<string, string | undefined>,
    share: boolean,
    problems: ConfigProblem[],
    load: LoadState,
  ): Promise<void> {
    // Subflows by namespace; nodes are found by id in the flow (a million nodes need no second map).
    const subflows = new Map<string, Flow>();
    const target = (id: string): BaseNode | undefined => flow.getNode(id) ?? subflows.get(id);
    const names = load.tables.get(cfg);
    const deferring = share && names !== undefined && cfg.nodes.every((node) => asBuilder(undefined, () => this.#types.get(node.type)!.fromConfig) === undefined);
    if (deferring) {
      deferNodes(flow, {
        entries: cfg.nodes,
        position: (id) => {
          const at = names.idHolder(id);
          return typeof at === 'number' ? at : undefined;
        },
        idOf: (record) => (record as NodeConfig).id,
        build: this.#builder,
      });
    }
    for (const [i, node] of cfg.nodes.entries()) {
      const at = `${path}/nodes/${i}`;
      const NodeClass = this.#types.get(node.type)!;
      const params = resolveEnvRefs(node.params, `${at}/params`, env, problems, share);
      if (share) adoptParams(params);
      if (deferring && params === node.params && flow.entryNode !== undefined && this.#buildsLater(NodeClass, node, load)) {
        let deferred: boolean;
        try {
          deferred = deferNode(flow, NodeClass, node.id, i);
        } catch (error) {
          problems.push({ path: at, message: `could not create node '${node.id}': ${(error as Error).message}` });
          placeNode(flow, i, undefined);
          continue;
        }
        if (deferred) continue;
      }
      const nodeConfig = nodeConfigOf(node, params);
      let instance: BackpackNode;
      try {
        instance = asBuilder(undefined, () => NodeClass.fromConfig)
          ? // Node code: it runs as no node (see asBuilder), and gets no more of the flow than it needs.
            await fromConfigOf(NodeClass, flow, nodeConfig, { loader: this.#facade, path: at })
          : flow.addNode(NodeClass, nodeConfig);
      } catch (error) {
        problems.push({ path: at, message: `could not create node '${node.id}': ${(error as Error).message}` });
        if (deferring) placeNode(flow, i, undefined);
        continue;
      }
      if (deferring) placeNode(flow, i, instance);
      // Shared params that held no `${ENV}` reference are the node's own: its params export as they are. Otherwise
      // the params as written are kept (a copy of the caller's object, as zod's copy was, unless shared).
      if (params !== node.params) this.#rawParams.set(instance, share ? node.params : ownEntries(node.params));
      if (node.internalFlow) {
        const inner = node.internalFlow;
        const child = flow.createChildFlow(instance, { maxSteps: inner.maxSteps, onMissingRoute: inner.onMissingRoute });
        await this.#populate(child, inner, `${at}/internalFlow`, env, share, problems, load);
        instance.attachInternalFlow(child);
      }
      // The checked copy is the loader's own (#check made every array of it): a built node's entry is not needed again
      // (the flow keeps the list of nodes it builds on first use, where this node now stands).
      if (!deferring) (cfg.nodes as (NodeConfig | undefined)[])[i] = undefined;
    }
    for (const [k, sub] of (cfg.subflows ?? []).entries()) {
      const subflow = flow.addSubflow({ namespace: sub.namespace, maxSteps: sub.maxSteps, onMissingRoute: sub.onMissingRoute });
      await this.#populate(subflow, sub, `${path}/subflows/${k}`, env, share, problems, load);
      subflows.set(sub.namespace, subflow);
    }
    for (const edge of cfg.edges) {
      const from = target(edge.from);
      const to = target(edge.to);
      if (from && to) from.on(edge.condition, to, edge.mappings ? { mappings: edge.mappings } : undefined);
    }
    const entry = cfg.entry === undefined ? undefined : target(cfg.entry);
    if (entry !== undefined) flow.setEntryNode(entry);
    else if (!flow.entryNode && cfg.subflows?.length) flow.setEntryNode(subflows.get(cfg.subflows[0]!.namespace)!);
    this.#dependencies.set(flow, cfg.dependencies);
  }

  /**
   * True when `node` (checked, its params free of `${ENV}` references) can be built on first use: its class is plain
   * (see {@link constructsPlainly}) and its config sets no namespace segment, permissions or internal flow, and
   * retry settings the Node constructor takes. Creating it then cannot fail, nor change anything but the flow.
   */
  #buildsLater(NodeClass: LoadableNodeClass, node: NodeConfig, load: LoadState): boolean {
    if (node.namespaceSegment !== undefined || node.permissions !== undefined || node.internalFlow !== undefined) return false;
    if (node.maxRetries !== undefined && !(Number.isInteger(node.maxRetries) && node.maxRetries >= 1)) return false;
    if (node.retryDelayMs !== undefined && !(Number.isFinite(node.retryDelayMs) && node.retryDelayMs >= 0)) return false;
    // Judged once per load (a class may change between loads: see constructsPlainly).
    let plain = load.plain.get(NodeClass);
    if (plain === undefined) load.plain.set(NodeClass, (plain = constructsPlainly(NodeClass)));
    return plain;
  }

  /** How a flow builds a node {@link #populate} deferred: its class and config, as the node would have been added. */
  readonly #builder: DeferredNodes['build'] = (record) => {
    const node = record as NodeConfig;
    const NodeClass = this.#types.get(node.type)!;
    // Judged plain at load; a class changed since (a getter put on its prototype, a paramsSchema assigned) would make
    // this node differ from one built at load: an error naming the change. (Its access rules are its registration's,
    // made at load, as for a node built then.)
    const change = constructorChange(NodeClass);
    if (change !== undefined) {
      throw new FlowError(`Node '${node.id}' was to be built on first use, but its class ${NodeClass.name} changed since the flow was loaded (${change}): it cannot be built as it would have been at load`);
    }
    return { NodeClass, config: nodeConfigOf(node, node.params) };
  };

  // ------------------------------------------------------------------ export

  #export(
    flow: Flow,
    depth: number,
    includeSensitive: boolean,
    ancestors: Flow[],
    inherited: { maxSteps: number; onMissingRoute: string },
    namespace: string,
  ): FlowConfig {
    if (ancestors.includes(flow)) {
      const cycle = [...ancestors.slice(ancestors.indexOf(flow)), flow].map((f) => `'${f.namespace || f.id}'`).join(' → ');
      throw new FlowConfigError([{ path: '', message: `circular nesting: ${cycle}` }], 'Cannot export flow');
    }
    const chain = [...ancestors, flow];
    const nodes = flow.getAllNodes();
    // a subflow is named by its namespace segment in a config (its id may differ in a hand-built flow)
    const members = new Map<BaseNode, string>([...nodes.map((n) => [n, n.id] as const), ...flow.getSubflows().map((sub) => [sub, relativeNamespace(sub.namespace, flow.namespace)] as const)]);
    const config: FlowConfig = { version: '2.0.0', namespace, nodes: [], edges: [], dependencies: { ...(this.#dependencies.get(flow) ?? {}) } };
    for (const node of nodes) {
      if (!(node instanceof BackpackNode)) throw new FlowConfigError([{ path: '', message: `node '${node.id}' is not a BackpackNode and cannot be exported` }], 'Cannot export flow');
      config.nodes.push(this.#exportNode(node as ExportableNode, depth, includeSensitive, chain, flow));
    }
    for (const [node, from] of members) {
      // The routing table, not the node's (overridable) routing methods: exporting runs no node code.
      for (const [action, target] of routeTable(node)) {
        const to = members.get(target);
        if (to === undefined) continue;
        const { mappings } = routeOf(node, action);
        config.edges.push(mappings ? { from, to, condition: action, mappings: { ...mappings } } : { from, to, condition: action });
      }
    }
    const subflows = flow.getSubflows().map((sub) =>
      this.#export(sub, depth, includeSensitive, chain, { maxSteps: flow.maxSteps, onMissingRoute: flow.onMissingRoute }, relativeNamespace(sub.namespace, flow.namespace)),
    );
    if (subflows.length > 0) config.subflows = subflows;
    const first = nodes[0] ?? flow.getSubflows()[0];
    if (flow.entryNode && flow.entryNode !== first) config.entry = members.get(flow.entryNode) ?? flow.entryNode.id;
    if (flow.maxSteps !== inherited.maxSteps) config.maxSteps = flow.maxSteps;
    if (flow.onMissingRoute !== inherited.onMissingRoute) config.onMissingRoute = flow.onMissingRoute;
    return config;
  }

  #exportNode(node: ExportableNode, depth: number, includeSensitive: boolean, chain: Flow[], flow: Flow): NodeConfig {
    // Whatever of the node's class runs here (its `toConfig`, getters, its params schema as it is walked, its
    // internalFlow getter) runs as the node and no one else (see asBuilder), whoever exports.
    return asBuilder(node, () => this.#exportNodeAs(node, depth, includeSensitive, chain, flow));
  }

  #exportNodeAs(node: ExportableNode, depth: number, includeSensitive: boolean, chain: Flow[], flow: Flow): NodeConfig {
    const toConfig = node.toConfig;
    const own = typeof toConfig === 'function' ? (Reflect.apply(toConfig, node, []) as ReturnType<NonNullable<ExportableNode['toConfig']>>) : {};
    const NodeClass = node.constructor as LoadableNodeClass;
    const written = this.#rawParams.get(node);
    // A toConfig that hands back its resolved params exports them as written (their ${ENV} references), never resolved.
    // The node's params as they are (its `params` getter masks secrets for any code but its own).
    const params = paramsOf(node);
    const raw = own.params !== undefined ? paramsAsWritten(own.params, params, written) : (written ?? dataOnly(params));
    const out: NodeConfig = {
      type: own.type ?? this.#names.get(NodeClass) ?? NodeClass.name,
      id: node.id,
      params: includeSensitive ? structuredClone(raw) : maskSecrets(raw, NodeClass.paramsSchema as ZodType | undefined),
    };
    // The settings and rules as the node was created with them (its flow checked them), whatever a class's getter says.
    const settings = configOf(node);
    if (settings.namespaceSegment !== undefined) out.namespaceSegment = settings.namespaceSegment;
    if (settings.maxRetries !== undefined) out.maxRetries = settings.maxRetries;
    if (settings.retryDelayMs !== undefined) out.retryDelayMs = settings.retryDelayMs;
    if (settings.permissions !== undefined) out.permissions = structuredClone(settings.permissions) as NodeConfig['permissions'];
    const inner = depth > 0 ? node.internalFlow : undefined;
    if (inner) out.internalFlow = this.#export(inner, depth - 1, includeSensitive, chain, { maxSteps: flow.maxSteps, onMissingRoute: flow.onMissingRoute }, inner.namespace);
    return out;
  }
}

/**
 * A config normalized as `exportFlow` writes it: defaults filled, settings equal to the inherited ones dropped, edges
 * in node order (then in their order in the config, which is the order their actions were routed).
 */
export function normalizeFlowConfig(config: unknown): FlowConfig {
  const parsed = FlowConfigSchema.parse(config);
  const strip = (cfg: FlowConfig, inherited: { maxSteps: number; onMissingRoute: string }): FlowConfig => {
    const own = { maxSteps: cfg.maxSteps ?? inherited.maxSteps, onMissingRoute: cfg.onMissingRoute ?? inherited.onMissingRoute };
    const order = [...cfg.nodes.map((n) => n.id), ...(cfg.subflows ?? []).map((s) => s.namespace)];
    const rank = (id: string): number => (order.includes(id) ? order.indexOf(id) : order.length);
    const out: FlowConfig = {
      ...cfg,
      nodes: cfg.nodes.map((n) => (n.internalFlow ? { ...n, internalFlow: strip(n.internalFlow, own) } : n)),
      edges: [...cfg.edges].sort((a, b) => rank(a.from) - rank(b.from)),
    };
    if (cfg.subflows) out.subflows = cfg.subflows.map((s) => strip(s, own));
    if (out.maxSteps === inherited.maxSteps) delete out.maxSteps;
    if (out.onMissingRoute === inherited.onMissingRoute) delete out.onMissingRoute;
    return out;
  };
  return strip(parsed, { maxSteps: DEFAULT_MAX_STEPS, onMissingRoute: DEFAULT_MISSING_ROUTE });
}

/** The config a loaded node is created with: its id, params (resolved) and settings. */
function nodeConfigOf(node: NodeConfig, params: Record<string, unknown>): BackpackNodeConfig {
  const nodeConfig: BackpackNodeConfig = { id: node.id, ...params };
  if (node.namespaceSegment !== undefined) nodeConfig.namespaceSegment = node.namespaceSegment;
  if (node.maxRetries !== undefined) nodeConfig.maxRetries = node.maxRetries;
  if (node.retryDelayMs !== undefined) nodeConfig.retryDelayMs = node.retryDelayMs;
  if (node.permissions !== undefined) nodeConfig.permissions = node.permissions as NodePermissions;
  return nodeConfig;
}

/** A shallow copy of `record`'s own enumerable entries (a `__proto__` key stays an own key). */
function ownEntries(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

/** The params that are data: runtime objects (functions, class instances, symbols) stay out of a config. */
function dataOnly(params: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) if (isData(value)) out[key] = value;
  return out;
}

function isData(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return true;
  if (Array.isArray(value)) return value.every(isData);
  if (typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && Object.values(value).every(isData);
}

/**
 * Appends to `problems` what no load can take in a node's `params` (at `path`), each at its JSON pointer: a value
 * that contains an enclosing one (an object config can hold a cycle, found by identity: resolving or copying it
 * would never end), and a number that is not finite (JSON's `1e400` parses as Infinity, which a recorded or
 * exported config would write as null, so a resumed or forked run would see other params). Says whether a cycle
 * was found, else whether a string holds `${` (a reference to resolve), else nothing.
 */
function paramsProblems(params: Record<string, unknown>, path: string, problems: ConfigProblem[]): 'cycle' | 'refs' | undefined {
  const walk: ParamsWalk = { params, path, problems, refs: false, cycle: false, enclosing: undefined };
  walkParams(params, path, walk);
  return walk.cycle ? 'cycle' : walk.refs ? 'refs' : undefined;
}

/** One walk of a node's params (see paramsProblems): what it found, and the containers enclosing the one walked. */
interface ParamsWalk {
  readonly params: object;
  readonly path: string;
  readonly problems: ConfigProblem[];
  refs: boolean;
  cycle: boolean;
  /** The containers enclosing the one walked, with their paths (made once the params nest at all). */
  enclosing: Map<object, string> | undefined;
}

function walkParams(value: object, at: string, walk: ParamsWalk): void {
  if (Array.isArray(value)) for (let i = 0; i < value.length; i++) visitParam(value[i], i, at, walk);
  else for (const key of Object.keys(value)) visitParam((value as Record<string, unknown>)[key], key, at, walk);
}

function visitParam(item: unknown, key: string | number, at: string, walk: ParamsWalk): void {
  if (typeof item === 'string') walk.refs ||= item.includes('${');
  else if (typeof item === 'number') {
    if (!Number.isFinite(item)) walk.problems.push({ path: `${at}${pointer([key])}`, message: `${item} is not a finite number (JSON has none: a number as large as 1e400 parses as Infinity), so the config a run records would hold null instead; give a finite number` });
  } else if (item !== null && typeof item === 'object') {
    const itemAt = `${at}${pointer([key])}`;
    const enclosing = (walk.enclosing ??= new Map([[walk.params, walk.path]]));
    const outer = enclosing.get(item);
    if (outer !== undefined) {
      walk.cycle = true;
      walk.problems.push({ path: itemAt, message: `circular params: this value is the one enclosing it at ${outer}, so it contains itself; params must be JSON data` });
      return;
    }
    enclosing.set(item, itemAt);
    walkParams(item, itemAt, walk);
    enclosing.delete(item);
  }
}

function unsupportedVersion(version: string): string {
  return `version ${version} is not supported; this loader reads ${SUPPORTED_MAJOR_VERSION}.x.x`;
}

function relativeNamespace(namespace: string, parent: string): string {
  return parent && namespace.startsWith(parent + '.') ? namespace.slice(parent.length + 1) : namespace;
}

/**
 * Reports the names of node `id` (at `at`) that hold a secret by `check`: its id, its class's name (at the first
 * node of the class) and its `namespace` (unless undefined: its flow's holds the secret, reported there) where its
 * segment comes from (`segmentAt`), unless that is its id, reported already.
 */
function checkNames(check: NameCheck, id: string, NodeClass: LoadableNodeClass | undefined, namespace: string | undefined, at: string, segmentAt: string, problems: ConfigProblem[]): void {
  const secretId = check.secret(id);
  if (secretId) problems.push({ path: `${at}/id`, message: `the node id looks like a secret: ${WRITTEN_AS_IS}` });
  if (NodeClass !== undefined && !check.reported.has(NodeClass) && check.secret(asBuilder(undefined, () => NodeClass.name))) {
    check.reported.add(NodeClass);
    problems.push({ path: `${at}/type`, message: `the name of the class registered as this type looks like a secret (every node of the type has it): ${WRITTEN_AS_IS}` });
  }
  if (namespace !== undefined && !(secretId && segmentAt === `${at}/id`) && check.secret(namespace)) {
    problems.push({ path: segmentAt, message: `the node's namespace looks like a secret: ${WRITTEN_AS_IS}` });
  }
}

/** Every key a flow's `dependencies` (at any level) declares that `deps` does not have, at its JSON path. */
function missingDependencies(cfg: FlowConfig, path: string, deps: DependencyLookup): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [key, description] of Object.entries(cfg.dependencies)) {
    if (!deps.has(key)) {
      problems.push({ path: `${path}/dependencies${pointer([key])}`, message: `dependency '${key}' (${description}) is not provided: loadFlow's DependencyContainer has no '${key}' (the backpackflow CLI provides none: build such a flow with --flow-module)` });
    }
  }
  cfg.nodes.forEach((node, i) => node.internalFlow && problems.push(...missingDependencies(node.internalFlow, `${path}/nodes/${i}/internalFlow`, deps)));
  (cfg.subflows ?? []).forEach((sub, k) => problems.push(...missingDependencies(sub, `${path}/subflows/${k}`, deps)));
  return problems;
}

/**
 * The Backpack and event streamer to build a loaded flow on: `options.backpack`/`options.eventStreamer`, else the
 * `backpack`/`eventStreamer` dependencies (each checked to be one; both ways at once must agree), and the lookup
 * the nodes get, which hides those two keys.
 */
function ownerDependencies(deps: DependencyLookup, options: LoadOptions): { backpack?: Backpack; eventStreamer?: EventStreamer; lookup: DependencyLookup } {
  const pick = <T>(key: string, Class: abstract new (...args: never[]) => T, option: T | undefined): T | undefined => {
    if (!deps.has(key)) return option;
    const value = deps.get<unknown>(key);
    if (!(value instanceof Class)) {
      throw new FlowConfigError([{ path: '', message: `dependency '${key}' is not ${Class === (BackpackClass as unknown) ? 'a Backpack' : 'an EventStreamer'} (got ${describe(value)}): loadFlow builds the flow on it, so it must be one` }], 'loadFlow');
    }
    if (option !== undefined && option !== value) {
      throw new FlowConfigError([{ path: '', message: `loadFlow got a ${key} both in options.${key} and as dependency '${key}', and they differ: give one` }], 'loadFlow');
    }
    return value;
  };
  const backpack = pick(BACKPACK_DEP, BackpackClass, options.backpack);
  const eventStreamer = pick(EVENT_STREAMER_DEP, EventStreamerClass, options.eventStreamer);
  if (!deps.has(BACKPACK_DEP) && !deps.has(EVENT_STREAMER_DEP)) return { backpack, eventStreamer, lookup: deps };
  const hidden = new Set([BACKPACK_DEP, EVENT_STREAMER_DEP]);
  const lookup: DependencyLookup = Object.freeze({
    has: (key: string) => !hidden.has(key) && deps.has(key),
    get: <T>(key: string): T => {
      if (hidden.has(key)) throw new Error(`Dependency '${key}' is the owner's view: loadFlow built the flow on it, and nodes read state through their own handle`);
      return deps.get<T>(key);
    },
  });
  return { backpack, eventStreamer, lookup };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return (value as object).constructor?.name ?? 'an object';
}

function toLookup(deps: DependencyLookup | Record<string, unknown> | undefined): DependencyLookup {
  if (deps === undefined) return new DependencyContainer();
  if (typeof (deps as DependencyLookup).get === 'function' && typeof (deps as DependencyLookup).has === 'function') return deps as DependencyLookup;
  const container = new DependencyContainer();
  for (const [key, value] of Object.entries(deps)) container.register(key, value);
  return container;
}

/** Nesting problems found before schema validation: a flow that contains itself (by identity), or too deep a nesting. */
function checkNesting(config: unknown, maxDepth: number): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const visit = (flow: unknown, path: string, chain: { flow: unknown; path: string }[], depth: number): void => {
    if (!flow || typeof flow !== 'object') return;
    const ancestor = chain.find((c) => c.flow === flow);
    if (ancestor) {
      problems.push({ path, message: `circular nesting: this flow is its own ancestor at ${ancestor.path || '/'}` });
      return;
    }
    if (depth > maxDepth) {
      problems.push({ path, message: `nesting deeper than the maximum depth ${maxDepth}` });
      return;
    }
    const next = [...chain, { flow, path }];
    const { nodes, subflows } = flow as { nodes?: unknown; subflows?: unknown };
    if (Array.isArray(nodes)) {
      nodes.forEach((node, i) => {
        if (node && typeof node === 'object' && 'internalFlow' in node) {
          visit((node as { internalFlow: unknown }).internalFlow, `${path}/nodes/${i}/internalFlow`, next, depth + 1);
        }
      });
    }
    if (Array.isArray(subflows)) subflows.forEach((sub, k) => visit(sub, `${path}/subflows/${k}`, next, depth));
  };
  visit(config, '', [], 0);
  return problems;
}

/**
 * Freezes the plain-JSON values of a shared config's params in place and makes them stored values of the Backpack
 * (see adoptValue): a node packing one shares it instead of copying it. A value that is not plain data (a caller's
 * object config may hold anything) stays as it is, and is copied when packed, like any value of a node's own.
 */
function adoptParams(params: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(params)) {
    try {
      adoptValue(key, value);
    } catch (error) {
      if (!(error instanceof BackpackError)) throw error;
    }
  }
}

/**
 * Why a class that is not a BackpackNode of this copy of the library may still look like one: it extends a class
 * named BackpackNode of another copy (a module importing the library's sources, or another installed copy, beside
 * the built CLI), which `instanceof` does not accept. Empty when it does not.
 */
function foreignBackpackNode(value: unknown): string {
  if (!isForeignBackpackNode(value)) return '';
  return `: ${(value as { name?: string }).name || 'the class'} extends a BackpackNode of another copy of backpackflow (its module imports backpackflow from elsewhere, such as the sources beside a built CLI); import BackpackNode from the backpackflow that loads the flow`;
}

/** Whether `value` is a class extending a class named BackpackNode that is not this copy's (see foreignBackpackNode). */
export function isForeignBackpackNode(value: unknown): boolean {
  if (typeof value !== 'function' || value === BackpackNode || value.prototype instanceof BackpackNode) return false;
  for (let proto: unknown = Object.getPrototypeOf(value); typeof proto === 'function'; proto = Object.getPrototypeOf(proto)) {
    if (proto.name === 'BackpackNode') return true;
  }
  return false;
}

/** Whether namespaces `a` and `b` are the same or one is under the other (whole segments). */
function namespacesOverlap(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
}

/**
 * The node `NodeClass.fromConfig` builds for `config` (the loader's own copy of the node's config, as the flow file
 * gives it), as node code (see asBuilder), given only what it needs of `flow` (see {@link NodeLoadFlow}). Its
 * `addNode` adds one node, the one `config` describes: its id, and the namespace segment, access rules and retry
 * settings the flow author gave, are the author's whatever the class passes (it decides the rest: its params, and
 * what the author left to the class); and `fromConfig` must return that node. Anything else is an error naming the node.
 */
async function fromConfigOf(NodeClass: LoadableNodeClass, flow: Flow, config: BackpackNodeConfig, context: Omit<NodeLoadContext, 'flow'>): Promise<BackpackNode> {
  let added: BackpackNode | undefined;
  const author: Partial<BackpackNodeConfig> = {};
  for (const key of ['id', 'namespaceSegment', 'permissions', 'maxRetries', 'retryDelayMs'] as const) if (config[key] !== undefined) Object.assign(author, { [key]: config[key] });
  const target: NodeLoadFlow = Object.freeze({
    id: flow.id,
    namespace: flow.namespace,
    addNode: <T extends BackpackNode>(Class: BackpackNodeClass<T>, given: BackpackNodeConfig): T => {
      if (added !== undefined) throw new FlowError(`fromConfig of node '${config.id}' may add one node, its own`);
      if (given === null || typeof given !== 'object') throw new TypeError(`fromConfig of node '${config.id}': addNode takes a config object`);
      const node = flow.addNode(Class, { ...given, ...author });
      added = node;
      return node;
    },
  });
  const built = await asBuilder(undefined, () => NodeClass.fromConfig!(config, { ...context, flow: target }, flow.deps));
  if (added === undefined || built !== added) throw new FlowError(`fromConfig of node '${config.id}' must add its node with context.flow.addNode and return it`);
  return added;
}
