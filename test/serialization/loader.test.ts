import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BackpackNode,
  ChatNode,
  DependencyContainer,
  Flow,
  FlowConfigError,
  FlowLoader,
  defaultFlowLoader,
  normalizeFlowConfig,
  parseFlowConfig,
  type BackpackHandle,
  type ConfigProblem,
} from '../../src/index.js';
import { KeywordsNode, PipelineNode, TemplateNode, TextSourceNode } from '../../examples/flows/nodes.js';
import { exampleLoader, prdExample, startedNamespaces, YouTubeSearchNode } from './fixtures.js';
import { paramsOf } from '../../src/nodes/backpack-node.js';

const examplesDir = join(import.meta.dirname, '..', '..', 'examples', 'flows');
const keywordsJson = readFileSync(join(examplesDir, 'keywords.json'), 'utf8');

function problemsOf(loader: FlowLoader, config: unknown): ConfigProblem[] {
  return loader.validateConfig(config).errors;
}

describe('FlowLoader registry', () => {
  it('registers types, reports them sorted and refuses a taken type', () => {
    const loader = new FlowLoader().register('B', TemplateNode).register('A', KeywordsNode);
    expect(loader.isRegistered('A')).toBe(true);
    expect(loader.isRegistered('C')).toBe(false);
    expect(loader.getRegisteredTypes()).toEqual(['A', 'B']);
    expect(() => loader.register('A', TemplateNode)).toThrow(`FlowLoader.register: type 'A' is already registered to KeywordsNode`);
    expect(() => loader.register('X', Object as never)).toThrow(/expected a BackpackNode class/);
  });
});

describe('loading and exporting', () => {
  it('the example JSON flow loads, runs, and exports back to its normalized config', async () => {
    const loader = exampleLoader();
    const config = parseFlowConfig(keywordsJson);
    const flow = await loader.loadFlow(config);
    await flow.run();
    expect(flow.backpack.peek('summary')).toBe('Top words: state, every, backpacks');
    expect(startedNamespaces(flow)).toEqual(['notes.source', 'notes.analyze', 'notes.analyze.keywords', 'notes.analyze.summary']);
    expect(loader.exportFlow(flow)).toEqual(normalizeFlowConfig(config));
  });

  it('the loaded flow produces the same backpack as the same flow built by hand', async () => {
    const loaded = await exampleLoader().loadFlow(parseFlowConfig(keywordsJson));
    await loaded.run();
    const text = (JSON.parse(keywordsJson) as { nodes: { params: { text: string } }[] }).nodes[0]!.params.text;
    const hand = new Flow({ namespace: 'notes' });
    const source = hand.addNode(TextSourceNode, { id: 'source', key: 'text', text });
    const analyze = hand.addNode(PipelineNode, { id: 'analyze' });
    const inner = hand.createChildFlow(analyze);
    inner.addNode(KeywordsNode, { id: 'keywords', from: 'text', to: 'keywords', top: 3 }).next(inner.addNode(TemplateNode, { id: 'summary', template: 'Top words: {{keywords}}', to: 'summary' }));
    analyze.attachInternalFlow(inner);
    source.next(analyze);
    await hand.run();
    expect(loaded.backpack.toObject()).toEqual(hand.backpack.toObject());
    expect(exampleLoader().exportFlow(hand)).toEqual(exampleLoader().exportFlow(loaded));
  });

  it('a loaded composite runs more than once and its internal flow shares the parent backpack', async () => {
    const flow = await exampleLoader().loadFlow(parseFlowConfig(keywordsJson));
    const analyze = flow.getNode('analyze') as BackpackNode;
    expect(() => analyze.internalFlow!.backpack).toThrow(/runs inside node 'analyze'/);
    await flow.run();
    await flow.run();
    expect(flow.backpack.getVersion('summary')).toBe(2);
    expect(flow.backpack.getItem('summary')?.metadata.sourceNamespace).toBe('notes.analyze.summary');
  });

  it('exports a composite declared up front before any run', () => {
    class Declared extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(TemplateNode, { id: 'inner', template: 'x', to: 'y' });
      }
    }
    const loader = new FlowLoader().register('Declared', Declared).register('Template', TemplateNode);
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Declared, { id: 'd' });
    const config = loader.exportFlow(flow);
    expect(config.nodes[0]!.internalFlow).toEqual({
      version: '2.0.0',
      namespace: 'app.d',
      nodes: [{ type: 'Template', id: 'inner', params: { template: 'x', to: 'y' } }],
      edges: [],
      dependencies: {},
    });
  });

  it('the PRD-004 §4.1 nested example loads, validates, runs and exports back unchanged', async () => {
    const loader = exampleLoader();
    expect(loader.validateConfig(prdExample)).toEqual({ valid: true, errors: [] });
    const flow = await loader.loadFlow(prdExample);
    const agent = flow.getNode('agent') as BackpackNode;
    expect(agent.internalFlow!.getAllNodes()).toHaveLength(3);
    await flow.run();
    expect(flow.backpack.peek('summary')).toBe('gpt-4: 1 outliers');
    expect(loader.exportFlow(flow)).toEqual(prdExample);
  });

  it('export depth 0 leaves internal flows out; a negative depth is refused', async () => {
    const loader = exampleLoader();
    const flow = await loader.loadFlow(prdExample);
    expect(loader.exportFlow(flow, { depth: 0 }).nodes[0]!.internalFlow).toBeUndefined();
    expect(loader.exportFlow(flow, { depth: 1 }).nodes[0]!.internalFlow?.nodes).toHaveLength(3);
    expect(() => loader.exportFlow(flow, { depth: -1 })).toThrow(/depth must be an integer >= 0/);
  });

  it('a node takes no flow but one built on it as its internal flow (so none nests in itself)', () => {
    const flow = new Flow({ namespace: 'loop' });
    const node = flow.addNode(PipelineNode, { id: 'p' });
    expect(() => node.attachInternalFlow(flow)).toThrow(/attachInternalFlow takes a flow built on this node/);
  });

  it("subflows (tech spec decision 5's config) load with composed namespaces and export back", async () => {
    const config = {
      version: '2.0.0',
      namespace: 'sales',
      nodes: [{ type: 'TextSource', id: 'chat', params: { key: 'text', text: 'quarterly sales report numbers' } }],
      subflows: [
        {
          version: '2.0.0',
          namespace: 'reports',
          nodes: [{ type: 'Keywords', id: 'daily', params: { from: 'text', to: 'daily', top: 2 } }],
          edges: [],
          dependencies: {},
        },
      ],
      edges: [{ from: 'chat', to: 'reports', condition: 'default' }],
      dependencies: {},
    };
    const loader = exampleLoader();
    const flow = await loader.loadFlow(config);
    await flow.run();
    expect(flow.backpack.getItem('daily')?.metadata.sourceNamespace).toBe('sales.reports.daily');
    expect(loader.exportFlow(flow)).toEqual(normalizeFlowConfig(config));
  });

  it('Flow.fromConfig loads with the default loader (the built-in node types registered), or with the loader given', async () => {
    const flow = await Flow.fromConfig({ version: '2.0.0', namespace: 'x', nodes: [{ type: 'ChatNode', id: 'chat', params: { promptFrom: 'q' } }] });
    expect(flow.getNode('chat')).toBeInstanceOf(ChatNode);
    const own = await Flow.fromConfig({ version: '2.0.0', namespace: 'x', nodes: [{ type: 'TextSource', id: 's', params: { key: 'k', text: 'v' } }] }, { loader: new FlowLoader().register('TextSource', TextSourceNode) });
    await own.run();
    expect(own.backpack.peek('k')).toBe('v');
    // The default loader takes registrations only before the first run in the process (node code may run outside any
    // node's run by then).
    expect(() => defaultFlowLoader.register('TextSource', TextSourceNode)).toThrow(/cannot be registered on defaultFlowLoader once a flow has run/);
  });

  it('a nested loadFlow inside a node execution shares that flow\'s backpack', async () => {
    const loader = exampleLoader();
    class Loads extends BackpackNode {
      override async exec() {
        const inner = await loader.loadFlow({ version: '2.0.0', namespace: 'inner', nodes: [{ type: 'TextSource', id: 's', params: { key: 'nested', text: 'yes' } }] });
        await inner.run();
      }
    }
    const outer = new Flow();
    outer.addNode(Loads, { id: 'loads' });
    await outer.run();
    expect(outer.backpack.peek('nested')).toBe('yes');
  });
});

describe('secrets and environment', () => {
  const withKey = (apiKey: string) => ({
    version: '2.0.0',
    namespace: 'yt',
    nodes: [{ type: 'YouTubeSearchNode', id: 'search', params: { apiKey, maxResults: 5, auth: { bearerToken: 'abc' } } }],
  });

  it('masks schema-marked and secret-named params unless includeSensitive', async () => {
    const loader = exampleLoader();
    const flow = await loader.loadFlow(withKey('real-key-123'));
    expect(loader.exportFlow(flow).nodes[0]!.params).toEqual({ apiKey: '***', maxResults: 5, auth: { bearerToken: '***' } });
    expect(loader.exportFlow(flow, { includeSensitive: true }).nodes[0]!.params).toEqual({ apiKey: 'real-key-123', maxResults: 5, auth: { bearerToken: 'abc' } });
  });

  it('resolves ${ENV} at load time and exports the reference, never the resolved secret', async () => {
    const loader = exampleLoader();
    const flow = await loader.loadFlow(withKey('${YT_KEY}'), undefined, { env: { YT_KEY: 'resolved-secret' } });
    expect(paramsOf(flow.getNode('search') as YouTubeSearchNode)['apiKey']).toBe('resolved-secret');
    // Code in no node's execution reads it masked, as another node's code does.
    expect((flow.getNode('search') as YouTubeSearchNode).params.apiKey).toBe('***');
    expect(JSON.stringify(loader.exportFlow(flow, { includeSensitive: true }))).not.toContain('resolved-secret');
    expect(loader.exportFlow(flow, { includeSensitive: true }).nodes[0]!.params.apiKey).toBe('${YT_KEY}');
  });

  it('copies params by default; with shareConfig (or from text) the nodes keep the config\'s values, with ${ENV} still resolved', async () => {
    const rows = [{ id: 1 }, { id: 2 }];
    const config = () => ({
      version: '2.0.0',
      namespace: 'yt',
      nodes: [{ type: 'YouTubeSearchNode', id: 'search', params: { apiKey: '${YT_KEY}', maxResults: 5, auth: { rows } } }],
    });
    const env = { YT_KEY: 'resolved' };
    const held = (flow: Awaited<ReturnType<FlowLoader['loadFlow']>>) => paramsOf(flow.getNode('search') as YouTubeSearchNode);
    const copied = held(await exampleLoader().loadFlow(config(), undefined, { env }));
    expect(copied.auth).toEqual({ rows });
    expect((copied.auth as { rows: unknown }).rows).not.toBe(rows); // a later change to the caller's config cannot reach the node
    const shared = held(await exampleLoader().loadFlow(config(), undefined, { env, shareConfig: true }));
    expect((shared.auth as { rows: unknown }).rows).toBe(rows); // held once
    expect(shared.apiKey).toBe('resolved'); // the string with a reference is still resolved (its container copied)
    const fromText = held(await exampleLoader().loadFlow(JSON.stringify(config()), undefined, { env }));
    expect(fromText).toEqual(shared);
  });

  it('freezes shared plain-JSON params in place, and a node packing one stores it without a copy (nobody can change it)', async () => {
    class Put extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('data', this.config.value);
        return undefined;
      }
    }
    const loader = new FlowLoader().register('Put', Put);
    const value = { rows: [{ id: 1, tags: ['a'] }, { id: 2, tags: [] }] };
    const flow = await loader.loadFlow({ version: '2.0.0', namespace: 'n', nodes: [{ type: 'Put', id: 'p', params: { value } }] }, undefined, { shareConfig: true });
    expect(Object.isFrozen(value) && Object.isFrozen(value.rows) && Object.isFrozen(value.rows[0]) && Object.isFrozen(value.rows[0]!.tags)).toBe(true);
    expect(() => value.rows[0]!.tags.push('b')).toThrow(TypeError);
    await flow.run();
    expect(flow.backpack.unpack('data')).toBe(value); // stored as it is: frozen all through already
    // Without shareConfig the caller's config stays theirs: unfrozen, and the Backpack keeps a frozen copy.
    const own = { rows: [{ id: 1 }] };
    const copied = await loader.loadFlow({ version: '2.0.0', namespace: 'n', nodes: [{ type: 'Put', id: 'p', params: { value: own } }] });
    await copied.run();
    expect(Object.isFrozen(own)).toBe(false);
    expect(copied.backpack.unpack('data')).not.toBe(own);
    expect(copied.backpack.unpack('data')).toEqual(own);
  });

  it('a shared param that is not plain data stays as it is (unfrozen) and is copied when packed', async () => {
    class Put extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('data', this.config.value);
        return undefined;
      }
    }
    const value = { plain: { n: 1 }, date: new Date(0) };
    const flow = await new FlowLoader().register('Put', Put).loadFlow({ version: '2.0.0', namespace: 'n', nodes: [{ type: 'Put', id: 'p', params: { value } }] }, undefined, { shareConfig: true });
    expect(Object.isFrozen(value)).toBe(false);
    expect(Object.isFrozen(value.plain)).toBe(true); // what was checked before the Date is plain data, frozen
    await flow.run();
    expect(flow.backpack.unpack('data')).not.toBe(value);
    expect(flow.backpack.unpack('data')).toEqual(value);
  });

  it('a missing environment variable is an error naming it and its JSON path', async () => {
    const error = (await exampleLoader().loadFlow(withKey('${NOT_SET_ANYWHERE}'), undefined, { env: {} }).catch((e: unknown) => e)) as FlowConfigError;
    expect(error).toBeInstanceOf(FlowConfigError);
    expect(error.errors).toEqual([{ path: '/nodes/0/params/apiKey', message: 'environment variable NOT_SET_ANYWHERE is not set (referenced as ${NOT_SET_ANYWHERE})' }]);
  });
});

describe('bad input names the JSON path', () => {
  const loader = exampleLoader();
  const base = () => JSON.parse(keywordsJson) as Record<string, any>;

  it('malformed JSON gives line and column', () => {
    const error = (() => {
      try {
        parseFlowConfig('{\n  "version": "2.0.0",\n  "nodes": [\n    { "id": "a" oops }\n  ]\n}');
      } catch (e) {
        return e as FlowConfigError;
      }
    })();
    expect(error).toBeInstanceOf(FlowConfigError);
    expect(error!.message).toMatch(/not valid JSON at line 4, column \d+/);
  });

  it('wrong version', () => {
    expect(problemsOf(loader, { ...base(), version: '3.0.0' })).toContainEqual({ path: '/version', message: 'version 3.0.0 is not supported; this loader reads 2.x.x' });
    expect(problemsOf(loader, { ...base(), version: 'two' })[0]!.path).toBe('/version');
  });

  it('unknown node type', () => {
    const config = base();
    config.nodes[1].internalFlow.nodes[0].type = 'Nope';
    expect(problemsOf(loader, config)).toEqual([
      { path: '/nodes/1/internalFlow/nodes/0/type', message: expect.stringMatching(/^unknown node type 'Nope' \(registered: .*Keywords/) },
    ]);
  });

  it('missing required param and invalid param', () => {
    const config = base();
    delete config.nodes[0].params.key;
    config.nodes[1].internalFlow.nodes[0].params.top = 'five';
    const paths = problemsOf(loader, config).map((p) => p.path);
    expect(paths).toEqual(['/nodes/0/params/key', '/nodes/1/internalFlow/nodes/0/params/top']);
  });

  it('edge to an unknown node, duplicate node id, unknown entry — all reported together', () => {
    const config = base();
    config.edges.push({ from: 'source', to: 'ghost', condition: 'x' });
    config.nodes[1].internalFlow.nodes[1].id = 'keywords';
    config.entry = 'nobody';
    const problems = problemsOf(loader, config);
    expect(problems.map((p) => p.path).sort()).toEqual(['/edges/1/to', '/entry', '/nodes/1/internalFlow/edges/0/to', '/nodes/1/internalFlow/nodes/1/id', '/nodes/1/internalFlow/nodes/1/namespaceSegment'].sort());
    expect(problems.find((p) => p.path === '/edges/1/to')!.message).toBe(`edge to 'ghost': no node or subflow with that id in this flow`);
  });

  it('a flow nested in itself (by object identity) and too deep a nesting', () => {
    const config = base();
    config.nodes[1].internalFlow = config;
    expect(problemsOf(loader, config)).toEqual([{ path: '/nodes/1/internalFlow', message: 'circular nesting: this flow is its own ancestor at /' }]);
    let deep: Record<string, any> = { version: '2.0.0', nodes: [{ type: 'Pipeline', id: 'leaf', params: {} }] };
    for (let i = 0; i < 11; i++) deep = { version: '2.0.0', nodes: [{ type: 'Pipeline', id: `p${i}`, params: {}, internalFlow: deep }] };
    expect(problemsOf(loader, deep)[0]!.message).toBe('nesting deeper than the maximum depth 10');
  });

  it('schema problems carry JSON pointers; loadFlow refuses with every problem', async () => {
    const config = { version: '2.0.0', nodes: [{ type: 'Keywords' }, { id: 'x', type: 'Template', params: {}, extra: 1 }] };
    const error = (await loader.loadFlow(config).catch((e: unknown) => e)) as FlowConfigError;
    expect(error).toBeInstanceOf(FlowConfigError);
    expect(error.errors.map((p) => p.path)).toEqual(['/nodes/0/id', '/nodes/1']);
    expect(error.message).toMatch(/Invalid flow config \(2 problems\)/);
  });
});

describe('DependencyContainer', () => {
  it('registers values and lazy cached factories, and names a missing key', () => {
    let made = 0;
    const deps = new DependencyContainer().register('client', { name: 'llm' }).registerFactory('engine', () => ({ made: ++made }));
    expect(deps.has('engine')).toBe(true);
    expect(made).toBe(0);
    expect(deps.get('engine')).toBe(deps.get('engine'));
    expect(made).toBe(1);
    expect(deps.keys()).toEqual(['client', 'engine']);
    expect(() => deps.get('missing')).toThrow(`Missing dependency 'missing': register it with container.register('missing', value) (registered: client, engine)`);
    expect(() => deps.register('', 1)).toThrow(/non-empty string/);
  });

  it('loadFlow passes it to nodes as this.deps', async () => {
    class UsesDeps extends BackpackNode {
      override post(backpack: BackpackHandle) {
        backpack.pack('greeting', (this.deps!.get('greeter') as (n: string) => string)('world'));
        return undefined;
      }
    }
    const loader = new FlowLoader().register('UsesDeps', UsesDeps);
    const flow = await loader.loadFlow({ version: '2.0.0', nodes: [{ type: 'UsesDeps', id: 'u' }] }, new DependencyContainer().register('greeter', (n: string) => `hello ${n}`));
    await flow.run();
    expect(flow.backpack.peek('greeting')).toBe('hello world');
    const plain = await loader.loadFlow({ version: '2.0.0', nodes: [{ type: 'UsesDeps', id: 'u' }] }, { greeter: (n: string) => `hi ${n}` });
    await plain.run();
    expect(plain.backpack.peek('greeting')).toBe('hi world');
  });
});

describe('permissions in a flow file (issue 12)', () => {
  it('restrict the node, export back unchanged, and a dotted namespaceSegment is refused at its JSON path', async () => {
    const loader = exampleLoader();
    const config = {
      version: '2.0.0',
      namespace: 'p',
      nodes: [
        { type: 'TextSource', id: 'a', params: { key: 'secret', text: 's3cret' } },
        { type: 'Template', id: 'b', params: { template: 'saw {{secret}}', to: 'out' }, permissions: { read: ['nothing'], write: ['out'] } },
      ],
      edges: [{ from: 'a', to: 'b' }],
    };
    const flow = await loader.loadFlow(config);
    await flow.run();
    expect(flow.backpack.peek('out')).not.toContain('s3cret');
    expect(loader.exportFlow(flow).nodes[1]!.permissions).toEqual({ read: ['nothing'], write: ['out'] });
    const dotted = { ...config, nodes: [{ ...config.nodes[0]!, namespaceSegment: 'x.y' }] , edges: [] };
    expect(loader.validateConfig(dotted).errors).toContainEqual({ path: '/nodes/0/namespaceSegment', message: expect.stringContaining("Namespace segment of node 'a' must be one segment") });
  });
});

describe('loadFlow beforeBuild', () => {
  class Counted extends BackpackNode {
    static made = 0;
    constructor(...args: ConstructorParameters<typeof BackpackNode>) {
      super(...args);
      Counted.made++;
    }
  }
  const loader = (): FlowLoader => new FlowLoader().register('Counted', Counted);
  const config = (): Record<string, unknown> => ({
    version: '2.0.0',
    namespace: 'app',
    nodes: [
      { type: 'Counted', id: 'a', params: {} },
      { type: 'Counted', id: 'b', params: {}, internalFlow: { version: '2.0.0', nodes: [{ type: 'Counted', id: 'c', params: {} }], edges: [] } },
    ],
    edges: [{ from: 'a', to: 'b' }],
  });

  it('is called once, with the config as given, before any node is built; the flow is then built as without it', async () => {
    Counted.made = 0;
    const given = config();
    const seen: unknown[] = [];
    const flow = await loader().loadFlow(given, undefined, {
      beforeBuild: async (c) => {
        seen.push(c, Counted.made);
        await Promise.resolve();
      },
    });
    expect(seen).toEqual([given, 0]);
    expect(Counted.made).toBe(3);
    expect(loader().exportFlow(flow)).toEqual(loader().exportFlow(await loader().loadFlow(config())));
    // The caller's config is left as it was given (only the loader's own checked copy is taken apart).
    expect(given).toEqual(config());
  });

  it('is not called for an invalid config or one whose dependencies are missing, and a failing hook builds nothing', async () => {
    const calls: unknown[] = [];
    const hook = (c: unknown): void => void calls.push(c);
    await expect(loader().loadFlow({ ...config(), edges: [{ from: 'a', to: 'nowhere' }] }, undefined, { beforeBuild: hook })).rejects.toThrow(FlowConfigError);
    await expect(loader().loadFlow({ ...config(), dependencies: { llm: 'a model' } }, undefined, { beforeBuild: hook })).rejects.toThrow(/dependency 'llm'/);
    expect(calls).toEqual([]);
    Counted.made = 0;
    await expect(
      loader().loadFlow(config(), undefined, {
        beforeBuild: () => {
          throw new Error('disk full');
        },
      }),
    ).rejects.toThrow('disk full');
    expect(Counted.made).toBe(0);
  });
});
