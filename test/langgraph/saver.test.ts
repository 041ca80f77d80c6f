/** BackpackflowSaver against hostile thread ids, other runs, secrets and second writers. */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { loadRunPoint, runFlow, verifyRun } from '../../src/runtime/index.js';
import { BackpackflowSaver, threadRunId } from '../../src/langgraph/index.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-lg-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

let version = 0;
function checkpointWith(values: Record<string, unknown>): { checkpoint: Checkpoint; versions: Record<string, number> } {
  version++;
  const versions = Object.fromEntries(Object.keys(values).map((k) => [k, version]));
  return { checkpoint: { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions }, versions };
}

async function putOne(saver: BackpackflowSaver, threadId: string, values: Record<string, unknown>) {
  const { checkpoint, versions } = checkpointWith(values);
  return saver.put({ configurable: { thread_id: threadId, checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, versions);
}

describe('BackpackflowSaver', () => {
  it('a checkpoint_id that is not a string is a TypeError, as a thread_id is (it was a silent miss: audit-interop F4)', async () => {
    const saver = new BackpackflowSaver({ dataDir: tempDir() });
    await putOne(saver, 't', { x: 1 });
    await expect(saver.getTuple({ configurable: { thread_id: 't', checkpoint_id: 5 } })).rejects.toThrow(/configurable\.checkpoint_id must be a string, got number/);
    const listed = async (before: unknown) => {
      const out = [];
      for await (const tuple of saver.list({ configurable: { thread_id: 't' } }, { before: { configurable: { checkpoint_id: before } } })) out.push(tuple);
      return out;
    };
    await expect(listed(7)).rejects.toThrow(/configurable\.checkpoint_id must be a string/);
    await saver.close();
  });

  it('a list filter on a secret (stored redacted, so it cannot match) is an error, not an empty answer (audit-interop F3)', async () => {
    const saver = new BackpackflowSaver({ dataDir: tempDir() });
    await putOne(saver, 'f', { x: 1 });
    const listed = async (filter: Record<string, unknown>) => {
      const out = [];
      for await (const tuple of saver.list({ configurable: { thread_id: 'f' } }, { filter })) out.push(tuple);
      return out;
    };
    await expect(listed({ source: 'input', password: 'hunter2-Correct-Horse' })).rejects.toThrow(/the filter on 'password' names a secret, which metadata is stored without \(redacted\): it cannot match/);
    await expect(listed({ source: 'input' })).resolves.toHaveLength(1);
    await saver.close();
  });

  it('a channel named __proto__ keeps its value, as an own key (audit-interop F5)', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    const values = JSON.parse('{"__proto__": {"a": 1}, "x": 2}') as Record<string, unknown>;
    const config = await putOne(saver, 'p', values);
    const tuple = await saver.getTuple(config);
    expect(Object.keys(tuple!.checkpoint.channel_values).sort()).toEqual(['__proto__', 'x']);
    expect(Object.getOwnPropertyDescriptor(tuple!.checkpoint.channel_values, '__proto__')?.value).toEqual({ a: 1 });
    expect(Object.getPrototypeOf(tuple!.checkpoint.channel_values)).toBe(Object.prototype);
    await saver.close();
  });

  it('keeps any thread id inside the data directory, and finds it again after a restart', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 40 }), async (threadId) => {
        const dataDir = tempDir();
        const saver = new BackpackflowSaver({ dataDir });
        await putOne(saver, threadId, { topic: 'x' });
        await saver.close();
        // One run directory, directly under the session's runs/.
        expect(readdirSync(join(dataDir, 'sessions', 'default', 'runs'))).toEqual([threadRunId(threadId)]);
        const again = new BackpackflowSaver({ dataDir });
        const tuple = await again.getTuple({ configurable: { thread_id: threadId } });
        expect(tuple?.checkpoint.channel_values).toEqual({ topic: 'x' });
        expect(tuple?.config.configurable?.thread_id).toBe(threadId);
        await again.close();
      }),
      { numRuns: 15 },
    );
    expect(threadRunId('../../etc')).toMatch(/^lgt-[0-9a-f]{40}$/);
    expect(threadRunId('lgt-0000')).not.toBe('lgt-0000');
  });

  it('refuses a thread whose run id belongs to an ordinary run, and deleteThread leaves that run alone', async () => {
    const dataDir = tempDir();
    const flow = new Flow({ namespace: 'plain' });
    flow.addNode(class Noop extends BackpackNode {}, { id: 'noop' });
    await runFlow(flow, { dataDir, runId: 'shared-id', input: { a: 1 } });
    const saver = new BackpackflowSaver({ dataDir });
    await expect(putOne(saver, 'shared-id', { topic: 'x' })).rejects.toThrow("run default/shared-id is not a LangGraph thread (its log records no thread id); thread 'shared-id' cannot use it");
    await expect(saver.deleteThread('shared-id')).rejects.toThrow('is not a LangGraph thread');
    expect(readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'shared-id', 'events.jsonl'), 'utf8')).toContain('run.completed');
    await saver.close();
  });

  it('stores secrets redacted, and serves the same redacted value before and after a restart', async () => {
    const dataDir = tempDir();
    const secret = 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
    const saver = new BackpackflowSaver({ dataDir });
    const config = await putOne(saver, 't', { note: `token ${secret}` });
    const before = await saver.getTuple(config);
    await saver.close();
    const log = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 't', 'events.jsonl'), 'utf8');
    expect(log).not.toContain(secret);
    const again = new BackpackflowSaver({ dataDir });
    const after = await again.getTuple(config);
    expect(before?.checkpoint.channel_values).toEqual({ note: 'token [REDACTED]' });
    expect(after?.checkpoint.channel_values).toEqual(before?.checkpoint.channel_values);
    await again.close();
  });

  it('blanks a channel named like a secret, keeps the thread readable, and serves the same after a restart', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    const config = await putOne(saver, 's', { password: 'hunter2', token: { nested: 'abc' }, topic: 'tides' });
    await saver.close();
    expect(readFileSync(join(dataDir, 'sessions', 'default', 'runs', 's', 'events.jsonl'), 'utf8')).not.toContain('hunter2');
    const again = new BackpackflowSaver({ dataDir });
    expect((await again.getTuple(config))?.checkpoint.channel_values).toEqual({ password: '[REDACTED]', token: { nested: '[REDACTED]' }, topic: 'tides' });
    await again.close();
  });

  it('refuses a second writer of a thread while the first holds it, naming the lock', async () => {
    const dataDir = tempDir();
    const first = new BackpackflowSaver({ dataDir });
    await putOne(first, 't', { a: 1 });
    const second = new BackpackflowSaver({ dataDir });
    await expect(putOne(second, 't', { a: 2 })).rejects.toThrow(/events\.lock/);
    await first.close();
    // Once released, the second continues the thread after the first's checkpoint.
    await putOne(second, 't', { a: 3 });
    const all = [];
    for await (const t of second.list({ configurable: { thread_id: 't' } })) all.push(t.checkpoint.channel_values);
    expect(all).toEqual([{ a: 3 }, { a: 1 }]);
    await second.close();
  });

  it('a changed log line is refused with an error naming the log, never served as a checkpoint', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    await putOne(saver, 'd', { topic: 'tides' });
    await putOne(saver, 'd', { topic: 'waves' });
    await saver.close();
    const log = join(dataDir, 'sessions', 'default', 'runs', 'd', 'events.jsonl');
    writeFileSync(log, readFileSync(log, 'utf8').replace('"waves"', '"storm"'));
    const again = new BackpackflowSaver({ dataDir });
    await expect(again.getTuple({ configurable: { thread_id: 'd' } })).rejects.toThrow(log);
    await again.close();
  });

  it('writes keyframes of the mirrored state that runs state starts from, and that verify accepts', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir, keyframeInterval: 2 });
    for (let i = 0; i < 5; i++) await putOne(saver, 'k', { topic: `t${i}` });
    await saver.close();
    expect(readdirSync(join(dataDir, 'sessions', 'default', 'runs', 'k', 'checkpoint')).sort()).toEqual(['2.json', '4.json']);
    const point = await loadRunPoint({ dataDir, runId: 'k', step: 4 });
    expect(point.warnings).toEqual([]);
    expect(point.state.items['topic']?.value).toBe('t4');
    const report = await verifyRun({ dataDir, runId: 'k' });
    expect(report.status).toBe('verified');
    expect(report.keyframes.map((k) => [k.step, k.ok])).toEqual([
      [2, true],
      [4, true],
    ]);
  });

  it('deleteThread removes the run from the store', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    await putOne(saver, 'gone', { a: 1 });
    await saver.deleteThread('gone');
    expect(await saver.getTuple({ configurable: { thread_id: 'gone' } })).toBeUndefined();
    expect(readdirSync(join(dataDir, 'sessions', 'default', 'runs'))).toEqual([]);
    await saver.close();
  });
});
