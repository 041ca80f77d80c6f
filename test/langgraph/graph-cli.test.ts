/**
 * A LangGraph graph checkpointed with BackpackflowSaver, inspected with the built CLI as a user would: the thread is
 * a run; `runs state/diff/blame` show which graph node wrote each channel, at which step; the log verifies.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { cli, cliJson, tempDir } from '../cli/helpers.js';
import { buildGraph } from './fixtures/tides-graph.js';

let dataDir = '';
const thread = 'tides-thread';
const d = () => ['--data-dir', dataDir];

beforeAll(async () => {
  dataDir = tempDir();
  const saver = new BackpackflowSaver({ dataDir });
  const result = await buildGraph(saver).invoke({ topic: 'tides' }, { configurable: { thread_id: thread } });
  expect(result.answer).toBe('tides rise twice a day; the moon pulls them');
  await saver.close();
});

describe('a LangGraph thread inspected with backpackflow runs', () => {
  it('runs list shows the thread as a completed run of the langgraph flow', async () => {
    const runs = await cliJson<Array<{ runId: string; status: string; flowNamespace?: string }>>(['runs', 'list', ...d()]);
    expect(runs.map((r) => [r.runId, r.status])).toEqual([[thread, 'completed']]);
  });

  it('runs state shows each channel with the graph node that wrote it, per step', async () => {
    const last = await cliJson<{ step: number; items: Array<{ key: string; value: unknown; provenance: { nodeId: string; namespace: string } }> }>(['runs', 'state', thread, ...d()]);
    const by = Object.fromEntries(last.items.map((i) => [i.key, i.provenance.nodeId]));
    // The input checkpoint (step 0), then one per superstep: __start__ (LangGraph's input task), research, check, write.
    expect(last.step).toBe(4);
    expect(by).toEqual({ topic: '__start__', facts: 'check', answer: 'write' });
    expect(last.items.find((i) => i.key === 'answer')?.provenance.namespace).toBe('langgraph.write');
    const afterResearch = await cliJson<{ items: Array<{ key: string; provenance: { nodeId: string } }> }>(['runs', 'state', thread, '--step', '2', ...d()]);
    expect(Object.fromEntries(afterResearch.items.map((i) => [i.key, i.provenance.nodeId]))).toEqual({ topic: '__start__', facts: 'research' });
  });

  it('runs diff names the node behind each change between two steps', async () => {
    const diff = await cliJson<{ changes: Array<{ key: string; change: string; by: { nodeId: string } }> }>(['runs', 'diff', thread, '--from', '2', '--to', '4', ...d()]);
    expect(diff.changes.map((c) => [c.key, c.change, c.by.nodeId])).toEqual([
      ['facts', 'modified', 'check'],
      ['answer', 'added', 'write'],
    ]);
  });

  it('runs blame lists every write of a channel: step and node', async () => {
    const blame = await cliJson<{ writes: Array<{ step: number; nodeId: string; namespace: string; summary: string }> }>(['runs', 'blame', thread, 'facts', ...d()]);
    expect(blame.writes.map((w) => [w.step, w.nodeId, w.namespace])).toEqual([
      [2, 'research', 'langgraph.research'],
      [3, 'check', 'langgraph.check'],
    ]);
    const text = await cli(['runs', 'blame', thread, 'answer', ...d()]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('write');
  });

  it('runs show lists the graph nodes as spans, and runs verify checks the chain', async () => {
    const show = await cli(['runs', 'show', thread, ...d()]);
    expect(show.code).toBe(0);
    for (const node of ['research', 'check', 'write']) expect(show.stdout).toContain(`${node} langgraph.${node}`);
    const verify = await cli(['runs', 'verify', thread, ...d()]);
    expect(verify.stdout).toContain('verified');
    expect(verify.code).toBe(0);
  });

  it('a second saver over the same data directory continues the thread; an updateState write is blamed on __update__', async () => {
    const saver = new BackpackflowSaver({ dataDir });
    const graph = buildGraph(saver);
    const state = await graph.getState({ configurable: { thread_id: thread } });
    expect(state.values.answer).toBe('tides rise twice a day; the moon pulls them');
    await graph.updateState({ configurable: { thread_id: thread } }, { answer: 'edited by hand' }, 'write');
    await saver.close();
    const blame = await cliJson<{ writes: Array<{ step: number; nodeId: string }> }>(['runs', 'blame', thread, 'answer', ...d()]);
    expect(blame.writes.map((w) => [w.step, w.nodeId])).toEqual([
      [4, 'write'],
      [5, '__update__'],
    ]);
    const runs = await cliJson<Array<{ runId: string; status: string }>>(['runs', 'list', ...d()]);
    expect(runs.map((r) => [r.runId, r.status])).toEqual([[thread, 'completed']]);
  });
});
