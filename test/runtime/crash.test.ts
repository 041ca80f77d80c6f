import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { loadRunPoint } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { buildJournalFlow } from './fixtures/journal-flow.js';
import { trials } from '../support/soak.js';
import { linesOf } from '../support/lines.js';

const bundle = await bundledScript(join(import.meta.dirname, 'fixtures', 'child.ts'));
const root = mkdtempSync(join(tmpdir(), 'bpf-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ROUNDS = 25;
/** Events the flow records in its first ROUNDS / 2 rounds (about 10 a round): the kills land before them. */
const EARLY_EVENTS = 5 * ROUNDS;
const TRIALS = trials(3, 16);
const PARALLEL = 4;

function start(args: string[]): { done: Promise<{ code: number | null; stdout: string; stderr: string }>; kill: () => void } {
  const proc = spawn(process.execPath, [bundle, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d));
  proc.stderr.on('data', (d: Buffer) => (stderr += d));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { done, kill: () => proc.kill('SIGKILL') };
}

/**
 * One trial: run in a child, SIGKILL it at a random moment after the start of its record (once the log holds a random
 * number of the flow's first events, then 0-20 ms later: the child's progress, not a fixed time, so that a loaded
 * machine cannot move the kill past the run's end), resume in another child.
 */
async function trial(index: number): Promise<{ killedMidRun: boolean; state: Record<string, unknown> }> {
  const dataDir = join(root, `trial-${index}`);
  const runId = `crash-${index}`;
  const running = start(['run', dataDir, runId, String(ROUNDS), '2']);
  let exited = false;
  void running.done.then(() => (exited = true));
  // The start of the record is in the log: from then on the run is resumable.
  const log = join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl');
  const startOfRecord = () => existsSync(log) && readFileSync(log, 'utf8').includes('"start":true');
  while (!startOfRecord() && !exited) await new Promise((r) => setTimeout(r, 2));
  const killAt = 2 + Math.floor(Math.random() * EARLY_EVENTS);
  while (linesOf(log) < killAt && !exited) await new Promise((r) => setTimeout(r, 2));
  await new Promise((r) => setTimeout(r, Math.random() * 20));
  running.kill();
  const ran = await running.done;
  expect(ran.stderr, `trial ${index}: the run child failed`).toBe('');
  // Whether the kill came before the end is what the run recorded, not whether the child got to print 'done'.
  const killedMidRun = (await loadRunPoint({ dataDir, runId })).position.length > 0;
  if (killedMidRun) {
    // The log reads back whole: no torn or invalid event, seqs without gaps.
    const events = await new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const resumed = await start(['resume', dataDir, runId, String(ROUNDS), '0']).done;
    expect(resumed.stderr).toBe('');
    expect(resumed.stdout).toMatch(/^done \d+/);
  }
  const point = await loadRunPoint({ dataDir, runId });
  expect(point.position).toEqual([]);
  return { killedMidRun, state: Object.fromEntries(Object.entries(point.state.items).map(([k, v]) => [k, v.value])) };
}

describe('durable runs survive SIGKILL', () => {
  it(`a run killed at random moments and resumed in a new process ends with the uninterrupted backpack (${TRIALS} trials)`, async () => {
    const reference = buildJournalFlow({ rounds: ROUNDS });
    await reference.run();
    const expected = { ...reference.backpack.toObject(), token: '[REDACTED]' };
    const results: Awaited<ReturnType<typeof trial>>[] = [];
    for (let i = 0; i < TRIALS; i += PARALLEL) {
      results.push(...(await Promise.all(Array.from({ length: Math.min(PARALLEL, TRIALS - i) }, (_, j) => trial(i + j)))));
    }
    for (const result of results) expect(result.state).toEqual(expected);
    expect(results.filter((r) => r.killedMidRun).length).toBeGreaterThanOrEqual(TRIALS / 2);
  }, 120_000);
});
