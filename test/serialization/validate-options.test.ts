/**
 * Issue 13: what validateConfig checks so that `validate` refuses what `run` refuses, each problem at its JSON
 * pointer: namespace segments by addNode's rule, `__proto__` keys of records, declared dependencies against those
 * given, and names that hold a secret.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, FlowLoader, type ConfigProblem } from '../../src/index.js';
import { readFlowConfigFile } from '../../src/serialization/index.js';
import { secretNameTest } from '../../src/runtime/flow-names.js';
import { makeTempDir } from '../support/temp.js';

class Step extends BackpackNode {}
class Dotted extends BackpackNode {
  static override namespaceSegment = 'a.b';
}
class AKIAQWERTYUIOPASDFGH extends BackpackNode {}
const loader = new FlowLoader().register('Step', Step).register('Dotted', Dotted).register('Leaky', AKIAQWERTYUIOPASDFGH);

const TOKEN = `ghp_${'a1B2'.repeat(9)}`;
/** Another GitHub token, its characters those of `TOKEN` in another order. */
const token = (n: number): string => `ghp_${'a1B2'.repeat(9).slice(n)}${'a1B2'.repeat(9).slice(0, n)}`;
const flow = (extra: Record<string, unknown> = {}, nodes: unknown[] = [{ type: 'Step', id: 'a', params: {} }]) => ({ version: '2.0.0', namespace: 'top', nodes, ...extra });
const paths = (problems: ConfigProblem[]) => problems.map((p) => p.path);

describe('validateConfig: namespace segments, by the rule addNode applies', () => {
  it('at the field the segment comes from: the id, the namespaceSegment, or the type (a class segment)', async () => {
    const nodes = [
      { type: 'Step', id: 'src.x', params: {} },
      { type: 'Step', id: 'ok', namespaceSegment: 'has space', params: {} },
      { type: 'Dotted', id: 'd', params: {} },
      { type: 'Step', id: 'fine.id', namespaceSegment: 'fine', params: {} },
    ];
    const { errors } = loader.validateConfig(flow({}, nodes));
    expect(errors).toEqual([
      { path: '/nodes/0/id', message: `Namespace segment of node 'src.x' must be one segment of letters, digits, '_' or '-' (no '.', no '*'); got "src.x"` },
      { path: '/nodes/1/namespaceSegment', message: expect.stringContaining(`Namespace segment of node 'ok' must be one segment`) },
      { path: '/nodes/2/type', message: expect.stringContaining(`Namespace segment of node 'd' must be one segment`) },
    ]);
    // What loading says of the same nodes (one at a time: the first problem stops a load), message for message.
    for (const [i, node] of nodes.slice(0, 3).entries()) {
      const built = await loader.loadFlow(flow({}, [node]), undefined).then(() => [], (error: { errors: ConfigProblem[] }) => error.errors);
      expect(built.map((p) => p.message)).toEqual([errors[i]!.message]);
    }
    // An id with a dot is a fine id when the node has a segment of its own: it loads.
    await expect(loader.loadFlow(flow({}, [nodes[3]]))).resolves.toBeDefined();
  });
});

describe("validateConfig: '__proto__' keys of records", () => {
  it('are refused at their pointer in params, dependencies and mappings, read from JSON text or a file', () => {
    const text = JSON.stringify({
      version: '2.0.0',
      nodes: [
        { type: 'Step', id: 'a', params: { k: 1 } },
        { type: 'Step', id: 'b', params: {} },
      ],
      edges: [{ from: 'a', to: 'b', mappings: { x: 'y' } }],
      dependencies: { db: 'a database' },
    })
      .replace('"k":1', '"__proto__":{"polluted":true},"k":1')
      .replace('"x":"y"', '"__proto__":"y"')
      .replace('"db":"a database"', '"__proto__":"a database"');
    const expected = ['/nodes/0/params/__proto__', '/edges/0/mappings/__proto__', '/dependencies/__proto__'];
    const fromText = loader.validateConfig(text).errors;
    expect(paths(fromText)).toEqual(expected.slice().sort((a, b) => order(a) - order(b)));
    expect(fromText[0]!.message).toBe("'__proto__' cannot be a key of params: in JavaScript it names an object's prototype, so it would be dropped or misread; rename it");
    // The chunked file reader keeps the key as JSON.parse does.
    const file = join(makeTempDir('bpf-validate-', 'test'), 'flow.json');
    writeFileSync(file, text);
    expect(loader.validateConfig(readFlowConfigFile(file)).errors).toEqual(fromText);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('a node object or flow with a __proto__ key is an unknown key, as before', () => {
    const text = '{"version":"2.0.0","nodes":[{"type":"Step","id":"a","params":{},"__proto__":{"id":"b"}}]}';
    expect(loader.validateConfig(text).errors).toEqual([{ path: '/nodes/0', message: 'Unrecognized key: "__proto__"' }]);
  });
});

/** Problems in the order validateConfig reports them: a flow's nodes, edges, then its dependencies. */
function order(path: string): number {
  return path.startsWith('/nodes') ? 0 : path.startsWith('/edges') ? 1 : 2;
}

describe('validateConfig({ dependencies })', () => {
  it('reports each declared dependency not given, at every level, as loadFlow does; unchecked without the option', async () => {
    const config = flow({ dependencies: { llm: 'a model', db: 'a database' }, subflows: [flow({ namespace: 'sub', dependencies: { cache: 'a cache' } })] });
    const missing = loader.validateConfig(config, { dependencies: { db: {} } }).errors;
    expect(missing).toEqual([
      { path: '/dependencies/llm', message: "dependency 'llm' (a model) is not provided: loadFlow's DependencyContainer has no 'llm' (the backpackflow CLI provides none: build such a flow with --flow-module)" },
      { path: '/subflows/0/dependencies/cache', message: "dependency 'cache' (a cache) is not provided: loadFlow's DependencyContainer has no 'cache' (the backpackflow CLI provides none: build such a flow with --flow-module)" },
    ]);
    const loaded = await loader.loadFlow(config, { db: {} }).then(() => [], (error: { errors: ConfigProblem[] }) => error.errors);
    expect(loaded).toEqual(missing);
    expect(loader.validateConfig(config).errors).toEqual([]);
  });

  it('are reported beside the other problems of the config', () => {
    const config = flow({ dependencies: { llm: 'a model' } }, [{ type: 'Nope', id: 'a', params: {} }]);
    expect(paths(loader.validateConfig(config, { dependencies: {} }).errors)).toEqual(['/nodes/0/type', '/dependencies/llm']);
  });
});

describe('validateConfig({ secretName })', () => {
  const secretName = secretNameTest();
  const check = (config: unknown) => loader.validateConfig(config, { secretName }).errors;

  it('reports a node id, namespace segment, class name, flow or subflow namespace that holds a secret, at its pointer, without quoting it', () => {
    const problems = check(
      flow({ subflows: [flow({ namespace: token(1) })] }, [
        { type: 'Step', id: TOKEN, params: {} },
        { type: 'Step', id: 'b', namespaceSegment: token(2), params: {} },
        { type: 'Leaky', id: 'c', params: {} },
        { type: 'Leaky', id: 'd', params: {} },
        { type: 'Step', id: 'e', params: {}, internalFlow: { version: '2.0.0', nodes: [{ type: 'Step', id: TOKEN, params: {} }] } },
      ]),
    );
    expect(paths(problems)).toEqual(['/nodes/0/id', '/nodes/1/namespaceSegment', '/nodes/2/type', '/nodes/4/internalFlow/nodes/0/id', '/subflows/0/namespace']);
    expect(problems[0]!.message).toBe('the node id looks like a secret: names and ids are written to the event log as they are (never redacted), so they must not hold secrets; rename it');
    for (const problem of problems) expect(problem.message).not.toMatch(/ghp_|AKIA/);
  });

  it('a namespace that holds a secret is reported once, at the flow, not at every node under it', () => {
    expect(check(flow({ namespace: `team.${TOKEN}` }, [{ type: 'Step', id: 'a', params: {} }, { type: 'Step', id: 'b', params: {} }]))).toEqual([
      { path: '/namespace', message: expect.stringMatching(/^the flow's namespace looks like a secret/) },
    ]);
  });

  it('a secret made of the parts of a namespace is found in the namespace as a run writes it', () => {
    // A JWT's three parts: the flow's namespace holds two (no secret), the node's id the third (none either).
    const namespace = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0';
    expect([secretName(namespace), secretName('sig')]).toEqual([false, false]);
    expect(check(flow({ namespace }, [{ type: 'Step', id: 'sig', params: {} }]))).toEqual([
      { path: '/nodes/0/id', message: expect.stringMatching(/^the node's namespace looks like a secret/) },
    ]);
  });

  it('is not checked without the option', () => {
    expect(loader.validateConfig(flow({}, [{ type: 'Step', id: TOKEN, params: {} }])).errors).toEqual([]);
  });
});
