/**
 * Audit items 4, 5 and 8: params that `validate` passed and `run` refused or changed. The rule: validateConfig
 * accepts exactly what loadFlow loads, with the same problems at the same JSON paths: an unset `${ENV}` variable
 * (item 4), params that contain themselves in an object config (item 5: loadFlow overflowed the stack, with no
 * path), and a number that is not finite (item 8: JSON's 1e400 reached the node as Infinity but the run recorded null).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { BackpackNode, FlowConfigError, FlowLoader, type ConfigProblem } from '../../src/index.js';
import { validateFlow } from '../../src/cli/backpackflow/flows.js';
import { trials } from '../support/soak.js';

class Echo extends BackpackNode {}
const loader = new FlowLoader().register('Echo', Echo);

const flowOf = (params: unknown, more: Record<string, unknown> = {}) => ({ version: '2.0.0', nodes: [{ type: 'Echo', id: 'a', params, ...more }], edges: [] });

/** The problems loadFlow refuses `config` with ([] when it loads), for each way of giving it. */
async function loadProblems(config: unknown, env: Record<string, string | undefined>, shareConfig = false): Promise<ConfigProblem[]> {
  try {
    await loader.loadFlow(config, undefined, { env, shareConfig });
    return [];
  } catch (error) {
    if (!(error instanceof FlowConfigError)) throw error;
    return error.errors;
  }
}

const VARIABLES = ['BPF_A', 'BPF_B', 'BPF_C'] as const;
const text = fc.oneof(
  fc.constantFrom('plain', '', '$', '${', '${}', '${lower case}'),
  fc.constantFrom(...VARIABLES).map((name) => `\${${name}}`),
  fc.tuple(fc.constantFrom(...VARIABLES), fc.constantFrom(...VARIABLES)).map(([a, b]) => `x\${${a}}-\${${b}}y`),
);
const number = fc.oneof({ weight: 8, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) }, { weight: 1, arbitrary: fc.constantFrom(Infinity, -Infinity, NaN) });
const key = fc.stringMatching(/^[a-z]{1,4}$/);
const { param } = fc.letrec<{ param: unknown }>((tie) => ({
  param: fc.oneof({ depthSize: 'small' }, text, number, fc.boolean(), fc.constant(null), fc.array(tie('param'), { maxLength: 3 }), fc.dictionary(key, tie('param'), { maxKeys: 3 })),
}));
const env = fc.subarray([...VARIABLES]).map((set) => Object.fromEntries(set.map((name) => [name, `value of ${name}`])) as Record<string, string | undefined>);

describe('validateConfig accepts exactly what loadFlow loads: params', () => {
  it('reports the same problems at the same JSON paths as loadFlow, for any params with ${ENV} references and numbers', async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(key, param, { maxKeys: 4 }), fc.option(fc.dictionary(key, param, { maxKeys: 3 }), { nil: undefined }), env, async (params, innerParams, vars) => {
        const config = flowOf(params, innerParams === undefined ? {} : { internalFlow: { version: '2.0.0', nodes: [{ type: 'Echo', id: 'b', params: innerParams }], edges: [] } });
        const validated = loader.validateConfig(config, { env: vars }).errors;
        expect(validated).toEqual(await loadProblems(config, vars));
        expect(validated).toEqual(await loadProblems(config, vars, true));
        // (as text, a number that is not finite is written as null)
        const text = JSON.stringify(config);
        expect(loader.validateConfig(text, { env: vars }).errors).toEqual(await loadProblems(text, vars));
      }),
      { numRuns: trials(150, 1500) },
    );
  });

  it('an unset variable is a problem at its JSON path, as loadFlow reports it', () => {
    const config = flowOf({ prompt: '${BPF_UNSET}', list: ['ok', 'and ${BPF_UNSET}'] });
    const message = 'environment variable BPF_UNSET is not set (referenced as ${BPF_UNSET})';
    expect(loader.validateConfig(config, { env: {} }).errors).toEqual([
      { path: '/nodes/0/params/prompt', message },
      { path: '/nodes/0/params/list/1', message },
    ]);
    expect(loader.validateConfig(config, { env: { BPF_UNSET: 'set' } })).toEqual({ valid: true, errors: [] });
  });

  it('a number that is not finite (1e400 in JSON parses as Infinity) is refused at its JSON path', async () => {
    const text = '{"version":"2.0.0","nodes":[{"type":"Echo","id":"a","params":{"n":1e400,"deep":{"list":[1,-1e999]}}}]}';
    const expected = [
      { path: '/nodes/0/params/n', message: expect.stringMatching(/^Infinity is not a finite number .*1e400.*give a finite number$/) },
      { path: '/nodes/0/params/deep/list/1', message: expect.stringMatching(/^-Infinity is not a finite number/) },
    ];
    expect(loader.validateConfig(text).errors).toEqual(expected);
    expect(await loadProblems(text, {})).toEqual(expected);
    expect(loader.validateConfig(flowOf({ n: NaN })).errors).toEqual([{ path: '/nodes/0/params/n', message: expect.stringMatching(/^NaN is not a finite number/) }]);
  });
});

describe('params that contain themselves (an object config)', () => {
  it('are refused by validateConfig and loadFlow alike, at the JSON path that refers back and naming the enclosing value', async () => {
    // a chain of objects params/k0/k1/...; the innermost refers back to the one at level `back`
    // ('id' is a node setting: as a top-level param it is a problem of its own, reported beside the cycle.)
    const paramKey = key.filter((k) => k !== 'id');
    const chain = fc.integer({ min: 0, max: 5 }).chain((depth) => fc.tuple(fc.array(paramKey, { minLength: depth, maxLength: depth }), fc.integer({ min: 0, max: depth }), paramKey, fc.boolean()));
    await fc.assert(
      fc.asyncProperty(chain, async ([keys, back, last, inArray]) => {
        const params: Record<string, unknown> = { before: '${BPF_UNSET}' };
        const levels: object[] = [params];
        let at: Record<string, unknown> = params;
        for (const k of keys) levels.push((at = (at[k] = { other: 1 }) as Record<string, unknown>));
        at[last] = inArray ? ['x', levels[back]] : levels[back];
        const enclosing = ['/nodes/0/params', ...keys].slice(0, back + 1).join('/');
        const where = `${['/nodes/0/params', ...keys].join('/')}/${last}${inArray ? '/1' : ''}`;
        const expected = [{ path: where, message: `circular params: this value is the one enclosing it at ${enclosing}, so it contains itself; params must be JSON data` }];
        expect(loader.validateConfig(flowOf(params), { env: {} }).errors).toEqual(expected);
        expect(await loadProblems(flowOf(params), {})).toEqual(expected);
        expect(await loadProblems(flowOf(params), {}, true)).toEqual(expected);
      }),
      { numRuns: trials(60, 600) },
    );
  });

  it('in an internal flow too; a value shared by two params (no cycle) is accepted', async () => {
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    const config = flowOf({}, { internalFlow: { version: '2.0.0', nodes: [{ type: 'Echo', id: 'b', params: { list: cyclic } }], edges: [] } });
    const expected = [{ path: '/nodes/0/internalFlow/nodes/0/params/list/0', message: expect.stringContaining('enclosing it at /nodes/0/internalFlow/nodes/0/params/list,') }];
    expect(loader.validateConfig(config).errors).toEqual(expected);
    expect(await loadProblems(config, {})).toEqual(expected);
    const shared = { x: [1, 2] };
    expect(loader.validateConfig(flowOf({ a: shared, b: shared, c: [shared, shared] })).errors).toEqual([]);
    expect(await loadProblems(flowOf({ a: shared, b: shared }), {})).toEqual([]);
  });
});

describe('backpackflow validate: ${ENV} references against the environment run uses', () => {
  const name = 'BPF_HOSTILE_PARAMS_TEST_VAR';
  afterEach(() => {
    delete process.env[name];
  });

  it('reports an unset variable at its JSON path, and passes once it is set', () => {
    const config = flowOf({ prompt: `\${${name}}` });
    expect(validateFlow(loader, config).errors).toEqual([{ path: '/nodes/0/params/prompt', message: `environment variable ${name} is not set (referenced as \${${name}})` }]);
    process.env[name] = 'set';
    expect(validateFlow(loader, config).errors).toEqual([]);
  });
});
