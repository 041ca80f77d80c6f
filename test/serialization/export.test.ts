import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { renderSchemaFile, repositoryRoot, schemaFiles } from '../../scripts/generate-schemas.js';
import {
  BackpackNode,
  DependencyContainer,
  Flow,
  FlowConfigError,
  FlowLoader,
  jsonErrorOffset,
  normalizeFlowConfig,
  parseFlowConfig,
  type BackpackHandle,
  type BackpackNodeConfig,
  type DependencyLookup,
  type NodeLoadContext,
} from '../../src/index.js';
import { register, TemplateNode, TextSourceNode } from '../../examples/flows/nodes.js';

const examplesDir = join(import.meta.dirname, '..', '..', 'examples', 'flows');
const exampleFiles = readdirSync(examplesDir).filter((f) => f.endsWith('.json'));

describe('schema/flow-config.schema.json', () => {
  const entry = schemaFiles.find((e) => e.file === 'schema/flow-config.schema.json');

  it('is listed in scripts/generate-schemas.ts and up to date (regenerate with `npm run schemas`)', () => {
    expect(entry, 'flow-config entry missing from scripts/generate-schemas.ts').toBeDefined();
    const committed = readFileSync(join(repositoryRoot, entry!.file), 'utf8');
    expect(committed, 'schema/flow-config.schema.json is stale: run `npm run schemas` and commit it').toBe(renderSchemaFile(entry!));
  });

  it('is recursive through internalFlow and subflows and closed to unknown keys', () => {
    const schema = JSON.parse(renderSchemaFile(entry!)) as { properties: Record<string, any>; required: string[]; additionalProperties: boolean };
    expect(schema.required).toEqual(expect.arrayContaining(['version', 'nodes']));
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.nodes.items.properties.internalFlow).toEqual({ $ref: '#' });
    expect(schema.properties.subflows.items).toEqual({ $ref: '#' });
  });
});

describe('every JSON flow in examples/flows', () => {
  it('there is at least one', () => expect(exampleFiles.length).toBeGreaterThan(0));

  it.each(exampleFiles)('%s validates, loads, runs, and exports back to its normalized config', async (file) => {
    const loader = new FlowLoader();
    register(loader);
    const config = parseFlowConfig(readFileSync(join(examplesDir, file), 'utf8'), file);
    expect(loader.validateConfig(config).errors).toEqual([]);
    const flow = await loader.loadFlow(config);
    const before = flow.backpack.keys().length;
    await flow.run();
    expect(flow.backpack.keys().length).toBeGreaterThan(before);
    expect(loader.exportFlow(flow)).toEqual(normalizeFlowConfig(config));
  });
});

describe('export defaults for hand-built flows', () => {
  it('an unregistered class exports under its class name, and validating that export reports the unknown type', () => {
    class Unlisted extends BackpackNode {}
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Unlisted, { id: 'u', mode: 'fast' });
    const loader = new FlowLoader();
    const config = loader.exportFlow(flow);
    expect(config.nodes).toEqual([{ type: 'Unlisted', id: 'u', params: { mode: 'fast' } }]);
    expect(loader.validateConfig(config).errors).toEqual([{ path: '/nodes/0/type', message: "unknown node type 'Unlisted' (no types are registered)" }]);
  });

  it('runtime objects among the params stay out of the export; data params, settings and secrets are kept (masked)', () => {
    const flow = new Flow();
    flow.addNode(BackpackNode, {
      id: 'n',
      namespaceSegment: 'seg',
      maxRetries: 3,
      retryDelayMs: 5,
      client: new Map(),
      callback: () => 1,
      limits: { max: 2, tags: ['a'] },
      password: 'hunter2',
    });
    const loader = new FlowLoader().register('Plain', BackpackNode);
    expect(loader.exportFlow(flow).nodes[0]).toEqual({
      type: 'Plain',
      id: 'n',
      namespaceSegment: 'seg',
      maxRetries: 3,
      retryDelayMs: 5,
      params: { limits: { max: 2, tags: ['a'] }, password: '***' },
    });
  });

  it('edges follow node order then action order, and only link nodes of the same flow', () => {
    const flow = new Flow({ namespace: 'g' });
    const a = flow.addNode(TextSourceNode, { id: 'a', key: 'k', text: 't' });
    const b = flow.addNode(TemplateNode, { id: 'b', template: 'x', to: 'y' });
    const other = new Flow({ namespace: 'elsewhere' }).addNode(TemplateNode, { id: 'z', template: 'x', to: 'y' });
    b.on('retry', a).on('done', b);
    a.on('error', other).on('default', b);
    const loader = new FlowLoader();
    register(loader);
    expect(loader.exportFlow(flow).edges).toEqual([
      { from: 'a', to: 'b', condition: 'default' },
      { from: 'b', to: 'a', condition: 'retry' },
      { from: 'b', to: 'b', condition: 'done' },
    ]);
  });

  it('an entry node other than the first, and non-default flow settings, are exported and load back', async () => {
    const loader = new FlowLoader();
    register(loader);
    const flow = new Flow({ namespace: 'e', maxSteps: 7, onMissingRoute: 'throw' });
    const first = flow.addNode(TextSourceNode, { id: 'first', key: 'k', text: 'one' });
    const second = flow.addNode(TextSourceNode, { id: 'second', key: 'k', text: 'two' });
    second.next(first);
    flow.setEntryNode(second);
    const config = loader.exportFlow(flow);
    expect(config).toMatchObject({ entry: 'second', maxSteps: 7, onMissingRoute: 'throw' });
    const loaded = await loader.loadFlow(config);
    expect(loaded.entryNode?.id).toBe('second');
    await loaded.run();
    expect(loaded.backpack.peek('k')).toBe('one');
    expect(loader.exportFlow(loaded)).toEqual(config);
  });
});

describe('node hooks: toConfig and static fromConfig', () => {
  class Greeter extends BackpackNode {
    static override paramsSchema = z.object({ greeting: z.string(), token: z.string() });
    static fromConfig(config: BackpackNodeConfig, context: NodeLoadContext, deps: DependencyLookup | undefined): Greeter {
      const node = context.flow.addNode(Greeter, { ...config, greeting: String(config['greeting']).toUpperCase() });
      node.suffix = deps?.has('suffix') ? deps.get<string>('suffix') : '';
      return node;
    }
    suffix = '';
    toConfig() {
      return { type: 'greeter/v2', params: { greeting: String(this.params.greeting).toLowerCase(), token: this.params.token } };
    }
    override post(backpack: BackpackHandle): undefined {
      backpack.pack('greeting', `${String(this.params.greeting)}${this.suffix}`);
      return undefined;
    }
  }

  it('fromConfig builds the node with the dependencies; toConfig decides type and params, secrets still masked', async () => {
    const loader = new FlowLoader().register('greeter/v2', Greeter);
    const config = { version: '2.0.0', namespace: 'h', nodes: [{ type: 'greeter/v2', id: 'g', params: { greeting: 'hello', token: 'tok-1' } }] };
    const flow = await loader.loadFlow(config, { suffix: '!' });
    await flow.run();
    expect(flow.backpack.peek('greeting')).toBe('HELLO!');
    expect(loader.exportFlow(flow).nodes[0]).toEqual({ type: 'greeter/v2', id: 'g', params: { greeting: 'hello', token: '***' } });
    expect(loader.exportFlow(flow, { includeSensitive: true }).nodes[0]!.params.token).toBe('tok-1');
  });

  it('a composite with toConfig still exports its internal flow', async () => {
    class Box extends BackpackNode {
      toConfig() {
        return { type: 'Box' };
      }
    }
    const loader = new FlowLoader().register('Box', Box);
    register(loader);
    const config = {
      version: '2.0.0',
      namespace: 'b',
      nodes: [
        {
          type: 'Box',
          id: 'box',
          params: { label: 'x' },
          internalFlow: { version: '2.0.0', namespace: 'b.box', nodes: [{ type: 'TextSource', id: 's', params: { key: 'k', text: 'v' } }] },
        },
      ],
    };
    const flow = await loader.loadFlow(config);
    await flow.run();
    await flow.run();
    expect(flow.backpack.getVersion('k')).toBe(2);
    expect(loader.exportFlow(flow)).toEqual(normalizeFlowConfig(config));
  });
});

describe('declared dependencies', () => {
  const config = {
    version: '2.0.0',
    namespace: 'd',
    nodes: [
      {
        type: 'Pipeline',
        id: 'p',
        internalFlow: { version: '2.0.0', namespace: 'd.p', nodes: [{ type: 'TextSource', id: 's', params: { key: 'k', text: 'v' } }], dependencies: { engine: 'context engine' } },
      },
    ],
    dependencies: { llm: 'the LLM client' },
  };

  it('a declared key missing from the container is an error naming it and its JSON path', async () => {
    const loader = new FlowLoader();
    register(loader);
    const error = (await loader.loadFlow(config, new DependencyContainer().register('llm', {})).catch((e: unknown) => e)) as FlowConfigError;
    expect(error).toBeInstanceOf(FlowConfigError);
    expect(error.errors).toEqual([
      { path: '/nodes/0/internalFlow/dependencies/engine', message: "dependency 'engine' (context engine) is not provided: loadFlow's DependencyContainer has no 'engine' (the backpackflow CLI provides none: build such a flow with --flow-module)" },
    ]);
  });

  it('with every declared key given, the flow loads, runs and exports its dependencies back', async () => {
    const loader = new FlowLoader();
    register(loader);
    const deps = new DependencyContainer().register('llm', {}).registerFactory('engine', () => ({}));
    const flow = await loader.loadFlow(config, deps);
    expect(flow.deps).toBe(deps);
    await flow.run();
    expect(loader.exportFlow(flow)).toEqual(normalizeFlowConfig(config));
  });
});

describe('JSON text and version problems', () => {
  const loader = new FlowLoader();
  register(loader);

  it('validateConfig and loadFlow take JSON text; malformed text is a problem with line and column', async () => {
    const text = readFileSync(join(examplesDir, exampleFiles[0]!), 'utf8');
    expect(loader.validateConfig(text)).toEqual({ valid: true, errors: [] });
    expect((await loader.loadFlow(text)).getAllNodes().length).toBeGreaterThan(0);
    const broken = loader.validateConfig('{\n  "version": "2.0.0",\n  "nodes": [,]\n}');
    expect(broken.valid).toBe(false);
    expect(broken.errors[0]!.message).toMatch(/not valid JSON at line 3, column \d+/);
    await expect(loader.loadFlow('{ "version": ')).rejects.toThrow(FlowConfigError);
  });

  it('a wrong major version is reported at /version even when other parts are malformed too', () => {
    const problems = loader.validateConfig({ version: '1.4.0', nodes: [{ id: 'x' }] }).errors;
    expect(problems).toContainEqual({ path: '/version', message: 'version 1.4.0 is not supported; this loader reads 2.x.x' });
    expect(problems.map((p) => p.path)).toContain('/nodes/0/type');
  });
});

describe('jsonErrorOffset', () => {
  it.each([
    ['{"a": 1,}', 8],
    ['[1, 2', 5],
    ['{"a": tru}', 9],
    ['{"a": "x\\q"}', 9],
    ['{"a": "\\u12G4"}', 11],
    ['{"a": 1} x', 9],
    ['{"a" 1}', 5],
    ['{"a": -}', 6],
    ['{"a": [,]}', 7],
    ['"tab\there"', 4],
    ['[1] x', 4],
    ['-', 0],
  ])('%s fails at offset %i', (text, offset) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(jsonErrorOffset(text)).toBe(offset);
  });

  it('names the line and column of the first error in a multi-line text', () => {
    expect(() => parseFlowConfig('{\n  "a": 1,\n  "b": [1,,2]\n}', 'flow.json')).toThrow(/^Malformed flow\.json \(1 problem\):\n {2}\/: flow\.json is not valid JSON at line 3, column 11: /);
  });
});

describe('edge order and duplicate routes', () => {
  const loader = new FlowLoader();
  register(loader);
  const config = {
    version: '2.0.0',
    namespace: 'o',
    nodes: [
      { type: 'TextSource', id: 'a', params: { key: 'k', text: 'a' } },
      { type: 'TextSource', id: 'b', params: { key: 'k', text: 'b' } },
    ],
    edges: [
      { from: 'b', to: 'a', condition: 'retry' },
      { from: 'a', to: 'b', condition: 'default' },
      { from: 'b', to: 'b', condition: 'again' },
    ],
  };

  it('normalizeFlowConfig puts edges in node order, as exportFlow writes them', async () => {
    const exported = loader.exportFlow(await loader.loadFlow(config));
    expect(exported.edges.map((e) => `${e.from}:${e.condition}`)).toEqual(['a:default', 'b:retry', 'b:again']);
    expect(exported).toEqual(normalizeFlowConfig(config));
  });

  it('two edges for the same node and action are a problem at the second one', () => {
    const twice = { ...config, edges: [...config.edges, { from: 'a', to: 'a', condition: 'default' }] };
    expect(loader.validateConfig(twice).errors).toEqual([
      { path: '/edges/3/condition', message: "'a' already routes 'default' (/edges/1): one successor per action" },
    ]);
  });
});

describe('hand-built subflows', () => {
  it('a subflow whose id differs from its namespace segment is named by the segment in edges, and loads back', async () => {
    const loader = new FlowLoader();
    register(loader);
    const flow = new Flow({ namespace: 'sales' });
    const chat = flow.addNode(TextSourceNode, { id: 'chat', key: 'text', text: 'q' });
    const reports = flow.addSubflow({ namespace: 'reports', id: 'report-flow' });
    reports.addNode(TemplateNode, { id: 'daily', template: 'daily {{text}}', to: 'daily' });
    chat.next(reports);
    const config = loader.exportFlow(flow);
    expect(config.edges).toEqual([{ from: 'chat', to: 'reports', condition: 'default' }]);
    expect(config.subflows!.map((s) => s.namespace)).toEqual(['reports']);
    const loaded = await loader.loadFlow(config);
    await loaded.run();
    expect(loaded.backpack.peek('daily')).toBe('daily q');
    expect(loader.exportFlow(loaded)).toEqual(config);
  });
});
