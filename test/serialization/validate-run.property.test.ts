/**
 * Issue 13: `backpackflow validate` must not accept what `backpackflow run` cannot run. validateFlow is what the
 * command runs; the reference is what `run` does with a flow file: load it (no dependencies given) and run it
 * durably. Every node of the generated flows is reachable, so a run writes every name of the flow.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, FlowError, FlowLoader, runFlow } from '../../src/index.js';
import { validateFlow } from '../../src/cli/backpackflow/flows.js';
import { makeTempDir } from '../support/temp.js';
import { trials } from '../support/soak.js';

class Step extends BackpackNode {}
class Seg extends BackpackNode {
  static override namespaceSegment = 'seg';
}
class Dotted extends BackpackNode {
  static override namespaceSegment = 'a.b';
}
const loader = new FlowLoader().register('Step', Step).register('Seg', Seg).register('Dotted', Dotted);

const alnum = (length: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9]{${length}}$`));
/** Names as users write them: mostly fine, some with dots, stars, spaces, other characters, or a token in them. */
const name = fc.oneof(
  { weight: 40, arbitrary: fc.stringMatching(/^[a-z0-9_-]{1,6}$/) },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z.*_ -]{1,6}$/) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'a..b', '.a', 'é') },
  { weight: 1, arbitrary: alnum(36).map((s) => `ghp_${s}`) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Z0-9]{16}$/).map((s) => `AKIA${s}`) },
);

/** The tokens `name` makes, in full (what the redaction replaces). */
const TOKEN = /ghp_[A-Za-z0-9]{36}|AKIA[A-Z0-9]{16}/;

/** `value` one time in `n`, else undefined. */
const sometimes = <T>(value: fc.Arbitrary<T>, n: number): fc.Arbitrary<T | undefined> => fc.oneof({ weight: n - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: value });

interface NodeInput {
  type: string;
  id: string;
  params: Record<string, unknown>;
  namespaceSegment?: string;
  internalFlow?: FlowInput;
}
interface FlowInput {
  version: string;
  namespace?: string;
  nodes: NodeInput[];
  edges: { from: string; to: string }[];
  subflows?: FlowInput[];
  dependencies?: Record<string, string>;
}

/** A flow whose nodes (and subflow) are chained: each reachable from the first. */
function flow(depth: number, nested: boolean): fc.Arbitrary<FlowInput> {
  const node: fc.Arbitrary<NodeInput> = fc
    .record({
      type: fc.constantFrom(...Array<string>(12).fill('Step'), 'Seg', 'Dotted'),
      id: name,
      namespaceSegment: sometimes(name, 4),
      internalFlow: depth > 0 ? sometimes(flow(depth - 1, true), 4) : fc.constant(undefined),
    })
    .map(({ namespaceSegment, internalFlow, ...rest }) => ({
      ...rest,
      params: {},
      ...(namespaceSegment === undefined ? {} : { namespaceSegment }),
      ...(internalFlow === undefined ? {} : { internalFlow }),
    }));
  return fc
    .record({
      namespace: nested ? fc.constant(undefined) : sometimes(name, 2),
      nodes: fc.array(node, { minLength: 1, maxLength: 3 }),
      subflow: depth > 0 && !nested ? sometimes(fc.tuple(name, flow(depth - 1, false)), 3) : fc.constant(undefined),
      dependencies: sometimes(fc.dictionary(fc.constantFrom('llm', 'db', '__proto__'), fc.constant('a service'), { minKeys: 1, maxKeys: 1 }), 12),
    })
    .map(({ namespace, nodes, subflow, dependencies }) => {
      const ids = nodes.map((n) => n.id);
      const config: FlowInput = { version: '2.0.0', nodes, edges: ids.slice(1).map((to, i) => ({ from: ids[i]!, to })) };
      if (namespace !== undefined) config.namespace = namespace;
      if (dependencies !== undefined) config.dependencies = dependencies;
      if (subflow !== undefined) {
        config.subflows = [{ ...subflow[1], namespace: subflow[0] }];
        config.edges.push({ from: ids.at(-1)!, to: subflow[0] });
      }
      return config;
    });
}

/** What `run` does with the flow file: load it as the CLI does (no dependencies) and run it durably. */
async function runs(config: FlowInput, dataDir: string): Promise<{ ok: boolean; error?: unknown }> {
  try {
    const built = await loader.loadFlow(JSON.stringify(config));
    await runFlow(built, { dataDir, durability: 'never' });
    return { ok: true };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The events logged by every run under `dataDir`. */
function loggedEvents(dataDir: string): number {
  const runs = join(dataDir, 'sessions', 'default', 'runs');
  if (!existsSync(runs)) return 0;
  let lines = 0;
  for (const run of readdirSync(runs)) {
    const log = join(runs, run, 'events.jsonl');
    if (existsSync(log)) lines += readFileSync(log, 'utf8').split('\n').filter(Boolean).length;
  }
  return lines;
}

describe('validate accepts a flow file iff run can run it', () => {
  it("refuses, as run does, a subflow whose namespace sits at or under a node's, or overlaps another subflow's (the property's counterexample of 2026-11-28)", async () => {
    const underNode: FlowInput = {
      version: '2.0.0',
      nodes: [{ type: 'Step', id: 'a_', params: {}, namespaceSegment: '-' }, { type: 'Step', id: '_', params: {} }],
      edges: [{ from: 'a_', to: '_' }, { from: '_', to: '-' }],
      subflows: [{ version: '2.0.0', nodes: [{ type: 'Step', id: 'a', params: {} }], edges: [], namespace: '-' }],
    };
    expect(validateFlow(loader, underNode).errors).toEqual([
      { path: '/subflows/0/namespace', message: expect.stringMatching(/^subflow namespace '-' overlaps \/nodes\/0: namespaces are unique within a flow/) },
    ]);
    expect((await runs(underNode, makeTempDir('bpf-validate-run-', 'test'))).ok).toBe(false);
    const nested: FlowInput = {
      version: '2.0.0',
      nodes: [{ type: 'Step', id: 'n', params: {} }],
      edges: [],
      subflows: [
        { version: '2.0.0', nodes: [{ type: 'Step', id: 'a', params: {} }], edges: [], namespace: 'tools' },
        { version: '2.0.0', nodes: [{ type: 'Step', id: 'b', params: {} }], edges: [], namespace: 'tools.web' },
      ],
    };
    expect(validateFlow(loader, nested).errors.map((p) => p.path)).toEqual(['/subflows/1/namespace']);
    expect((await runs(nested, makeTempDir('bpf-validate-run-', 'test'))).ok).toBe(false);
  });

  it('ids, namespace segments (config, class or id), namespaces, subflows, internal flows, dependencies, secret-looking names', async () => {
    const dir = makeTempDir('bpf-validate-run-', 'test');
    let trial = 0;
    await fc.assert(
      fc.asyncProperty(flow(2, false), async (config) => {
        const dataDir = join(dir, String(trial++));
        const problems = validateFlow(loader, JSON.parse(JSON.stringify(config))).errors;
        const ran = await runs(config, dataDir);
        expect({ valid: problems.length === 0, problems }).toEqual({ valid: ran.ok, problems: ran.ok ? [] : expect.anything() });
        // A loaded flow refused for a name is refused before anything of the run is written: by the runtime, not the
        // store (which would refuse it after the first step), and the error does not quote the token.
        if (!ran.ok && !(ran.error instanceof Error && 'errors' in ran.error)) {
          expect(ran.error).toBeInstanceOf(FlowError);
          expect((ran.error as Error).message).not.toMatch(TOKEN);
          expect(loggedEvents(dataDir)).toBe(0);
        }
        // Every problem is at a JSON pointer into the file; a name's secret is not quoted.
        for (const problem of problems) {
          expect(problem.path).toMatch(/^(\/[^/]+)+$/);
          if (problem.message.includes('looks like a secret')) expect(problem.message).not.toMatch(TOKEN);
        }
      }),
      { numRuns: trials(150, 1500) },
    );
  });
});
