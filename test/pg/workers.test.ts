/**
 * Workers as real processes (the built CLI) on a real server: queued runs all complete once, a SIGKILLed worker's run
 * is taken over from its last recorded step, a worker that stalls past its lease has its writes refused, and a worker
 * that finds the run it claimed already started by another gives the job back without writing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { readFlowFile } from '../../src/cli/backpackflow/flows.js';
import { documentCollector } from '../../src/cli/backpackflow/recipe.js';
import type { StreamEvent } from '../../src/events/types.js';
import { loadRunPoint } from '../../src/runtime/index.js';
import { PostgresRunStore, recordedDigests } from '../../src/store/index.js';
import { RunQueue } from '../../src/store/postgres/queue.js';
import { plainEnv } from '../support/env.js';
import { freshDatabase } from '../support/pg.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'dist', 'cli', 'backpackflow.js');
const FLOW = join(root, 'test', 'pg', 'fixtures', 'chain.json');
const MODULES = join(root, 'test', 'pg', 'fixtures', 'nodes.mjs');
const GATED_MODULES = join(root, 'test', 'pg', 'fixtures', 'gated-nodes.mjs');

interface Worker {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startWorker(url: string, extra: string[] = [], options: { modules?: string; env?: Record<string, string> } = {}): Worker {
  const args = [BIN, 'worker', '--database-url', url, '--modules', options.modules ?? MODULES, '--poll-ms', '100', ...extra];
  const child = spawn(process.execPath, args, { env: plainEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Queues `count` runs of the chain flow with `steps` steps, as `run --enqueue` does. */
async function enqueue(store: PostgresRunStore, ids: string[], params: { steps: number; delayMs: number }): Promise<void> {
  const config = readFlowFile(FLOW) as { nodes: { params: Record<string, unknown> }[] };
  config.nodes[0]!.params = params;
  const queue = new RunQueue(store);
  for (const runId of ids) {
    const ref = { sessionKey: 'default', runId };
    const collected = documentCollector();
    await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [MODULES] }, config);
    await queue.enqueue(ref, 'start', {}, collected.documents);
  }
}

describe('workers', () => {
  let url: string;
  let drop: () => Promise<void>;
  let store: PostgresRunStore;
  let admin: postgres.Sql;
  let workers: Worker[] = [];

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    store = new PostgresRunStore({ url });
    admin = postgres(url, { max: 1, onnotice: () => undefined });
  });
  afterEach(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    workers = [];
  });
  afterAll(async () => {
    await store.close();
    await admin.end();
    await drop();
  });

  /** The steps of a run's checkpoint.saved events, in log order, and its run.started count. */
  async function record(runId: string): Promise<{ steps: number[]; starts: number; events: StreamEvent[] }> {
    const events: StreamEvent[] = [];
    for await (const { event } of store.readVerified({ sessionKey: 'default', runId })) events.push(event);
    const steps = events.filter((e) => e.type === 'checkpoint.saved').map((e) => (e.payload as { step: number }).step);
    return { steps, starts: events.filter((e) => e.type === 'run.started').length, events };
  }

  it('run --enqueue queues a run and prints its id; a worker runs it', async () => {
    const run = spawn(process.execPath, [BIN, 'run', FLOW, '--database-url', url, '--modules', MODULES, '--enqueue', '--run-id', 'cli-queued'], { env: plainEnv() });
    let stdout = '';
    run.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    expect(await new Promise((resolve) => run.on('exit', resolve))).toBe(0);
    expect(stdout.trim()).toBe('cli-queued');
    workers.push(startWorker(url, ['--exit-when-idle']));
    expect(await workers[0]!.exited).toBe(0);
    expect(workers[0]!.output()).toContain('default/cli-queued completed');
    const point = await loadRunPoint({ store, runId: 'cli-queued' });
    expect(point.state.items['lines']?.value).toHaveLength(8);
    // The worker started it with the documents it was queued with, their digests in its start record.
    const ref = { sessionKey: 'default', runId: 'cli-queued' };
    expect(Object.keys((await recordedDigests(store, ref))?.digests ?? {}).sort()).toEqual(['flow', 'recipe']);
    expect(await store.loadDocument(ref, 'flow')).toEqual(readFlowFile(FLOW));
  });

  it('3 workers run 30 queued runs; one SIGKILLed mid-run: all complete, each step recorded once, the same final state', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `run-${String(i).padStart(2, '0')}`);
    await enqueue(store, ids, { steps: 8, delayMs: 30 });
    for (let i = 0; i < 3; i++) workers.push(startWorker(url, ['--concurrency', '2', '--lease-ms', '1500']));
    // Kill the worker holding a run that has recorded a few steps but not finished.
    const victimPid = await until('a worker in the middle of a run', async () => {
      const rows = await admin<{ lease_owner: string; steps: string }[]>`
        select r.lease_owner, (select count(*) from backpackflow.event_lines e where e.run_id = r.run_id and e.body like '%"type":"checkpoint.saved"%') as steps
        from backpackflow.runs r where r.lease_owner is not null and r.lease_expires_at > now()`;
      const mid = rows.find((r) => Number(r.steps) >= 3);
      return mid === undefined ? undefined : Number(mid.lease_owner.split(':').at(-2));
    });
    const victim = workers.find((w) => w.child.pid === victimPid)!;
    expect(victim).toBeDefined();
    victim.child.kill('SIGKILL');
    await until(
      'every queued run to be done',
      async () => {
        const [row] = await admin<{ open: string }[]>`select count(*) as open from backpackflow.queue where state <> 'done'`;
        return Number(row!.open) === 0;
      },
      90_000,
    );
    const jobs = await new RunQueue(store).entries();
    expect(jobs.filter((j) => ids.includes(j.runId)).map((j) => j.outcome)).toEqual(ids.map(() => 'completed'));
    // At least one run was taken over from the killed worker (claimed twice, started twice in its log).
    expect(jobs.some((j) => ids.includes(j.runId) && j.attempts > 1)).toBe(true);
    let takenOver = 0;
    const expected = Array.from({ length: 8 }, (_, i) => `step ${i + 1} `.padEnd(200, '.'));
    for (const runId of ids) {
      const { steps, starts, events } = await record(runId);
      // Each step recorded exactly once, in order: the start (0), then 1..8.
      expect(steps).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      if (starts > 1) takenOver++;
      const point = await loadRunPoint({ store, runId });
      expect(point.state.items['lines']?.value).toEqual(expected);
      expect((await store.currentRunMeta({ sessionKey: 'default', runId })).status).toBe('completed');
    }
    expect(takenOver).toBeGreaterThan(0);
  });

  it('two workers racing for one run: the one that stalled past its lease has its writes refused by the fence', async () => {
    await enqueue(store, ['raced'], { steps: 30, delayMs: 40 });
    const a = startWorker(url, ['--lease-ms', '1000']);
    workers.push(a);
    await until('worker A to record a few steps', async () => {
      const [row] = await admin<{ n: string }[]>`select count(*) as n from backpackflow.event_lines where run_id = 'raced' and body like '%"type":"checkpoint.saved"%'`;
      return Number(row!.n) >= 3;
    });
    // A stalls (a long GC pause, a partition) past its lease; B starts and takes the run over.
    a.child.kill('SIGSTOP');
    const b = startWorker(url, ['--lease-ms', '1000']);
    workers.push(b);
    await until('worker B to take the run over', async () => ((await record('raced')).starts >= 2 ? true : undefined), 30_000);
    a.child.kill('SIGCONT');
    await until('the run to complete', async () => {
      const [row] = await admin<{ state: string; outcome: string | null }[]>`select state, outcome from backpackflow.queue where run_id = 'raced'`;
      return row?.state === 'done' ? row : undefined;
    });
    await until('worker A to report that it lost the run', async () => a.output().includes('default/raced lost to another worker'), 30_000);
    // B prints the run's end once its next claim (the statement that marked the job done) returns: its output may
    // reach this process after the queue row says done.
    await until('worker B to report that the run completed', async () => b.output().includes('default/raced completed'), 30_000);
    const { steps, events } = await record('raced');
    expect(steps).toEqual(Array.from({ length: 31 }, (_, i) => i));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const point = await loadRunPoint({ store, runId: 'raced' });
    expect(point.state.items['lines']?.value).toEqual(Array.from({ length: 30 }, (_, i) => `step ${i + 1} `.padEnd(200, '.')));
  });

  it('a worker whose claim ran out before it started the run finds the run started by another and gives the job back without writing', async () => {
    await enqueue(store, ['gated'], { steps: 6, delayMs: 150 });
    const gateDir = mkdtempSync(join(tmpdir(), 'bpf-gate-'));
    const gate = join(gateDir, 'open');
    try {
      // A claims the run, then waits between its claim and the run's start (its modules load behind the gate).
      const a = startWorker(url, ['--lease-ms', '900'], { modules: GATED_MODULES, env: { BACKPACKFLOW_TEST_GATE: gate } });
      workers.push(a);
      const claimedBy = async () => (await admin<{ claimed_by: string | null; attempts: number }[]>`select claimed_by, attempts from backpackflow.queue where run_id = 'gated'`)[0];
      const aOwner = await until('worker A to claim the run', async () => {
        const row = await claimedBy();
        return row?.claimed_by !== null && row?.attempts === 1 ? row!.claimed_by! : undefined;
      });
      expect(Number(aOwner.split(':').at(-2))).toBe(a.child.pid);
      // A stalls past its claim (a long pause); B claims the run once that claim ran out and starts it.
      a.child.kill('SIGSTOP');
      const b = startWorker(url, ['--lease-ms', '900']);
      workers.push(b);
      await until('worker B to start the run', async () => ((await record('gated')).starts === 1 ? true : undefined), 30_000);
      const bOwner = (await claimedBy())!.claimed_by!;
      expect(Number(bOwner.split(':').at(-2))).toBe(b.child.pid);
      // A goes on while B writes the run: its start meets the run's events and it gives the job back.
      writeFileSync(gate, '');
      a.child.kill('SIGCONT');
      await until('worker A to give the job back', async () => a.output().includes('default/gated given back'), 30_000);
      await until('the run to complete', async () => {
        const [row] = await admin<{ state: string }[]>`select state from backpackflow.queue where run_id = 'gated'`;
        return row?.state === 'done' ? true : undefined;
      });
      const [job] = (await new RunQueue(store).entries()).filter((j) => j.runId === 'gated');
      // Claimed by A, then by B, who completed it; A's giving back did not take B's claim (it was B's by then).
      expect(job).toMatchObject({ state: 'done', outcome: 'completed', attempts: 2 });
      expect(b.output()).toContain('default/gated completed');
      expect(a.output()).not.toContain('default/gated completed');
      // Recorded once, by B alone: one start, each step once, in order.
      const { steps, starts, events } = await record('gated');
      expect(starts).toBe(1);
      expect(steps).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const point = await loadRunPoint({ store, runId: 'gated' });
      expect(point.state.items['lines']?.value).toEqual(Array.from({ length: 6 }, (_, i) => `step ${i + 1} `.padEnd(200, '.')));
    } finally {
      rmSync(gateDir, { recursive: true, force: true });
    }
  });
});
