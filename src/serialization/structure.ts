/**
 * The structural check of a flow config against its zod schemas (DESIGN D14), one node, edge and subflow at a time.
 * Checking a whole config in one `safeParse` builds zod's copy of it (every node and params object again): for a
 * flow of a million nodes, more than the parsed file itself. Here each member is checked on its own and its copy
 * dropped at once; the normalized config returned shares the input's objects wherever they are already normal
 * (defaults present), so a valid config is held once.
 *
 * The problems are zod's own issues for the same schemas, in the order a whole-config parse reports them, and a
 * `__proto__` key of a record (params, dependencies, mappings), which zod passes over (see protoKeyProblems).
 */
import { z } from 'zod';
import { pointer, type ConfigProblem } from './errors.js';
import { FlowConfigSchema, FlowEdgeSchema, NodeConfigSchema, type FlowConfig, type FlowEdge, type NodeConfig } from './schema.js';

/** A flow with its members left unchecked (each is checked on its own below). */
const FlowShellSchema = FlowConfigSchema.extend({
  nodes: z.array(z.unknown()),
  edges: z.array(z.unknown()).default([]),
  subflows: z.array(z.unknown()).optional(),
});

/** A node with its internal flow left unchecked (checked as a flow of its own). */
const NodeShellSchema = NodeConfigSchema.extend({ internalFlow: z.unknown().optional() });

/** The order in which zod reports the issues of an object: its shape's keys, then the object's own (path `[]`). */
const FLOW_KEYS = Object.keys(FlowConfigSchema.shape);
const NODE_KEYS = Object.keys(NodeConfigSchema.shape);
const EDGE_KEYS = Object.keys(FlowEdgeSchema.shape);

type Buckets = Map<string, ConfigProblem[]>;

/** Problems by the first segment of their path ('' for the object's own); `prefix` is the object's JSON pointer. */
function bucketed(issues: readonly z.core.$ZodIssue[], prefix: string): Buckets {
  const buckets: Buckets = new Map();
  for (const issue of issues) {
    const key = issue.path.length === 0 ? '' : String(issue.path[0]);
    let list = buckets.get(key);
    if (list === undefined) buckets.set(key, (list = []));
    list.push({ path: `${prefix}${pointer(issue.path)}`, message: issue.message });
  }
  return buckets;
}

/** Appends the problems of `buckets` to `problems` in zod's order: by `keys`, then the object's own. */
function report(buckets: Buckets, keys: readonly string[], problems: ConfigProblem[]): void {
  for (const key of keys) for (const problem of buckets.get(key) ?? []) problems.push(problem);
  for (const problem of buckets.get('') ?? []) problems.push(problem);
}

/** Adds `more` to the bucket of `key`. */
function add(buckets: Buckets, key: string, more: ConfigProblem[]): void {
  if (more.length === 0) return;
  const list = buckets.get(key);
  if (list === undefined) buckets.set(key, more);
  else list.push(...more);
}

/**
 * The problem of a `__proto__` key in record field `key` of `owner` (params, dependencies, mappings), at its JSON
 * pointer under `path`. JSON.parse keeps such a key as an own key, but zod's record check skips it and leaves it out
 * of its copy: unchecked, it would be kept or lost depending on whether the loader uses zod's copy. Refused instead.
 */
function protoKeyProblems(owner: unknown, key: string, path: string): ConfigProblem[] {
  if (owner === null || typeof owner !== 'object') return [];
  const record = (owner as Record<string, unknown>)[key];
  if (record === null || typeof record !== 'object' || !Object.hasOwn(record, '__proto__')) return [];
  return [{ path: `${path}/${key}/__proto__`, message: `'__proto__' cannot be a key of ${key}: in JavaScript it names an object's prototype, so it would be dropped or misread; rename it` }];
}

/**
 * Checks `input` against FlowConfigSchema, appending every problem (JSON pointers under `path`) to `problems`.
 * Returns the normalized config (defaults filled, sharing the input's objects where they need no default) when
 * there is no problem, else undefined.
 */
export function checkFlowStructure(input: unknown, path: string, problems: ConfigProblem[]): FlowConfig | undefined {
  const shell = FlowShellSchema.safeParse(input);
  const buckets = bucketed(shell.success ? [] : shell.error.issues, path);
  const raw = (input !== null && typeof input === 'object' ? input : {}) as Record<string, unknown>;
  const members = <T>(key: string, check: (item: unknown, at: string, out: ConfigProblem[]) => T | undefined): T[] | undefined => {
    const list = raw[key];
    if (!Array.isArray(list) || buckets.has(key)) return undefined;
    const out: ConfigProblem[] = [];
    const checked: T[] = new Array<T>(list.length);
    let ok = true;
    for (let i = 0; i < list.length; i++) {
      const item = check(list[i], `${path}/${key}/${i}`, out);
      if (item === undefined) ok = false;
      else checked[i] = item;
    }
    add(buckets, key, out);
    return ok ? checked : undefined;
  };
  add(buckets, 'dependencies', protoKeyProblems(input, 'dependencies', path));
  const nodes = members('nodes', checkNodeStructure);
  const edges = members('edges', checkEdgeStructure);
  const subflows = members('subflows', checkFlowStructure);
  const before = problems.length;
  report(buckets, FLOW_KEYS, problems);
  if (!shell.success || problems.length > before) return undefined;
  const { subflows: _unchecked, ...rest } = shell.data;
  const config: FlowConfig = { ...rest, nodes: nodes!, edges: edges ?? [] };
  if (subflows !== undefined) config.subflows = subflows;
  return config;
}

/** Checks one node; returns it normalized (the input itself when it is), else undefined. */
function checkNodeStructure(input: unknown, path: string, problems: ConfigProblem[]): NodeConfig | undefined {
  const shell = NodeShellSchema.safeParse(input);
  const buckets = bucketed(shell.success ? [] : shell.error.issues, path);
  add(buckets, 'params', protoKeyProblems(input, 'params', path));
  const given = input !== null && typeof input === 'object' ? (input as Record<string, unknown>).internalFlow : undefined;
  let internalFlow: FlowConfig | undefined;
  if (given !== undefined) {
    const inner: ConfigProblem[] = [];
    internalFlow = checkFlowStructure(given, `${path}/internalFlow`, inner);
    add(buckets, 'internalFlow', inner);
  }
  const before = problems.length;
  report(buckets, NODE_KEYS, problems);
  if (!shell.success || problems.length > before) return undefined;
  const node = input as NodeConfig;
  // Normal as given: params present, no internal flow to normalize, no permissions (zod's copy of those is frozen).
  if (node.params !== undefined && node.permissions === undefined && given === undefined) return node;
  const { internalFlow: _unchecked, ...rest } = shell.data;
  const out: NodeConfig = rest;
  if (internalFlow !== undefined) out.internalFlow = internalFlow;
  return out;
}

/** Checks one edge; returns it normalized (the input itself when it names its condition), else undefined. */
function checkEdgeStructure(input: unknown, path: string, problems: ConfigProblem[]): FlowEdge | undefined {
  const parsed = FlowEdgeSchema.safeParse(input);
  const buckets = bucketed(parsed.success ? [] : parsed.error.issues, path);
  add(buckets, 'mappings', protoKeyProblems(input, 'mappings', path));
  const before = problems.length;
  report(buckets, EDGE_KEYS, problems);
  if (!parsed.success || problems.length > before) return undefined;
  return (input as Partial<FlowEdge>).condition === undefined ? parsed.data : (input as FlowEdge);
}
