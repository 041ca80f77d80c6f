/**
 * Jobs a worker must not run as usual, with workers as real processes (the built CLI) on a real server: a poisoned job
 * (its node kills every worker that runs it) is given up after --max-attempts with its reason stored, redacted and
 * reported; a worker lacking a flow's node classes gives its jobs back (never failing them) to a worker that has them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFlowFile, recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { documentCollector } from '../../src/cli/backpackflow/recipe.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { DEFAULT_MAX_ATTEMPTS, RunQueue } from '../../src/store/postgres/queue.js';
import { plainEnv } from '../support/env.js';
import { freshDatabase } from '../support/pg.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'dist', 'cli', 'backpackflow.js');
const CHAIN = join(root, 'test', 'pg', 'fixtures', 'chain.json');
const CHAIN_MODULES = join(root, 'test', 'pg', 'fixtures', 'nodes.mjs');
const POISON_MODULES = join(root, 'test', 'pg', 'fixtures', 'queue-poison-nodes.mjs');
const SECRET = 'sk-proj-Poison0123456789abcdefghijklmnopqrstuvwxyzAB';

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  pid: number;
}

/** Starts the built CLI: the process, and how it ended (exit code, null when killed by a signal; signal; output). */
function start(args: string[]): { child: ChildProcess; ended: Promise<Ended> } {
  const child = spawn(process.execPath, [BIN, ...args], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, ended: new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, out, pid: child.pid! }))) };
}

/** Runs the built CLI to its end. */
function cli(args: string[]): Promise<Ended> {
  return start(args).ended;
}

describe('jobs a worker cannot run as usual', () => {
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
    await store.close();
    await admin.end();
    await drop();
  });

  async function enqueue(runId: string, config: unknown, modules: string, input?: Record<string, unknown>): Promise<void> {
    const collected = documentCollector();
    await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [modules] }, config);
    await new RunQueue(store).enqueue({ sessionKey: 'default', runId }, 'start', input === undefined ? {} : { input }, collected.documents);
  }

  it('a job whose node kills its worker is given up after the default --max-attempts, its reason stored redacted, printed and listed by worker --status', async () => {
    const config = { version: '2.0.0', namespace: 'poison', nodes: [{ type: 'KillsItsWorker', id: 'kill', params: {} }], edges: [] };
    await enqueue('poisoned', config, POISON_MODULES, { apiKey: SECRET, note: `key ${SECRET}` });
    const worker = ['worker', '--database-url', url, '--modules', POISON_MODULES, '--lease-ms', '300', '--poll-ms', '50', '--exit-when-idle'];
    const pids: number[] = [];
    try {
      for (let i = 0; i < DEFAULT_MAX_ATTEMPTS; i++) {
        const killed = await cli(worker);
        expect(killed.signal, killed.out).toBe('SIGKILL');
        pids.push(killed.pid);
        // The next worker finds the job once the dead one's claim ran out.
        for (;;) {
          const [row] = await admin<{ lapsed: boolean }[]>`select claimed_until < now() as lapsed from backpackflow.queue where run_id = 'poisoned'`;
          if (row!.lapsed) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      const finder = await cli(worker);
      expect(finder.code, finder.out).toBe(0);
      const [row] = await admin<{ state: string; attempts: number; lapses: number; outcome: string; payload: string; claimed_by: string }[]>`
        select state, attempts, lapses, outcome, payload, claimed_by from backpackflow.queue where run_id = 'poisoned'`;
      expect(row!.state).toBe('done');
      // Claimed by each killed worker; the claim that found the last lapse gave it up without running it.
    expect([row!.attempts, row!.lapses]).toEqual([DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_ATTEMPTS]);
      // The last worker that held it was the last one killed (its owner id ends with its pid and a random part).
      expect(row!.outcome).toMatch(new RegExp(`^failed: gave up after ${DEFAULT_MAX_ATTEMPTS} attempts: each worker holding it stopped without finishing \\(last: worker [^)]*:${pids.at(-1)}:[0-9a-f]{8}\\)$`));
      expect(finder.out).toContain(`default/poisoned ${row!.outcome}`);
      expect(row!.claimed_by).toMatch(new RegExp(`:${finder.pid}:`));
      expect(row!.payload).not.toContain(SECRET);
      expect(JSON.parse(row!.payload)).toMatchObject({ input: { apiKey: '[REDACTED]' } });
      const status = await cli(['worker', '--database-url', url, '--status', '--json']);
      expect(status.code, status.out).toBe(0);
      expect(JSON.parse(status.out)).toEqual([expect.objectContaining({ runId: 'poisoned', state: 'done', attempts: DEFAULT_MAX_ATTEMPTS, lapses: DEFAULT_MAX_ATTEMPTS, outcome: row!.outcome })]);
      const human = await cli(['worker', '--database-url', url, '--status']);
      expect(human.out).toMatch(new RegExp(`default/poisoned\\s+start\\s+done\\s+${DEFAULT_MAX_ATTEMPTS}\\s+${DEFAULT_MAX_ATTEMPTS}\\s+failed: gave up after ${DEFAULT_MAX_ATTEMPTS} attempts`));
    } finally {
      // The next test's workers must not find it.
      await admin`delete from backpackflow.queue where run_id = 'poisoned'`;
    }
  }, 20_000);

  it('a job given up on whose run is recorded completed (its last worker died after the run ended) is done as completed, not failed', async () => {
    await enqueue('ended', await readFlowFile(CHAIN), CHAIN_MODULES);
    const worker = ['worker', '--database-url', url, '--modules', CHAIN_MODULES, '--lease-ms', '300', '--poll-ms', '50', '--exit-when-idle'];
    const ran = await cli(worker);
    expect(ran.code, ran.out).toBe(0);
    // As a worker killed after the run's end, before its next claim marked the job done, on its last allowed lapse.
    await admin`update backpackflow.queue set state = 'claimed', claimed_by = 'ghost', claimed_until = now() - interval '1 second', outcome = null,
      lapses = ${DEFAULT_MAX_ATTEMPTS - 1} where run_id = 'ended'`;
    const finder = await cli(worker);
    expect(finder.code, finder.out).toBe(0);
    const [row] = await admin<{ state: string; outcome: string }[]>`select state, outcome from backpackflow.queue where run_id = 'ended'`;
    expect(row).toEqual({ state: 'done', outcome: 'completed' });
    await admin`delete from backpackflow.queue where run_id = 'ended'`;
  });

  it('a worker lacking a flow node class gives its jobs back, noted in worker --status; a worker that has it runs them all, none failed', async () => {
    const config = readFlowFile(CHAIN) as { nodes: { params: Record<string, unknown> }[] };
    config.nodes[0]!.params = { steps: 2, delayMs: 0 };
    const ids = ['lack-1', 'lack-2', 'lack-3'];
    for (const id of ids) await enqueue(id, config, CHAIN_MODULES);
    const lacking = await cli(['worker', '--database-url', url, '--modules', POISON_MODULES, '--poll-ms', '50', '--exit-when-idle']);
    expect(lacking.code, lacking.out).toBe(0);
    for (const id of ids) expect(lacking.out).toMatch(new RegExp(`default/${id} given back \\(this worker cannot build its flow: node type 'Step' is not registered by its modules \\([^)]*queue-poison-nodes\\.mjs\\)`));
    expect(lacking.out).toContain('left queued 3 runs this worker cannot build (default/lack-1, default/lack-2, default/lack-3)');
    const waiting = await new RunQueue(store).entries({ openOrFailed: true });
    // Claimed once each, given back: no lapse, nothing failed.
    expect(waiting.map((j) => [j.runId, j.state, j.attempts, j.lapses])).toEqual(ids.map((id) => [id, 'queued', 1, 0]));
    for (const job of waiting) expect(job.outcome).toMatch(/^worker \S+ cannot build its flow: node type 'Step' is not registered/);
    // Both at once: each job the lacking worker claims it gives back; the other runs every one.
    const able = start(['worker', '--database-url', url, '--modules', CHAIN_MODULES, '--poll-ms', '50']);
    const again = await cli(['worker', '--database-url', url, '--modules', POISON_MODULES, '--poll-ms', '50', '--exit-when-idle']);
    expect(again.code, again.out).toBe(0);
    expect(again.out).not.toContain('failed');
    for (;;) {
      const [row] = await admin<{ open: string }[]>`select count(*) as open from backpackflow.queue where state <> 'done'`;
      if (Number(row!.open) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    able.child.kill('SIGTERM');
    const ableEnded = await able.ended;
    for (const id of ids) expect(ableEnded.out).toContain(`default/${id} completed`);
    const jobs = await new RunQueue(store).entries();
    expect(jobs.map((j) => [j.runId, j.state, j.outcome, j.lapses])).toEqual(ids.map((id) => [id, 'done', 'completed', 0]));
    const status = await cli(['worker', '--database-url', url, '--status']);
    expect(status.out.trim()).toBe('no queued, running or failed jobs');
  }, 20_000);
});
