/**
 * Audit findings 8 and 9 through real recorded runs: `runs show`, `runs list` (text and --json) and the studio's API
 * give the same DESIGN D16 status word for a live, a killed, a completed, a failed and a waiting run, and a run whose
 * writer was killed counts that segment up to its last recorded event, shown as a lower bound ("≥").
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resumeRun } from '../../src/index.js';
import type { StreamEvent } from '../../src/events/index.js';
import { EventStore } from '../../src/store/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { bundledScript } from '../support/bundle.js';
import { linesOf } from '../support/lines.js';
import { buildJournalFlow } from '../runtime/fixtures/journal-flow.js';
import { get, startGatedRun, type GatedRun } from '../studio/helpers.js';
import { FIXTURES, MODULES, cli, cliJson, tempDir } from './helpers.js';

const child = await bundledScript(join(import.meta.dirname, '..', 'runtime', 'fixtures', 'child.ts'));
const dataDir = tempDir();
const d = ['--data-dir', dataDir];
const logOf = (runId: string): string => join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl');
const eventsOf = (runId: string): Promise<StreamEvent[]> => new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();

/** Starts the journal flow in a child process and SIGKILLs it once its log has `lines` lines. */
async function killedRun(runId: string, lines: number): Promise<void> {
  const proc = spawn(process.execPath, [child, 'run', dataDir, runId, '60', '20'], { stdio: 'ignore' });
  const closed = new Promise((resolve) => proc.on('close', resolve));
  while (linesOf(logOf(runId)) < lines) await new Promise((r) => setTimeout(r, 10));
  proc.kill('SIGKILL');
  await closed;
}

let studio: StudioServer;
let live: GatedRun;
const expected: Record<string, string> = { done: 'completed', bad: 'failed', ask: 'waiting', live: 'running', killed: 'stopped', cut: 'completed' };

beforeAll(async () => {
  await cliJson(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--run-id', 'done', ...d]);
  await cli(['run', join(FIXTURES, 'failing.json'), '--modules', MODULES, '--run-id', 'bad', ...d]);
  await cliJson(['run', '--flow-module', `${join(FIXTURES, 'approval.mjs')}#buildApprovalFlow`, '--run-id', 'ask', ...d]);
  await killedRun('killed', 30);
  await killedRun('cut', 30);
  // The killed run resumed to its end: its first segment recorded no end.
  await resumeRun(buildJournalFlow({ rounds: 60, delayMs: 0 }), { dataDir, runId: 'cut', keyframeInterval: 4 });
  live = startGatedRun(dataDir, 'live');
  await live.waiting;
  studio = await startStudio({ dataDir, port: 0, tail: { pollMs: 50 } });
}, 60_000);

afterAll(async () => {
  live?.release();
  await live?.running;
  await studio?.close();
});

describe('one status word per run in every reader (finding 8)', () => {
  it('runs list, runs show (text and --json) and the studio API agree, in D16 words', async () => {
    const listed = await cliJson<Array<{ runId: string; status: string }>>(['runs', 'list', ...d]);
    const listText = (await cli(['runs', 'list', ...d])).stdout;
    const studioRuns = (await get(studio.port, '/api/runs')).json.runs as Array<{ runId: string; status: string }>;
    for (const [runId, status] of Object.entries(expected)) {
      expect(listed.find((r) => r.runId === runId)?.status, `runs list --json ${runId}`).toBe(status);
      expect(listText.split('\n').find((line) => line.startsWith(`${runId} `)), `runs list ${runId}`).toContain(` ${status} `);
      expect((await cliJson(['runs', 'show', runId, ...d])).status, `runs show --json ${runId}`).toBe(status);
      const shown = (await cli(['runs', 'show', runId, ...d])).stdout;
      expect(shown.split('\n')[0], `runs show ${runId}`).toContain(` ${status}`);
      expect(shown).not.toContain('incomplete');
      // Only a live run names who writes it, and why that writer is judged live.
      if (status === 'running') {
        expect(shown).toMatch(/written by pid \d+ on .* \(pid \d+ is alive and started when the lock records\)/);
        expect((await cliJson<{ writer?: string }>(['runs', 'show', runId, ...d])).writer).toMatch(/^pid \d+ on /);
      } else expect(shown).not.toContain('written by');
      expect(studioRuns.find((r) => r.runId === runId)?.status, `studio /api/runs ${runId}`).toBe(status);
      expect((await get(studio.port, `/api/runs/${runId}`)).json.meta.status, `studio run ${runId}`).toBe(status);
      const trace = (await get(studio.port, `/api/runs/${runId}/trace`)).json;
      expect(trace.status, `studio trace ${runId}`).toBe(status);
      expect((await get(studio.port, `/api/runs/${runId}/trace?limit=5`)).json.status, `studio trace page ${runId}`).toBe(status);
    }
  });
});

describe('the duration of a run whose writer was killed (finding 9)', () => {
  /** Segments as the log tells them: each from its run.started to its end, or to the last event before the next. */
  async function fromLog(runId: string): Promise<{ ms: number; cut: boolean }> {
    const events = await eventsOf(runId);
    let ms = 0;
    let cut = false;
    let start: number | undefined;
    let last = 0;
    for (const event of events) {
      if (event.type === 'run.started') {
        if (start !== undefined) {
          ms += last - start;
          cut = true;
        }
        start = event.timestamp;
      }
      last = event.timestamp;
      if (['run.completed', 'run.failed', 'run.waiting'].includes(event.type) && start !== undefined) {
        ms += event.timestamp - start;
        start = undefined;
      }
    }
    if (start !== undefined) {
      ms += last - start;
      cut = true;
    }
    return { ms, cut };
  }

  it('counts a killed segment up to its last recorded event, and every reader marks the total as a lower bound', async () => {
    const listed = await cliJson<Array<{ runId: string; durationMs: number }>>(['runs', 'list', ...d]);
    const listText = (await cli(['runs', 'list', ...d])).stdout;
    for (const runId of ['cut', 'killed']) {
      const truth = await fromLog(runId);
      expect(truth.cut).toBe(true);
      const meta = listed.find((r) => r.runId === runId)!;
      expect(meta.durationMs, runId).toBe(truth.ms);
      const shown = await cliJson(['runs', 'show', runId, ...d]);
      expect(shown).toMatchObject({ durationMs: truth.ms, durationLowerBound: true });
      expect(listText.split('\n').find((line) => line.startsWith(`${runId} `))).toMatch(/≥ \d/);
      expect((await cli(['runs', 'show', runId, ...d])).stdout.split('\n')[0]).toMatch(/· ≥ \d/);
      const run = (await get(studio.port, `/api/runs/${runId}`)).json;
      expect(run).toMatchObject({ meta: { durationMs: truth.ms }, durationLowerBound: true });
      expect((await get(studio.port, `/api/runs/${runId}/trace`)).json).toMatchObject({ durationMs: truth.ms, durationLowerBound: true });
    }
    const cut = await cliJson(['runs', 'show', 'cut', ...d]);
    expect(cut.segments.map((s: { outcome: string; ended: boolean }) => [s.outcome, s.ended])).toEqual([['stopped', false], ['completed', true]]);
  });

  it('a run whose every segment ended has an exact duration', async () => {
    for (const runId of ['done', 'bad', 'ask']) {
      const truth = await fromLog(runId);
      expect(truth.cut).toBe(false);
      const shown = await cliJson(['runs', 'show', runId, ...d]);
      expect(shown).toMatchObject({ durationMs: truth.ms, durationLowerBound: false });
      expect((await get(studio.port, `/api/runs/${runId}`)).json.durationLowerBound).toBe(false);
      expect((await cli(['runs', 'show', runId, ...d])).stdout).not.toContain('≥');
    }
  });
});
