import { ContextError } from './errors.js';
import type { Frame } from './frames.js';
import { parentPath } from './paths.js';
import { own, type StoreState } from './state.js';
import type { NodeRecord, Tree } from './tree.js';
import { checkAgentId } from './agents.js';
import { checkFrameType } from './frames.js';
import { FILTER_FIELDS, candidatesOf, checkFields, checkFilterFields, checkList, checkMaxFrames, comparatorFor, filterCandidates, type Candidate, type FrameOrdering } from './view.js';

/** Where composition collects candidate frames. `related` lists NodeIDs or workspace paths. */
export type CompositionSource = 'current' | 'parent' | 'siblings' | { readonly related: readonly string[] };

/** Which source a composed frame came from. */
export type SourceName = 'current' | 'parent' | 'siblings' | 'related';

/** A frame selected by composition. */
export interface ComposedFrame {
  readonly frame: Frame;
  readonly source: SourceName;
  /** Append sequence number (recency). */
  readonly seq: number;
  readonly isHead: boolean;
  /** Relevance score, for the `'relevance'` ordering. */
  readonly score?: number;
}

/**
 * Orders composed frames: a built-in ordering, `'relevance'` (query-term hits, then closeness of the source), or a
 * custom comparator, which must be deterministic; ties always fall back to FrameID.
 */
export type CompositionOrdering = FrameOrdering | 'relevance' | ((a: ComposedFrame, b: ComposedFrame) => number);

/** The spec's CompositionPolicy. */
export interface CompositionPolicy {
  /** Hard limit on returned frames. */
  readonly maxFrames: number;
  /** Default `['current']`. */
  readonly sources?: readonly CompositionSource[];
  /** Default `'recency'`. */
  readonly ordering?: CompositionOrdering;
  readonly typePriority?: readonly string[];
  readonly agentPriority?: readonly string[];
  /** Words scored by the `'relevance'` ordering. */
  readonly query?: string;
  readonly filters?: {
    readonly types?: readonly string[];
    readonly agents?: readonly string[];
    readonly headsOnly?: boolean;
    /** Appended at or after this time (ISO string, Date or ms). */
    readonly since?: string | number | Date;
    /** Appended at or before this time. */
    readonly until?: string | number | Date;
  };
}

/** The result of `compose`: bounded, ordered, computed on demand and never stored. */
export interface ComposedContext {
  readonly nodeId: string;
  readonly path: string;
  readonly frames: ComposedFrame[];
  /** Candidates left after filtering, before the limit. */
  readonly candidates: number;
  /** Sources or frames that could not be read, and why (they are skipped, not fatal). */
  readonly skipped: { readonly ref: string; readonly reason: string }[];
}

/** What composition reads: nothing here can write. */
export interface CompositionReader {
  readonly tree: Tree;
  readonly state: Readonly<StoreState>;
  readFrame(frameId: string): Frame;
  resolve(ref: string): NodeRecord;
}

const SOURCE_WEIGHT: Record<SourceName, number> = { current: 3, parent: 2, siblings: 1, related: 1 };

/** Composes frames for `node` under `policy` (the spec's multi-frame composition). Read-only. */
export function composeFrames(reader: CompositionReader, node: NodeRecord, policy: CompositionPolicy): ComposedContext {
  checkPolicy(policy);
  const maxFrames = checkMaxFrames(policy?.maxFrames, 'compose', -1);
  const skipped: { ref: string; reason: string }[] = [];
  const sourced: { candidate: Candidate; source: SourceName }[] = [];
  const add = (path: string, source: SourceName) => {
    for (const candidate of candidatesOf(path, own(reader.state.frames, path), own(reader.state.heads, path))) sourced.push({ candidate, source });
  };
  const seen = new Set<string>();
  const addOnce = (path: string, source: SourceName) => {
    if (seen.has(path)) return;
    seen.add(path);
    add(path, source);
  };
  for (const source of policy.sources ?? ['current']) {
    if (source === 'current') addOnce(node.path, 'current');
    else if (source === 'parent') {
      const parent = parentPath(node.path);
      if (parent !== undefined) addOnce(parent, 'parent');
    } else if (source === 'siblings') {
      const parent = parentPath(node.path);
      const siblings = parent === undefined ? [] : (reader.tree.get(parent)?.children ?? []);
      for (const sibling of siblings) if (sibling !== node.path) addOnce(sibling, 'siblings');
    } else if (source !== null && typeof source === 'object' && Array.isArray(source.related)) {
      for (const ref of source.related) {
        try {
          addOnce(reader.resolve(ref).path, 'related');
        } catch (error) {
          skipped.push({ ref, reason: (error as Error).message });
        }
      }
    } else {
      throw new ContextError('INVALID_ARGUMENT', `compose: unknown source ${JSON.stringify(source)}; use current, parent, siblings or { related: [...] }`);
    }
  }

  const filters = policy.filters ?? {};
  const since = filters.since === undefined ? -Infinity : toMs(filters.since, 'since');
  const until = filters.until === undefined ? Infinity : toMs(filters.until, 'until');
  const kept = new Set(filterCandidates(sourced.map((s) => s.candidate), filters));
  const pool = sourced.filter((s) => kept.has(s.candidate) && s.candidate.entry.at >= since && s.candidate.entry.at <= until);

  const read = (s: { candidate: Candidate; source: SourceName }, score?: number): ComposedFrame | undefined => {
    try {
      const frame = reader.readFrame(s.candidate.entry.frameId);
      return { frame, source: s.source, seq: s.candidate.entry.seq, isHead: s.candidate.isHead, score };
    } catch (error) {
      skipped.push({ ref: s.candidate.entry.frameId, reason: (error as Error).message });
      return undefined;
    }
  };

  const ordering = policy.ordering ?? 'recency';
  const frames: ComposedFrame[] = [];
  if (typeof ordering === 'function' || ordering === 'relevance') {
    // These orderings need every candidate's content.
    const terms = queryTerms(policy.query ?? '');
    const all = pool.map((s) => read(s)).filter((f): f is ComposedFrame => f !== undefined);
    const scored = all.map((f) => (ordering === 'relevance' ? { ...f, score: relevance(f, terms) } : f));
    const compare =
      typeof ordering === 'function'
        ? ordering
        : (a: ComposedFrame, b: ComposedFrame) => (b.score ?? 0) - (a.score ?? 0) || b.seq - a.seq;
    scored.sort((a, b) => compare(a, b) || (a.frame.frameId < b.frame.frameId ? -1 : a.frame.frameId > b.frame.frameId ? 1 : 0));
    frames.push(...scored.slice(0, maxFrames));
  } else {
    const compare = comparatorFor(ordering, policy, 'compose');
    pool.sort((a, b) => compare(a.candidate, b.candidate));
    for (const s of pool) {
      if (frames.length >= maxFrames) break;
      const frame = read(s);
      if (frame !== undefined) frames.push(frame);
    }
  }
  return { nodeId: node.nodeId, path: node.path, frames, candidates: pool.length, skipped };
}

/** The fields of a {@link CompositionPolicy} and of its filters. */
const POLICY_FIELDS: ReadonlySet<string> = new Set(['maxFrames', 'sources', 'ordering', 'typePriority', 'agentPriority', 'query', 'filters']);
const POLICY_FILTER_FIELDS: ReadonlySet<string> = new Set([...FILTER_FIELDS, 'since', 'until']);

/**
 * Throws INVALID_ARGUMENT naming the field unless `policy` has a policy's fields only, each of its type (as a
 * ContextView is checked: a list given as a string would be matched as a substring, a misspelt field ignored).
 * `maxFrames`, `ordering`, the sources and the dates are checked where they are used.
 */
function checkPolicy(policy: CompositionPolicy): void {
  checkFields(policy, POLICY_FIELDS, 'compose: policy');
  checkList(policy.typePriority, 'compose: policy.typePriority', 'frame types', checkFrameType);
  checkList(policy.agentPriority, 'compose: policy.agentPriority', 'agent ids', checkAgentId);
  checkList(policy.sources, 'compose: policy.sources', 'sources', () => undefined);
  if (policy.query !== undefined && typeof policy.query !== 'string') throw new ContextError('INVALID_ARGUMENT', 'compose: policy.query must be a string');
  if (policy.filters !== undefined) {
    checkFields(policy.filters, POLICY_FILTER_FIELDS, 'compose: policy.filters');
    checkFilterFields(policy.filters, 'compose: policy.filters');
  }
}

function toMs(value: string | number | Date, name: string): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : Date.parse(value);
  if (Number.isNaN(ms)) throw new ContextError('INVALID_ARGUMENT', `compose: filters.${name} ${JSON.stringify(value)} is not a date`);
  return ms;
}

function queryTerms(query: string): string[] {
  return [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((t) => t !== ''))].sort();
}

function relevance(frame: ComposedFrame, terms: readonly string[]): number {
  const text = frame.frame.content.toLowerCase();
  let hits = 0;
  for (const term of terms) if (text.includes(term)) hits++;
  return hits * 10 + SOURCE_WEIGHT[frame.source];
}
