/**
 * Edge data mappings: what a mapping does (a commit by the route's source node), in code and in JSON, with loops,
 * validation errors naming their JSON paths, export/load round trips, and the trust rules (D6, D9).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BackpackNode,
  BaseFlow,
  BaseNode,
  Flow,
  FlowError,
  FlowLoader,
  StreamEventType,
  loadRunPoint,
  normalizeFlowConfig,
  runFlow,
  type BackpackHandle,
  type NodePermissions,
} from '../../src/index.js';

class Search extends BackpackNode {
  override post(backpack: BackpackHandle): string {
    const round = ((backpack.unpack('round') as number | undefined) ?? 0) + 1;
    backpack.pack('round', round);
    backpack.pack('results', [`hit ${round}`], this.params['restricted'] ? { accessControl: { read: ['agent.search'] } } : undefined);
    return 'complete';
  }
}

class Summary extends BackpackNode {
  override post(backpack: BackpackHandle): string | undefined {
    const docs = backpack.unpack('documents') as string[] | undefined;
    backpack.pack('summary', docs === undefined ? 'nothing' : docs.join(', '));
    const rounds = (this.params['rounds'] as number | undefined) ?? 1;
    return (backpack.unpack('round') as number) < rounds ? 'again' : 'done';
  }
}

function build(options: { mappings?: Record<string, string>; rounds?: number; restricted?: boolean; permissions?: NodePermissions } = {}): Flow {
  const flow = new Flow({ namespace: 'agent' });
  const search = flow.addNode(Search, { id: 'search', restricted: options.restricted, ...(options.permissions ? { permissions: options.permissions } : {}) });
  const summary = flow.addNode(Summary, { id: 'summary', rounds: options.rounds ?? 1 });
  search.on('complete', summary, { mappings: options.mappings ?? { results: 'documents' } });
  summary.on('again', search);
  return flow;
}

function loader(): FlowLoader {
  return new FlowLoader().register('Search', Search).register('Summary', Summary);
}

describe('what a mapping does', () => {
  it('copies the source to the target when the route is taken, as a commit by the source node, tagged with its source', async () => {
    const flow = build();
    const routes: unknown[] = [];
    flow.eventStreamer.on(StreamEventType.ROUTE, (e) => routes.push(e.payload));
    await flow.run();
    expect(flow.backpack.peek('summary')).toBe('hit 1');
    const item = flow.backpack.getItem('documents')!;
    expect(item.value).toEqual(['hit 1']);
    expect(item.metadata).toMatchObject({ sourceNodeId: 'search', sourceNodeName: 'Search', sourceNamespace: 'agent.search', tags: ['mapped-from:results'] });
    // The state before the summary node ran already holds the copy: what it knew.
    expect(flow.backpack.getSnapshotBeforeNode('summary').peek('documents')).toEqual(['hit 1']);
    expect(routes[0]).toEqual({ action: 'complete', from: 'search', to: 'summary', mappings: { results: 'documents' } });
  });

  it('in a loop, each pass copies again (the history shows every copy)', async () => {
    const flow = build({ rounds: 3 });
    await flow.run();
    expect(flow.backpack.peek('summary')).toBe('hit 3');
    const copies = flow.backpack.getHistory().filter((c) => c.key === 'documents' && c.action === 'pack');
    expect(copies.map((c) => c.nodeId)).toEqual(['search', 'search', 'search']);
    expect(flow.backpack.getItem('documents')!.metadata.version).toBe(3);
  });

  it('reads every source before writing any target, so a mapping can swap two keys', async () => {
    class Both extends BackpackNode {
      override post(backpack: BackpackHandle): string {
        backpack.pack('a', 'A');
        backpack.pack('b', 'B');
        return 'go';
      }
    }
    const flow = new Flow();
    flow.addNode(Both, { id: 'both' }).on('go', flow.addNode(Summary, { id: 'end' }), { mappings: { a: 'b', b: 'a' } });
    await flow.run();
    expect([flow.backpack.peek('a'), flow.backpack.peek('b')]).toEqual(['B', 'A']);
  });

  it('a missing source fails the step naming the route, and writes nothing (no stale copy from an earlier pass)', async () => {
    const flow = build({ mappings: { results: 'documents', missing: 'other' } });
    const error = await flow.run().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowError);
    expect((error as Error).message).toMatch(/route 'search' -\(complete\)-> 'summary' maps 'missing' to 'other', but node 'search' cannot read 'missing'/);
    expect(flow.backpack.has('documents')).toBe(false);
  });

  it('on a plain BaseFlow, copies a property of the shared object', async () => {
    class Set extends BaseNode {
      override post(shared: Record<string, unknown>): string {
        shared['out'] = 42;
        return 'next';
      }
    }
    class Read extends BaseNode {
      override post(shared: Record<string, unknown>): undefined {
        shared['seen'] = shared['in'];
        return undefined;
      }
    }
    const a = new Set({ id: 'a' });
    a.on('next', new Read({ id: 'b' }), { mappings: { out: 'in' } });
    const shared: Record<string, unknown> = {};
    await new BaseFlow({ start: a }).run(shared);
    expect(shared).toEqual({ out: 42, in: 42, seen: 42 });
    const bad = new Set({ id: 'a' });
    bad.on('next', new Read({ id: 'b' }), { mappings: { nope: 'in' } });
    await expect(new BaseFlow({ start: bad }).run({})).rejects.toThrow(/maps 'nope' to 'in', but the shared state has no 'nope'/);
  });
});

describe('mappings and access control (a mapping never lets a node read what it may not read)', () => {
  it('the source node must be allowed to read the source: otherwise the step fails and nothing is copied', async () => {
    const flow = build({ permissions: { read: ['round'], write: ['round', 'results', 'documents'] } });
    await expect(flow.run()).rejects.toThrow(/node 'search' cannot read 'results'/);
    expect(flow.backpack.has('documents')).toBe(false);
    expect(flow.backpack.getAccessDenials().some((d) => d.key === 'results' && d.nodeId === 'search')).toBe(true);
  });

  it('the source node must be allowed to write the target', async () => {
    const flow = build({ permissions: { read: ['round', 'results'], write: ['round', 'results'] } });
    await expect(flow.run()).rejects.toThrow(/node 'search' cannot write 'documents'/);
    expect(flow.backpack.has('documents')).toBe(false);
  });

  it("the copy keeps the source item's own rules: a reader they keep out of the source is kept out of the copy", async () => {
    const flow = build({ restricted: true });
    await flow.run();
    // The summary node may not read `results`, and so reads nothing under `documents` either.
    expect(flow.backpack.peek('summary')).toBe('nothing');
    expect(flow.backpack.getItem('documents')!.accessControl).toEqual({ read: ['agent.search'] });
    expect(flow.backpack.unpack('documents', 'summary')).toBeUndefined();
  });
});

describe('mappings in code: validated where they are declared', () => {
  const flow = new Flow();
  const a = flow.addNode(Summary, { id: 'a' });
  const b = flow.addNode(Summary, { id: 'b' });
  it.each([
    [{ x: 'x' }, /mapping 'x': 'x' is mapped to itself/],
    [{ x: '' }, /mapping 'x': target of 'x' must be a non-empty string/],
    [{ x: 't', y: 't' }, /mapping 'y': 'y' and 'x' are both mapped to 't'/],
    [{ 'x.': 't' }, /mapping 'x\.': key 'x\.' has an empty segment/],
    [{ x: 'a..b' }, /key 'a\.\.b' has an empty segment/],
    [['x'], /mappings must be an object of source key to target key, got an array/],
  ])('%j is refused', (mappings, message) => {
    expect(() => a.on('go', b, { mappings: mappings as never })).toThrow(message);
    expect(a.getRouteMappings('go')).toBeUndefined();
  });

  it('a route declared again without mappings drops them', () => {
    a.on('go', b, { mappings: { x: 'y' } });
    expect(a.getRouteMappings('go')).toEqual({ x: 'y' });
    a.on('go', b);
    expect(a.getRouteMappings('go')).toBeUndefined();
  });
});

describe('mappings in JSON', () => {
  const config = {
    version: '2.0.0',
    namespace: 'agent',
    nodes: [
      { type: 'Search', id: 'search', params: {} },
      { type: 'Summary', id: 'summary', params: { rounds: 2 } },
    ],
    edges: [
      { from: 'search', to: 'summary', condition: 'complete', mappings: { results: 'documents' } },
      { from: 'summary', to: 'search', condition: 'again', mappings: { summary: 'previous' } },
    ],
    dependencies: {},
  };

  it('loads, runs (with a loop back through a mapped edge) and exports back unchanged', async () => {
    const flow = await loader().loadFlow(config);
    await flow.run();
    expect(flow.backpack.peek('summary')).toBe('hit 2');
    expect(flow.backpack.peek('previous')).toBe('hit 1');
    expect(loader().exportFlow(flow)).toEqual(normalizeFlowConfig(config));
    // And once more through the exported config.
    const again = await loader().loadFlow(loader().exportFlow(flow));
    expect(loader().exportFlow(again)).toEqual(normalizeFlowConfig(config));
  });

  it('reports every bad mapping at its JSON path', () => {
    const bad = structuredClone(config) as any;
    bad.edges[0].mappings = { results: 'results', 'x..y': 'z', a: 'documents', b: 'documents' };
    bad.edges[1].mappings = { 'a/b~c': 'ok', d: 'e.' };
    const { valid, errors } = loader().validateConfig(bad);
    expect(valid).toBe(false);
    expect(errors).toEqual([
      { path: '/edges/0/mappings/results', message: "'results' is mapped to itself" },
      { path: '/edges/0/mappings/x..y', message: expect.stringMatching(/key 'x\.\.y' has an empty segment/) },
      { path: '/edges/0/mappings/b', message: "'b' and 'a' are both mapped to 'documents': one source per target" },
      { path: '/edges/1/mappings/d', message: expect.stringMatching(/key 'e\.' has an empty segment/) },
    ]);
    // A value that is not a string is a schema problem, at its path too; '/' and '~' in a key are escaped.
    bad.edges[1].mappings = { 'a/b~c': 7 };
    expect(loader().validateConfig(bad).errors).toEqual([{ path: '/edges/1/mappings/a~1b~0c', message: expect.stringMatching(/expected string/) }]);
  });

  it('a mapped copy is part of the step that took the route: a durable run records it at that step', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bpf-mappings-'));
    try {
      await runFlow(await loader().loadFlow({ ...config, nodes: [config.nodes[0], { ...config.nodes[1], params: { rounds: 1 } }] }), { dataDir, runId: 'm' });
      const afterSearch = await loadRunPoint({ dataDir, runId: 'm', step: 1 });
      expect(afterSearch.state.items['documents']).toMatchObject({ value: ['hit 1'], metadata: { sourceNodeId: 'search' } });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('mappings round trip (property)', () => {
  const key = fc.stringMatching(/^[a-z][a-z0-9_]{0,5}(\.[a-z0-9_]{1,4})?$/);
  it('any valid mappings validate, load, and export back unchanged; an invalid one is refused at its JSON path', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.tuple(key, key), { selector: ([source]) => source, maxLength: 6 }), async (pairs) => {
        const mappings = Object.fromEntries(pairs);
        const targets = pairs.map(([, t]) => t);
        const valid = pairs.every(([s, t]) => s !== t) && new Set(targets).size === targets.length;
        const config = {
          version: '2.0.0',
          namespace: 'agent',
          nodes: [
            { type: 'Search', id: 'search', params: {} },
            { type: 'Summary', id: 'summary', params: {} },
          ],
          edges: [{ from: 'search', to: 'summary', condition: 'complete', mappings }],
          dependencies: {},
        };
        const report = loader().validateConfig(config);
        expect(report.valid).toBe(valid);
        if (!valid) {
          expect(report.errors.every((e) => e.path.startsWith('/edges/0/mappings/'))).toBe(true);
          return;
        }
        const flow = await loader().loadFlow(config);
        expect(loader().exportFlow(flow)).toEqual(normalizeFlowConfig(config));
      }),
      { numRuns: 60 },
    );
  });
});
