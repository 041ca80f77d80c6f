/**
 * Issue 20: a run's stored projection equals a full fold of its log after any sequence of crashes and resumes.
 * Crashes are real SIGKILLs of child processes at random moments, and (for many more cases, quickly) logs cut at
 * random byte offsets, which is what a kill can leave, with the stored projection missing, stale or ahead.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { listRuns, loadRunPoint, resumeRun, runFlow } from '../../src/index.js';
import { EventStore, ProjectionStore, emptyRunMeta, foldRunMetaBatch, writeJsonAtomic, type RunMeta } from '../../src/store/index.js';
import { buildJournalFlow } from './fixtures/journal-flow.js';
import { trials } from '../support/soak.js';
import { linesOf } from '../support/lines.js';

const bundle = await bundledScript(join(import.meta.dirname, 'fixtures', 'child.ts'));
const root = mkdtempSync(join(tmpdir(), 'bpf-projection-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let trialNumber = 0;

const ROUNDS = 12;
const paths = (dataDir: string, runId: string) => {
  const dir = join(dataDir, 'sessions', 'default', 'runs', runId);
  return { events: join(dir, 'events.jsonl'), index: join(dir, 'events.idx.jsonl'), pending: join(dir, 'events.pending'), meta: join(dir, 'projections', 'run.meta.json') };
};

/** The stored projection (the incremental one) and a fresh full fold of the log (generateRunMeta), which is then
 * put back as it was. */
async function storedAndFolded(dataDir: string, runId: string): Promise<{ stored: RunMeta | null; folded: RunMeta; events: number }> {
  const stored = await new ProjectionStore({ dataDir, sessionKey: 'default' }).loadRunMeta(runId);
  const folded = await new ProjectionStore({ dataDir, sessionKey: 'default' }).generateRunMeta(runId);
  // generateRunMeta stores what it folds: put the incremental projection back, so that the next check sees it.
  if (stored === null) unlinkSync(paths(dataDir, runId).meta);
  else await writeJsonAtomic(paths(dataDir, runId).meta, stored);
  const events = (await new EventStore({ dataDir, sessionKey: 'default', runId }).readAll()).length;
  return { stored, folded, events };
}

function startChild(args: string[]): { done: Promise<string>; exited: () => boolean; kill: () => void } {
  const proc = spawn(process.execPath, [bundle, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let closed = false;
  proc.stdout.on('data', (d: Buffer) => (output += d));
  proc.stderr.on('data', (d: Buffer) => (output += d));
  const done = new Promise<string>((resolve) => proc.on('close', () => resolve(output)));
  void done.then(() => (closed = true));
  return { done, exited: () => closed, kill: () => proc.kill('SIGKILL') };
}

const resumable = async (dataDir: string, runId: string) => (await loadRunPoint({ dataDir, runId })).position.length > 0;

describe('run projection after crashes and resumes', () => {
  it('SIGKILLed runs and resumes (real child processes, random kill moments): the projection equals a full fold', async () => {
    let resumedToTheEnd = 0;
    // Each kill: once the child has written `events` events of its own (it is past its start-up; the child's progress,
    // not a fixed time, so that a loaded machine cannot move every kill past the run's end), then `delay` ms later.
    const kill = fc.record({ events: fc.integer({ min: 1, max: 40 }), delay: fc.integer({ min: 0, max: 30 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(kill, { minLength: 2, maxLength: 3 }), async (kills) => {
        const dataDir = join(root, `kill-${trialNumber++}`);
        const runId = 'killed';
        const log = paths(dataDir, runId).events;
        for (const [i, { events, delay }] of kills.entries()) {
          if (i > 0 && !(await resumable(dataDir, runId))) break;
          const killAt = linesOf(log) + events;
          const proc = startChild([i === 0 ? 'run' : 'resume', dataDir, runId, String(ROUNDS), '8']);
          while (linesOf(log) < killAt && !proc.exited()) await new Promise((r) => setTimeout(r, 2));
          await new Promise((r) => setTimeout(r, delay));
          proc.kill();
          await proc.done;
        }
        const resumeHere = await resumable(dataDir, runId);
        if (resumeHere) await resumeRun(buildJournalFlow({ rounds: ROUNDS }), { dataDir, runId, keyframeInterval: 4 });
        const { stored, folded, events } = await storedAndFolded(dataDir, runId);
        expect(folded.eventCount).toBe(events);
        // The incremental projection of a run resumed to its end equals the full fold. (A kill after the last
        // batch may leave the stored file behind: readers bring it up to date, below.)
        if (resumeHere) {
          resumedToTheEnd++;
          expect(stored).toEqual(folded);
        }
        expect(await new ProjectionStore({ dataDir, sessionKey: 'default' }).currentRunMeta(runId)).toEqual(folded);
        // A log that ends 'running' (killed after its last step's batch, before the run's end was recorded, so not
        // resumable here) has no live writer: listings say stopped.
        expect(await listRuns({ dataDir })).toEqual([folded.status === 'running' ? { ...folded, status: 'stopped' } : folded]);
      }),
      // The first trial kills at the first event of each process, so that at least one run is killed mid-run and
      // resumed to its end whatever the machine's speed (random kills of a fast run can all land after its end).
      { numRuns: trials(2, 10), examples: [[[{ events: 1, delay: 0 }, { events: 1, delay: 0 }]]] },
    );
    expect(resumedToTheEnd, 'trials in which a killed run was resumed to its end').toBeGreaterThan(0);
  }, 180_000);

  it('logs cut at random kill points, with the stored projection missing, stale or ahead: resume leaves a projection equal to a full fold', async () => {
    // `storedShare`: the projection left on disk, as of that share of the events before the cut (behind or ahead of it).
    const cut = fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), projection: fc.constantFrom('missing', 'kept', 'stale'), storedShare: fc.double({ min: 0, max: 1, noNaN: true }) });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 6 }), fc.array(cut, { minLength: 1, maxLength: 3 }), async (rounds, cuts) => {
        const dataDir = join(root, `cut-${trialNumber++}`);
        const runId = 'cut';
        const p = paths(dataDir, runId);
        await runFlow(buildJournalFlow({ rounds }), { dataDir, runId, durability: 'never' });
        for (const { at, projection, storedShare } of cuts) {
          const text = readFileSync(p.events, 'utf8');
          // Keep run.started and the start of the record (before them a run is not resumable at all).
          const keep = text.indexOf('\n', text.indexOf('\n') + 1) + 1;
          const before = await new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();
          const stale = foldRunMetaBatch(emptyRunMeta('default', runId), before.slice(0, 1 + Math.floor(storedShare * (before.length - 1))));
          truncateSync(p.events, keep + Math.floor(at * (Buffer.byteLength(text) - keep)));
          // A killed writer leaves its batch marker with no record of the size it closed the log with.
          writeFileSync(p.pending, JSON.stringify({ gen: 1, start: 0, end: 0 }));
          if (existsSync(p.index)) unlinkSync(p.index);
          if (projection === 'missing') unlinkSync(p.meta);
          if (projection === 'stale') await writeJsonAtomic(p.meta, stale);
          // A projection left ahead of the cut log is evidence of a lost tail: resume refuses until it is deleted (the
          // user's act that takes the log as it stands), then goes on.
          const resume = () => resumeRun(buildJournalFlow({ rounds }), { dataDir, runId, durability: 'never' });
          try {
            await resume().catch(async (error: Error) => {
              if (!/records events up to seq \d+, but .*events\.jsonl serves them up to seq \d+: the log was cut or damaged/.test(error.message)) throw error;
              await new ProjectionStore({ dataDir, sessionKey: 'default' }).delete(runId);
              await resume();
            });
          } catch (error) {
            // Only a completed run cannot be resumed (one whose last recorded step ended the flow has its end recorded),
            // or a log cut inside a batch with no batch in flight (not a crash: damage), which the writer refuses to
            // continue, naming the log.
            expect((error as Error).message).toMatch(/already completed|events\.jsonl: the bytes after offset \d+ \(after its last chain hash\) are not covered by the chain/);
          }
          if (!existsSync(p.meta)) await new ProjectionStore({ dataDir, sessionKey: 'default' }).currentRunMeta(runId);
          const { stored, folded, events } = await storedAndFolded(dataDir, runId);
          expect(stored).toEqual(folded);
          expect(folded.eventCount).toBe(events);
        }
      }),
      {
        numRuns: trials(5, 40),
        // Each kind of stored projection, one of them left ahead of the cut log, in every run of the test.
        examples: [[4, [{ at: 0.6, projection: 'kept', storedShare: 0 }, { at: 0.3, projection: 'missing', storedShare: 0 }, { at: 0.5, projection: 'stale', storedShare: 0.4 }]]],
      },
    );
  }, 120_000);
});
