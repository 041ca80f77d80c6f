import { valueKind } from '../fs/index.js';
import { checkAgentId } from './agents.js';
import { ContextError } from './errors.js';
import { checkFrameType } from './frames.js';
import type { FrameEntry } from './state.js';

/** Built-in orderings. Every ordering ends with FrameID as the tie-breaker, never the clock. */
export type FrameOrdering = 'recency' | 'oldest' | 'type' | 'agent';

/** Which frames of a node a reader gets from `getNode`, and in what order. */
export interface ContextView {
  /** At most this many frames (default 50). */
  readonly maxFrames?: number;
  /** Default `'recency'` (latest append first). */
  readonly ordering?: FrameOrdering;
  /** Only these frame types. */
  readonly types?: readonly string[];
  /** Only frames by these agents. */
  readonly agents?: readonly string[];
  /** Only current heads (one frame per type). */
  readonly headsOnly?: boolean;
  /** For `'type'` ordering: types listed first, in this order; others after, by name. */
  readonly typePriority?: readonly string[];
  /** For `'agent'` ordering: agents listed first, in this order; others after, by id. */
  readonly agentPriority?: readonly string[];
}

/** The fields of a {@link ContextView}. */
const VIEW_FIELDS: ReadonlySet<string> = new Set(['maxFrames', 'ordering', 'types', 'agents', 'headsOnly', 'typePriority', 'agentPriority']);
/** The fields of a composition's filters that a view shares (see compose.ts). */
export const FILTER_FIELDS: ReadonlySet<string> = new Set(['types', 'agents', 'headsOnly']);

/**
 * Throws a ContextError (INVALID_ARGUMENT) naming the field unless `view` is a {@link ContextView}: an object of its
 * fields only (a misspelt one would be ignored), its lists lists of frame types or agent ids (a string would be
 * matched as a substring: `'summary'` selected frames of type `sum`), `headsOnly` a boolean (the string `'false'`
 * was taken as true). `maxFrames` and `ordering` are checked where they are used. `where` names the view in messages
 * (`getNode: view`, `--view`).
 */
export function checkView(view: unknown, where: string): ContextView {
  checkFields(view, VIEW_FIELDS, where);
  const v = view as ContextView;
  checkFilterFields(v, where);
  checkList(v.typePriority, `${where}.typePriority`, 'frame types', checkFrameType);
  checkList(v.agentPriority, `${where}.agentPriority`, 'agent ids', checkAgentId);
  return v;
}

/** Checks a view's (or a composition's) `types`, `agents` and `headsOnly`; `where` names the object. */
export function checkFilterFields(filters: Pick<ContextView, 'types' | 'agents' | 'headsOnly'>, where: string): void {
  checkList(filters.types, `${where}.types`, 'frame types', checkFrameType);
  checkList(filters.agents, `${where}.agents`, 'agent ids', checkAgentId);
  if (filters.headsOnly !== undefined && typeof filters.headsOnly !== 'boolean') {
    throw new ContextError('INVALID_ARGUMENT', `${where}.headsOnly must be true or false, got ${valueKind(filters.headsOnly)}`);
  }
}

/** Throws unless `value` is a plain object whose own keys are all in `fields`; `where` names it. */
export function checkFields(value: unknown, fields: ReadonlySet<string>, where: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ContextError('INVALID_ARGUMENT', `${where} must be an object, got ${valueKind(value)}`);
  const unknown = Object.keys(value).filter((key) => !fields.has(key));
  if (unknown.length > 0) {
    throw new ContextError('INVALID_ARGUMENT', `${where} has unknown field(s) ${unknown.map((key) => JSON.stringify(key)).join(', ')}; its fields are ${[...fields].join(', ')}`);
  }
}

/** Throws unless `value` is undefined or a list whose every element `check` accepts; `what` names the elements. */
export function checkList(value: unknown, where: string, what: string, check: (element: unknown, where: string) => unknown): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) throw new ContextError('INVALID_ARGUMENT', `${where} must be a list of ${what}, got ${valueKind(value)}`);
  value.forEach((element, i) => check(element, `${where}[${i}]`));
}

/** A frame entry considered for a view or a composition. */
export interface Candidate {
  readonly entry: FrameEntry;
  readonly path: string;
  readonly isHead: boolean;
}

/** Validates a maxFrames value; `where` names the call. */
export function checkMaxFrames(value: unknown, where: string, fallback: number): number {
  const n = value ?? fallback;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new ContextError('INVALID_ARGUMENT', `${where}: maxFrames must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** The comparator for a built-in ordering; ties always fall back to FrameID. */
export function comparatorFor(
  ordering: FrameOrdering,
  options: { typePriority?: readonly string[]; agentPriority?: readonly string[] },
  where: string,
): (a: Candidate, b: Candidate) => number {
  const recency = (a: Candidate, b: Candidate) => b.entry.seq - a.entry.seq;
  switch (ordering) {
    case 'recency':
      return (a, b) => recency(a, b) || byId(a, b);
    case 'oldest':
      return (a, b) => -recency(a, b) || byId(a, b);
    case 'type': {
      const rank = ranker(options.typePriority);
      return (a, b) => rank(a.entry.type, b.entry.type) || recency(a, b) || byId(a, b);
    }
    case 'agent': {
      const rank = ranker(options.agentPriority);
      return (a, b) => rank(a.entry.agentId, b.entry.agentId) || recency(a, b) || byId(a, b);
    }
    default:
      throw new ContextError('INVALID_ARGUMENT', `${where}: unknown ordering ${JSON.stringify(ordering)}; use recency, oldest, type or agent`);
  }
}

/** Applies a view's filters to a node's frame entries (heads marked), without reading any frame file. */
export function filterCandidates(candidates: readonly Candidate[], view: Pick<ContextView, 'types' | 'agents' | 'headsOnly'>): Candidate[] {
  return candidates.filter(
    (c) =>
      (view.types === undefined || view.types.includes(c.entry.type)) &&
      (view.agents === undefined || view.agents.includes(c.entry.agentId)) &&
      (!view.headsOnly || c.isHead),
  );
}

/** Frame entries of one node as candidates. */
export function candidatesOf(path: string, entries: readonly FrameEntry[] | undefined, heads: Record<string, string> | undefined): Candidate[] {
  return (entries ?? []).map((entry) => ({ entry, path, isHead: heads?.[entry.type] === entry.frameId }));
}

function byId(a: Candidate, b: Candidate): number {
  return a.entry.frameId < b.entry.frameId ? -1 : a.entry.frameId > b.entry.frameId ? 1 : 0;
}

function ranker(priority: readonly string[] | undefined): (a: string, b: string) => number {
  const order = new Map((priority ?? []).map((v, i) => [v, i]));
  return (a, b) => {
    const ra = order.get(a) ?? order.size;
    const rb = order.get(b) ?? order.size;
    return ra - rb || (a < b ? -1 : a > b ? 1 : 0);
  };
}
