/**
 * A queued job whose stored payload is damaged (not JSON, or not a payload of its kind) is failed, naming its row and
 * what is wrong, where failed jobs' outcomes go; it is never claimed as a start with no input (audit s21b M5). With
 * a worker as a real process (the built CLI), as queue-poison.test.ts runs them.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFlowFile, recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { documentCollector } from '../../src/cli/backpackflow/recipe.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { RunQueue } from '../../src/store/postgres/queue.js';
import { plainEnv } from '../support/env.js';
import { freshDatabase } from '../support/pg.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'dist', 'cli', 'backpackflow.js');
const FLOW = join(root, 'test', 'pg', 'fixtures', 'chain.json');
const MODULES = join(root, 'test', 'pg', 'fixtures', 'nodes.mjs');
const SECRET = 'sk-proj-Payload0123456789abcdefghijklmnopqrstuvwxyzAB';

let url: string;
let drop: () => Promise<void>;
let store: PostgresRunStore;
let admin: postgres.Sql;
beforeAll(async () => {
  ({ url, drop } = await freshDatabase());
  store = new PostgresRunStore({ url });
  admin = postgres(url, { max: 1, onnotice: () => undefined });
});
afterAll(async () => {
  await admin.end();
  await store.close();
  await drop();
});

async function enqueueStart(runId: string, input?: Record<string, unknown>): Promise<void> {
  const config = readFlowFile(FLOW) as { nodes: { params: Record<string, unknown> }[] };
  config.nodes[0]!.params = { steps: 2, delayMs: 0 };
  const collected = documentCollector();
  await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [MODULES] }, config);
  await new RunQueue(store).enqueue({ sessionKey: 'default', runId }, 'start', input === undefined ? {} : { input }, collected.documents);
}

async function outcome(runId: string): Promise<{ state: string; outcome: string | null; payload: string | null }> {
  const [row] = await admin<{ state: string; outcome: string | null; payload: string | null }[]>`select state, outcome, payload from backpackflow.queue where run_id = ${runId}`;
  return row!;
}

describe('a queued job whose payload row is damaged', () => {
  it('is claimed to be failed, naming its row and what is wrong, never as a start with no input', async () => {
    const queue = new RunQueue(store);
    const damaged: [string, 'start' | 'resume', string, RegExp][] = [
      ['torn', 'start', '{"input":{"top', /is damaged: not JSON \(/],
      ['array', 'start', '[1,2]', /is damaged: not an object but an array/],
      ['bad-input', 'start', '{"input":"tides"}', /is damaged: its input is string, not an object/],
      ['foreign-key', 'start', '{"inptu":{"topic":"tides"}}', /is damaged: it holds "inptu", which a start job's payload does not \(only "input"\)/],
      ['bad-resume', 'resume', '{"input":{}}', /is damaged: it holds "input", which a resume job's payload does not \(only "resume", "answering"\)/],
    ];
    for (const [runId, kind] of damaged) await queue.enqueue({ sessionKey: 'default', runId }, kind, kind === 'start' ? { input: { topic: 'tides' } } : { resume: 1 });
    for (const [runId, , payload] of damaged) await admin`update backpackflow.queue set payload = ${payload} where run_id = ${runId}`;
    for (const [runId, kind, , problem] of damaged) {
      const job = (await queue.claim('w', 10_000))!;
      expect(job.runId).toBe(runId);
      expect(job.payload).toEqual({});
      expect(job.gaveUp).toMatch(new RegExp(`^failed: the payload of its ${kind} job \\(the row of run default/${runId} in backpackflow\\.queue, .*\\) is damaged: `));
      expect(job.gaveUp).toMatch(problem);
      await queue.finish(job, 'w', job.gaveUp!);
      const done = await outcome(runId);
      expect(done.state).toBe('done');
      expect(done.outcome).toBe(job.gaveUp);
    }
    // A payload that is JSON is kept as it was stored (redacted), the evidence; one that is not JSON cannot be redacted by its keys and is not kept.
    expect((await outcome('bad-input')).payload).toBe('{"input":"tides"}');
    expect((await outcome('torn')).payload).toBe('{}');
    // Listed by worker --status as failed.
    expect((await queue.entries({ openOrFailed: true })).map((e) => e.runId)).toEqual(damaged.map(([runId]) => runId));
    // Valid payloads are claimed as they were queued.
    await queue.enqueue({ sessionKey: 'default', runId: 'whole' }, 'start', { input: { topic: 'tides' } });
    await queue.enqueue({ sessionKey: 'default', runId: 'empty' }, 'start', {});
    const whole = (await queue.claim('w', 10_000))!;
    expect(whole).toMatchObject({ runId: 'whole', payload: { input: { topic: 'tides' } } });
    expect(whole.gaveUp).toBeUndefined();
    expect(await queue.claim('w', 10_000)).toMatchObject({ runId: 'empty', payload: {} });
  });

  it('is failed by a worker, which never runs its flow; the reason is stored and printed, secrets redacted', async () => {
    await enqueueStart('job-torn', { topic: 'tides', apiKey: SECRET });
    await admin`update backpackflow.queue set payload = left(payload, 40) where run_id = 'job-torn'`;
    await enqueueStart('job-secret', { topic: 'tides' });
    await admin`update backpackflow.queue set payload = ${JSON.stringify({ input: { topic: 'tides' }, apiKey: SECRET })} where run_id = 'job-secret'`;
    await enqueueStart('job-fine', { topic: 'tides' });
    const out = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'worker', '--database-url', url, '--modules', MODULES, '--poll-ms', '50', '--exit-when-idle'], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr.on('data', (d: Buffer) => (text += d.toString()));
      child.on('close', (code) => resolve({ code, out: text }));
    });
    expect(out.code, out.out).toBe(0);
    for (const runId of ['job-torn', 'job-secret']) {
      const done = await outcome(runId);
      expect(done.state).toBe('done');
      expect(done.outcome).toMatch(new RegExp(`^failed: the payload of its start job \\(the row of run default/${runId} in backpackflow\\.queue, .*\\) is damaged: `));
      expect(out.out).toContain(`default/${runId} failed: the payload of its start job`);
      // Never run: no event of it.
      expect(await store.hasEvents({ sessionKey: 'default', runId })).toBe(false);
    }
    expect((await outcome('job-secret')).payload).not.toContain(SECRET);
    expect(out.out).not.toContain(SECRET);
    expect(await outcome('job-fine')).toMatchObject({ state: 'done', outcome: 'completed' });
  });
});
