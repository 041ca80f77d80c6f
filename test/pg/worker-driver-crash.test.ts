/**
 * A worker process in which the `postgres` driver throws its TypeError on a killed connection from an immediate
 * (`nextWrite` on a null socket, porsager/postgres #1154 and #1208: uncaught, out of every await) does not die: the run
 * in hand is stopped and given back, and resumed to completion with each step recorded once. An unrelated uncaught
 * TypeError still ends the process, as it would without the worker's guard.
 *
 * The driver's bug cannot be triggered at will, so the fixture's node throws, uncaught, a TypeError with the driver's
 * frames (fixtures/driver-crash-nodes.ts); the worker and the database are real.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { documentCollector } from '../../src/cli/backpackflow/recipe.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { RunQueue } from '../../src/store/postgres/queue.js';
import { freshDatabase } from '../support/pg.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const MODULES = join(FIXTURES, 'driver-crash-nodes.ts');

/** Runs a worker process until the queue is empty (or it dies): its exit code and output. */
function worker(url: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'run-worker.ts'), url, MODULES], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

describe('a worker in which the driver throws on a killed connection', () => {
  let url: string;
  let drop: () => Promise<void>;
  let store: PostgresRunStore;
  const dir = mkdtempSync(join(tmpdir(), 'bf-driver-crash-'));

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    store = new PostgresRunStore({ url });
  });
  afterAll(async () => {
    await store.close();
    await drop();
  });

  async function enqueue(runId: string, kind: 'driver' | 'other'): Promise<void> {
    const params = { steps: 6, at: 3, marker: join(dir, runId), kind };
    const config = { version: '2.0.0', namespace: 'crash', nodes: [{ id: 'step', type: 'CrashStep', params }], edges: [{ from: 'step', to: 'step', condition: 'again' }] };
    const collected = documentCollector();
    await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [MODULES] }, config);
    await new RunQueue(store).enqueue({ sessionKey: 'default', runId }, 'start', {}, collected.documents);
  }

  it('survives: the run in hand is given back and resumed to completion, each step recorded once', async () => {
    await enqueue('survives', 'driver');
    const { code, out, err } = await worker(url);
    expect(err).toMatch(/the database driver failed on a lost connection \(Cannot read properties of null \(reading 'write'\)\): the runs in hand are stopped and given back/);
    expect(out).toMatch(/default\/survives .*given back.* \(the database connection was lost/);
    expect(out).toMatch(/default\/survives .*completed/);
    expect(code).toBe(0);
    const ref = { sessionKey: 'default', runId: 'survives' };
    expect((await store.currentRunMeta(ref)).status).toBe('completed');
    expect((await store.verifyLog(ref)).ok).toBe(true);
    const steps: number[] = [];
    for await (const { event } of store.readVerified(ref)) if (event.type === 'checkpoint.saved') steps.push((event.payload as { step: number }).step);
    expect(steps).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('an unrelated uncaught TypeError still ends the process', async () => {
    await enqueue('programming-error', 'other');
    const { code, err } = await worker(url);
    expect(code).toBe(1);
    expect(err).toMatch(/TypeError: Cannot read properties of null \(reading 'write'\)\n\s+at .*driver-crash-nodes\.ts/);
  });
});
