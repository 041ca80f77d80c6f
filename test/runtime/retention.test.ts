/** pruneRuns and deleteRun over real durable runs: which runs go, which stay, and why. */
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, deleteRun, listRuns, pruneRuns, runFlow, type BackpackHandle } from '../../src/index.js';
import { EventStore, RunInUseError, StoreError, runPaths } from '../../src/store/index.js';

class Step extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    if (backpack.unpack('fail')) throw new Error('planned failure');
    backpack.pack('done', true);
    return undefined;
  }
}

function flow(): Flow {
  const f = new Flow({ namespace: 'r' });
  f.addNode(Step, { id: 'step' });
  return f;
}

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bpf-retention-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

async function run(runId: string, options: { fail?: boolean; sessionKey?: string } = {}): Promise<void> {
  const input = options.fail ? { fail: true } : {};
  await runFlow(flow(), { dataDir, runId, input, sessionKey: options.sessionKey }).catch(() => undefined);
}

const ids = async (sessionKey?: string) => (await listRuns({ dataDir, sessionKey })).map((m) => m.runId).sort();

describe('pruneRuns', () => {
  it('needs a criterion, and checks each one', async () => {
    await run('a');
    await expect(pruneRuns({ dataDir })).rejects.toThrow(StoreError);
    await expect(pruneRuns({ dataDir, keepLast: -1 })).rejects.toThrow(/keepLast must be an integer >= 0, got -1/);
    await expect(pruneRuns({ dataDir, olderThan: new Date('nope') })).rejects.toThrow(/olderThan must be a valid Date/);
    await expect(pruneRuns({ dataDir, status: 'done' as never })).rejects.toThrow(/unknown status 'done'/);
    expect(await ids()).toEqual(['a']);
  });

  it('keepLast keeps the newest runs of each session, by start time', async () => {
    for (const id of ['a', 'b', 'c']) await run(id);
    await run('x', { sessionKey: 'other' });
    const result = await pruneRuns({ dataDir, keepLast: 1 });
    expect(result.deleted.map((r) => r.runId).sort()).toEqual(['a', 'b']);
    expect(result.kept).toBe(2);
    expect(await ids('default')).toEqual(['c']);
    expect(await ids('other')).toEqual(['x']);
  });

  it('status and olderThan must both hold; a dry run reports and deletes nothing', async () => {
    await run('ok-1');
    await run('bad-1', { fail: true });
    await run('bad-2', { fail: true });
    const dry = await pruneRuns({ dataDir, sessionKey: 'default', status: 'failed', dryRun: true });
    expect(dry.deleted.map((r) => r.runId).sort()).toEqual(['bad-1', 'bad-2']);
    expect(dry.dryRun).toBe(true);
    expect(await ids()).toEqual(['bad-1', 'bad-2', 'ok-1']);
    // Nothing is older than an hour yet; an hour from now, everything is.
    expect((await pruneRuns({ dataDir, status: 'failed', olderThan: 3_600_000 })).deleted).toEqual([]);
    const later = await pruneRuns({ dataDir, status: ['failed'], olderThan: 3_600_000, keepLast: 1, now: Date.now() + 2 * 3_600_000 });
    expect(later.deleted).toHaveLength(1);
    expect(await ids()).toHaveLength(2);
    // A Date is a cutoff.
    const all = await pruneRuns({ dataDir, olderThan: new Date(Date.now() + 60_000) });
    expect(all.deleted).toHaveLength(2);
    expect(await ids()).toEqual([]);
  });

  it('skips a run with a live writer and a damaged run, saying why; deleteRun removes the damaged one by id', async () => {
    await run('live');
    await run('damaged');
    await run('plain');
    // A damaged log: a line in the middle that is not JSON.
    const events = runPaths(dataDir, 'default', 'damaged').events;
    writeFileSync(events, 'not json\n');
    appendFileSync(events, '{"also": "not an event"}\n');
    const writer = new EventStore({ dataDir, sessionKey: 'default', runId: 'live' });
    await writer.open();
    try {
      const result = await pruneRuns({ dataDir, olderThan: 0, now: Date.now() + 1000 });
      expect(result.deleted.map((r) => r.runId)).toEqual(['plain']);
      const reasons = Object.fromEntries(result.skipped.map((s) => [s.runId, s.reason]));
      expect(reasons['live']).toMatch(/has a live writer \(pid \d+/);
      expect(reasons['damaged']).toMatch(/^damaged .*delete it by id/);
      await expect(deleteRun({ dataDir, runId: 'live' })).rejects.toBeInstanceOf(RunInUseError);
    } finally {
      await writer.close();
    }
    expect(await deleteRun({ dataDir, runId: 'damaged' })).toBe(true);
    expect(await deleteRun({ dataDir, runId: 'live' })).toBe(true);
    expect(await deleteRun({ dataDir, runId: 'live' })).toBe(false);
    expect(existsSync(join(dataDir, 'sessions', 'default', 'runs', 'live'))).toBe(false);
  });

  it('sweeps what an interrupted delete left, and a dry run only reports it', async () => {
    await run('a');
    writeFileSync(join(dataDir, 'sessions', 'default', 'runs', 'gone~deleting-aaaaaaaaaaaa'), '');
    expect((await pruneRuns({ dataDir, keepLast: 5, dryRun: true })).swept).toEqual(['default/gone~deleting-aaaaaaaaaaaa']);
    expect((await pruneRuns({ dataDir, keepLast: 5 })).swept).toEqual(['default/gone~deleting-aaaaaaaaaaaa']);
    expect((await pruneRuns({ dataDir, keepLast: 5 })).swept).toEqual([]);
    expect(await ids()).toEqual(['a']);
  });
});
