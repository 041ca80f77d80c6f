import { checkAgentId } from './agents.js';
import { ContextError } from './errors.js';
import { checkFrameType } from './frames.js';
import { canonicalJson } from './hash.js';
import { baseName, displayPath } from './paths.js';
import { checkList } from './view.js';

/** One child frame fed to a synthesis policy. */
export interface SynthesisChild {
  readonly path: string;
  readonly kind: 'file' | 'dir' | 'symlink';
  readonly frameId: string;
  readonly type: string;
  readonly agentId: string;
  readonly content: string;
}

/** What a policy sees: the directory and its child frames in basis order. Nothing else (no global access). */
export interface SynthesisInput {
  readonly path: string;
  readonly frameType: string;
  readonly children: readonly SynthesisChild[];
}

/** A registered custom policy: must be a pure function of its input. */
export type CustomSynthesisFn = (input: SynthesisInput) => string;

/**
 * How a directory frame is made from its children's frames:
 * - `concatenation`: every child frame, headed by its path and type;
 * - `summarization`: one line per child frame (first non-empty line, cut at `maxLineLength`), plus a count;
 * - `filtering`: only child frames matching `agents` / `types` / `contains`, then concatenated or summarized;
 * - `custom`: a function registered under `name` with `registerSynthesisPolicy`.
 *
 * `sourceType` (default: the frame type being synthesized) selects which head of each file child is read; `'*'`
 * reads every head. Directory children always contribute their frame of the synthesized type.
 */
export type SynthesisPolicy =
  | { readonly kind: 'concatenation'; readonly sourceType?: string }
  | { readonly kind: 'summarization'; readonly sourceType?: string; readonly maxLineLength?: number }
  | {
      readonly kind: 'filtering';
      readonly sourceType?: string;
      readonly agents?: readonly string[];
      readonly types?: readonly string[];
      readonly contains?: string;
      readonly then?: 'concatenation' | 'summarization';
    }
  | { readonly kind: 'custom'; readonly name: string; readonly sourceType?: string };

/** Policy names accepted on the command line. */
export const POLICY_KINDS = ['concatenation', 'summarization', 'filtering', 'custom'] as const;

/** The fields of each kind of policy. */
const POLICY_FIELDS: ReadonlyMap<unknown, ReadonlySet<string>> = new Map<SynthesisPolicy['kind'], ReadonlySet<string>>([
  ['concatenation', new Set(['kind', 'sourceType'])],
  ['summarization', new Set(['kind', 'sourceType', 'maxLineLength'])],
  ['filtering', new Set(['kind', 'sourceType', 'agents', 'types', 'contains', 'then'])],
  ['custom', new Set(['kind', 'name', 'sourceType'])],
]);

/** A validated policy: its canonical key (hashed into the basis) and how to apply it. */
export interface ResolvedPolicy {
  readonly key: string;
  readonly sourceType: string;
  select(children: readonly SynthesisChild[]): SynthesisChild[];
  render(input: SynthesisInput): string;
}

/** Validates `policy` and resolves custom names against `registry`; errors name the policy and what to fix. */
export function resolvePolicy(
  policy: SynthesisPolicy,
  frameType: string,
  registry: ReadonlyMap<string, CustomSynthesisFn>,
): ResolvedPolicy {
  const bad = (why: string): never => {
    throw new ContextError('INVALID_ARGUMENT', `synthesis policy ${JSON.stringify(policy)}: ${why}`, { policy });
  };
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) return bad('must be an object');
  // A misspelt field would be ignored (a `sourceTyep` read the synthesized type's heads); a name of the wrong kind
  // is stored in every synthesized frame's basis.
  const fields = POLICY_FIELDS.get(policy.kind);
  const unknown = fields === undefined ? [] : Object.keys(policy).filter((key) => !fields.has(key));
  if (unknown.length > 0) bad(`unknown field(s) ${unknown.map((key) => JSON.stringify(key)).join(', ')} for kind '${policy.kind}'; its fields are ${[...fields!].join(', ')}`);
  if (policy.sourceType !== undefined && policy.sourceType !== '*') checkFrameType(policy.sourceType, 'synthesis policy sourceType');
  const sourceType = policy.sourceType ?? frameType;
  switch (policy.kind) {
    case 'concatenation':
      return { key: canonicalJson({ kind: 'concatenation', sourceType }), sourceType, select: all, render: concatenate };
    case 'summarization': {
      const maxLineLength = policy.maxLineLength ?? 120;
      if (!Number.isInteger(maxLineLength) || maxLineLength < 8) bad('maxLineLength must be an integer >= 8');
      return {
        key: canonicalJson({ kind: 'summarization', sourceType, maxLineLength }),
        sourceType,
        select: all,
        render: (input) => summarize(input, maxLineLength),
      };
    }
    case 'filtering': {
      const then = policy.then ?? 'concatenation';
      if (then !== 'concatenation' && then !== 'summarization') bad(`'then' must be 'concatenation' or 'summarization'`);
      checkList(policy.agents, 'synthesis policy agents', 'agent ids', checkAgentId);
      checkList(policy.types, 'synthesis policy types', 'frame types', checkFrameType);
      if (policy.contains !== undefined && typeof policy.contains !== 'string') bad('contains must be a string');
      const agents = policy.agents === undefined ? undefined : [...policy.agents].sort();
      const types = policy.types === undefined ? undefined : [...policy.types].sort();
      const contains = policy.contains;
      if (agents === undefined && types === undefined && contains === undefined) bad('give at least one of agents, types, contains');
      return {
        key: canonicalJson({ kind: 'filtering', sourceType, agents, types, contains, then }),
        sourceType,
        select: (children) =>
          children.filter(
            (c) =>
              (agents === undefined || agents.includes(c.agentId)) &&
              (types === undefined || types.includes(c.type)) &&
              (contains === undefined || c.content.includes(contains)),
          ),
        render: then === 'summarization' ? (input) => summarize(input, 120) : concatenate,
      };
    }
    case 'custom': {
      const fn = registry.get(policy.name);
      if (fn === undefined) {
        throw new ContextError(
          'UNKNOWN_POLICY',
          `custom synthesis policy '${policy.name}' is not registered; call registerSynthesisPolicy('${policy.name}', fn) first`,
          { policy: policy.name },
        );
      }
      return {
        key: canonicalJson({ kind: 'custom', name: policy.name, sourceType }),
        sourceType,
        select: all,
        render: (input) => runCustom(policy.name, fn, input),
      };
    }
    default:
      return bad(`unknown kind; use one of ${POLICY_KINDS.join(', ')}`);
  }
}

/** Parses a policy back from its canonical key (stored in a frame's basis), for regeneration. */
export function policyFromKey(key: string): SynthesisPolicy {
  return JSON.parse(key) as SynthesisPolicy;
}

function all(children: readonly SynthesisChild[]): SynthesisChild[] {
  return [...children];
}

function concatenate(input: SynthesisInput): string {
  return input.children.map((c) => `## ${c.path} [${c.type}]\n${c.content}\n`).join('\n');
}

function summarize(input: SynthesisInput, maxLineLength: number): string {
  const lines = [`${displayPath(input.path)}: ${input.children.length} child frame(s) of type ${input.frameType}`];
  for (const child of input.children) {
    const first = child.content.split('\n').find((line) => line.trim() !== '')?.trim() ?? '';
    const cut = first.length > maxLineLength ? `${first.slice(0, maxLineLength - 1)}…` : first;
    lines.push(`- ${baseName(child.path)}${child.kind === 'dir' ? '/' : ''}: ${cut}`);
  }
  return `${lines.join('\n')}\n`;
}

function runCustom(name: string, fn: CustomSynthesisFn, input: SynthesisInput): string {
  const frozen = Object.freeze({ ...input, children: Object.freeze(input.children.map((c) => Object.freeze({ ...c }))) });
  const first = fn(frozen);
  if (typeof first !== 'string') {
    throw new ContextError('INVALID_ARGUMENT', `custom synthesis policy '${name}' returned ${typeof first}, not a string`, { policy: name });
  }
  // A cheap determinism check: the same input must give the same output twice.
  if (fn(frozen) !== first) {
    throw new ContextError(
      'NONDETERMINISTIC_POLICY',
      `custom synthesis policy '${name}' returned different content for the same input at '${displayPath(input.path)}'; policies must be deterministic`,
      { policy: name, path: input.path },
    );
  }
  return first;
}
