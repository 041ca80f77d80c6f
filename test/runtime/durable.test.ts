import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BackpackNode,
  Flow,
  StreamEventType,
  forkRun,
  listRuns,
  loadRunPoint,
  resumeRun,
  runFlow,
  verifyRun,
  type BackpackHandle,
} from '../../src/index.js';
import { EventStore, ProjectionStore } from '../../src/store/index.js';
import { buildJournalFlow } from './fixtures/journal-flow.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bpf-runtime-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

const runDir = (runId: string, session = 'default') => join(dataDir, 'sessions', session, 'runs', runId);

describe('runFlow', () => {
  it('persists every event of the run, the projection and the start of the record, and returns the step count', async () => {
    const flow = buildJournalFlow({ rounds: 3 });
    const result = await runFlow(flow, { dataDir, runId: 'run-a' });
    // 3 collect steps, the composite's inner check → sign boundary, and the composite's own step.
    expect(result).toMatchObject({ runId: 'run-a', sessionKey: 'default', steps: 5 });
    const events = await new EventStore({ dataDir, sessionKey: 'default', runId: 'run-a' }).readAll();
    const types = events.map((e) => e.type);
    expect(types[0]).toBe(StreamEventType.RUN_START);
    // Right after run.started, before any node: the start of the record (the whole state, no file created).
    expect(events[1]).toMatchObject({ type: StreamEventType.CHECKPOINT_SAVED, payload: { step: 0, start: true, position: ['collect'] } });
    expect(types.at(-1)).toBe(StreamEventType.RUN_END);
    expect(types.filter((t) => t === StreamEventType.NODE_START)).toHaveLength(6);
    expect(types.filter((t) => t === StreamEventType.CHECKPOINT_SAVED)).toHaveLength(6);
    expect(events.at(-1)!.payload.steps).toBe(result.steps);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const meta = await new ProjectionStore({ dataDir, sessionKey: 'default' }).loadRunMeta('run-a');
    expect(meta).toMatchObject({ status: 'completed', stepCount: 6 });
    expect(existsSync(join(runDir('run-a'), 'checkpoint'))).toBe(false); // fewer steps than one keyframe interval
    expect((await listRuns({ dataDir })).map((m) => m.runId)).toEqual(['run-a']);
  });

  it("runs several durable runs at once in one process (each step's fsync then goes through the thread pool): every log verifies and every run records its own state", async () => {
    const runs = ['one', 'two', 'three', 'four'];
    const results = await Promise.all(runs.map((runId, i) => runFlow(buildJournalFlow({ rounds: 3 + i, delayMs: 1 }), { dataDir, runId, durability: 'batch', keyframeInterval: 2 })));
    expect(results.map((r) => r.steps)).toEqual([5, 6, 7, 8]);
    for (const [i, runId] of runs.entries()) {
      const report = await verifyRun({ dataDir, runId });
      expect(report.ok, JSON.stringify(report)).toBe(true);
      const point = await loadRunPoint({ dataDir, runId });
      expect(point.step).toBe(results[i]!.steps);
      // Each run's own rounds are in its own state: no step of another run was filed in this one's log.
      const events = await new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();
      expect(new Set(events.map((e) => e.runId))).toEqual(new Set([runId]));
      expect(events.filter((e) => e.type === StreamEventType.NODE_START && e.nodeId === 'collect')).toHaveLength(3 + i);
    }
  });

  it('records the state at every step exactly: loadRunPoint(step) equals what the flow had then', async () => {
    const seen: unknown[] = [];
    const flow = buildJournalFlow({ rounds: 5 });
    flow.eventStreamer.on(StreamEventType.CHECKPOINT_SAVED, () => void seen.push(flow.backpack.exportState()));
    await runFlow(flow, { dataDir, runId: 'exact', keyframeInterval: 2, input: { topic: 'tides' } });
    expect(seen).toHaveLength(8); // the start, then 7 steps
    for (let step = 1; step <= 7; step++) {
      const point = await loadRunPoint({ dataDir, runId: 'exact', step });
      const expected = JSON.parse(JSON.stringify(seen[step])) as { items: Record<string, { value: unknown }> };
      // Secrets never reach disk: the value under the secret-named key 'token' is redacted; the rest (its
      // provenance included) is exact.
      expect(point.state.items.token?.value).toBe('[REDACTED]');
      expected.items.token!.value = '[REDACTED]';
      expect(point.state).toEqual(expected);
      expect(point.step).toBe(step);
    }
    expect((await loadRunPoint({ dataDir, runId: 'exact', step: 0 })).state.items.topic?.value).toBe('tides');
  });

  it('writes one file per keyframe (none at the start, no checkpoint.latest.json) and finds the newest keyframe by step', async () => {
    const result = await runFlow(buildJournalFlow({ rounds: 5 }), { dataDir, runId: 'frames', keyframeInterval: 3 });
    expect(result.steps).toBe(7);
    expect(readdirSync(join(runDir('frames'), 'checkpoint')).sort()).toEqual(['3.json', '6.json']);
    expect(existsSync(join(runDir('frames'), 'checkpoint.latest.json'))).toBe(false);
    const last = await loadRunPoint({ dataDir, runId: 'frames' });
    expect(last.step).toBe(7);
    expect(last).toEqual(await loadRunPoint({ dataDir, runId: 'frames', step: 7 }));
  });

  it('grows checkpoint storage with the work, not with steps × state', async () => {
    await runFlow(buildJournalFlow({ rounds: 400 }), { dataDir, runId: 'big' });
    const bytes = (dir: string): number =>
      readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => sum + (e.isDirectory() ? bytes(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);
    // 400 appends of ~200 bytes: the final list is ~80 KB; whole-state checkpoints would be ~16 MB.
    expect(bytes(runDir('big'))).toBeLessThan(2_000_000);
  });

  it('never writes a secret to disk and says so on the event', async () => {
    await runFlow(buildJournalFlow({ rounds: 4 }), { dataDir, runId: 'secret', keyframeInterval: 2 });
    const files = ['events.jsonl', join('checkpoint', '2.json')].map((f) => readFileSync(join(runDir('secret'), f), 'utf8'));
    for (const text of files) expect(text).not.toContain('sk-aaaa');
    const checkpoints = (await new EventStore({ dataDir, sessionKey: 'default', runId: 'secret' }).readAll()).filter(
      (e) => e.type === StreamEventType.CHECKPOINT_SAVED,
    );
    expect(checkpoints[0]!.payload).toMatchObject({ step: 0, start: true });
    expect(checkpoints[1]!.redaction).toEqual({ containsSecrets: true }); // step 1 packed the token
  });

  it('keeps who wrote a secret-named key while blanking its value', async () => {
    class Login extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('apiKey', 'a plain password-like value');
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Login, { id: 'login' });
    await runFlow(flow, { dataDir, runId: 'provenance' });
    const item = (await loadRunPoint({ dataDir, runId: 'provenance' })).state.items['apiKey']!;
    expect(item.value).toBe('[REDACTED]');
    expect(item.metadata).toMatchObject({ sourceNodeId: 'login', sourceNodeName: 'Login', sourceNamespace: 'app.login' });
  });

  it('rejects ids that could escape the data directory before touching any file', async () => {
    for (const runId of ['../escape', 'a/b', 'x'.repeat(129), 'nul\u0000']) {
      await expect(runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, runId })).rejects.toThrow(/runId/);
    }
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, sessionKey: '..' })).rejects.toThrow(/sessionKey/);
    expect(readdirSync(dataDir)).toEqual([]);
  });
});

describe('resumeRun', () => {
  it('resumes a failed run inside a composite and ends with the same backpack as an uninterrupted run', async () => {
    const marker = join(dataDir, 'failed-once');
    await expect(runFlow(buildJournalFlow({ rounds: 3, failOnceMarker: marker }), { dataDir, runId: 'fails' })).rejects.toThrow(
      /sign failed/,
    );
    expect((await new ProjectionStore({ dataDir, sessionKey: 'default' }).loadRunMeta('fails'))?.status).toBe('failed');
    const point = await loadRunPoint({ dataDir, runId: 'fails' });
    expect(point.position).toEqual(['review', 'sign']);

    const resumedFlow = buildJournalFlow({ rounds: 3, failOnceMarker: marker });
    const started: string[] = [];
    resumedFlow.eventStreamer.on(StreamEventType.NODE_START, (e) => void started.push(e.namespace!));
    const result = await resumeRun(resumedFlow, { dataDir, runId: 'fails' });
    expect(started).toEqual(['journal.review', 'journal.review.sign']);

    const reference = buildJournalFlow({ rounds: 3 });
    await reference.run();
    expect(resumedFlow.backpack.toObject()).toEqual({ ...reference.backpack.toObject(), token: '[REDACTED]' });
    expect(result.steps).toBeGreaterThan(point.step);
    const events = await new EventStore({ dataDir, sessionKey: 'default', runId: 'fails' }).readAll();
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect((await new ProjectionStore({ dataDir, sessionKey: 'default' }).loadRunMeta('fails'))?.status).toBe('completed');
  });

  it('refuses to resume a completed run, and an unknown one', async () => {
    await runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'done' });
    await expect(resumeRun(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'done' })).rejects.toThrow(/already completed; fork it/);
    await expect(resumeRun(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'nope' })).rejects.toThrow(/run default\/nope has no recorded events in .*: nothing to resume/);
  });
});

describe('forkRun', () => {
  it('starts a new run from a recorded step and leaves the recorded run byte for byte untouched', async () => {
    await runFlow(buildJournalFlow({ rounds: 4 }), { dataDir, runId: 'origin' });
    const snapshot = (runId: string) =>
      Object.fromEntries(
        ['events.jsonl', join('projections', 'run.meta.json')].map((f) => [f, readFileSync(join(runDir(runId), f), 'utf8')]),
      );
    const before = snapshot('origin');
    const fork = buildJournalFlow({ rounds: 4 });
    const result = await forkRun(fork, { dataDir, runId: 'origin', atStep: 2, newRunId: 'branch' });
    expect(result.runId).toBe('branch');
    expect(snapshot('origin')).toEqual(before);
    expect((fork.backpack.peek('journal') as string[]).length).toBe(4);
    const branch = await new EventStore({ dataDir, sessionKey: 'default', runId: 'branch' }).readAll();
    expect(branch.filter((e) => e.type === StreamEventType.NODE_START).map((e) => e.nodeId)).toEqual(['collect', 'collect', 'review', 'check', 'sign']);
    // The fork's record starts at the step it was taken from, with the whole state and where it came from.
    expect(branch[1]).toMatchObject({ type: StreamEventType.CHECKPOINT_SAVED, payload: { step: 2, start: true, forkedFrom: { runId: 'origin', step: 2 } } });
    expect((await loadRunPoint({ dataDir, runId: 'branch', step: 2 })).state).toEqual((await loadRunPoint({ dataDir, runId: 'origin', step: 2 })).state);
  });

  it('refuses a step that was not recorded', async () => {
    await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'short' });
    await expect(forkRun(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'short', atStep: 99 })).rejects.toThrow(
      'run default/short has no step 99; its last recorded step is 4',
    );
  });
});

describe('runFlow input', () => {
  it('is packed into the Backpack before the first node runs', async () => {
    class Echo extends BackpackNode {
      override post(backpack: BackpackHandle) {
        backpack.pack('echo', backpack.unpack('say'));
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Echo, { id: 'echo' });
    await runFlow(flow, { dataDir, input: { say: 'hi' } });
    expect(flow.backpack.peek('echo')).toBe('hi');
  });
});
