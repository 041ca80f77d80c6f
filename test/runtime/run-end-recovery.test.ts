/**
 * A run whose writer died after its last step but before `run.completed` (a SIGKILL, the OOM killer, Ctrl-C on
 * `backpackflow run`) has every step recorded: it is listed `stopped`, and resuming it records its end (completed,
 * with the action its last step recorded) without running any node again.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listRuns, resumeRun, runFlow } from '../../src/index.js';
import { bundledScript } from '../support/bundle.js';
import { makeTempDir } from '../support/temp.js';
import { buildWorkFlow } from './fixtures/work-flow.js';

const child = await bundledScript(join(import.meta.dirname, 'fixtures', 'run-end-child.ts'));

const eventsOf = (dataDir: string, runId: string): string => join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl');
const typesOf = (dataDir: string, runId: string): string[] =>
  readFileSync(eventsOf(dataDir, runId), 'utf8')
    .replace(/\0+$/, '')
    .trimEnd()
    .split('\n')
    .map((line) => (JSON.parse(line) as { type: string }).type);

describe('a run whose end was not recorded', () => {
  it('killed after its last step: listed stopped, and resuming it records its end, no node running again', async () => {
    const dataDir = makeTempDir('run-end-', 'file');
    const killed = spawnSync(process.execPath, [child, dataDir, 'end-1'], { encoding: 'utf8' });
    expect(killed.signal).toBe('SIGKILL');
    expect(typesOf(dataDir, 'end-1').at(-1)).toBe('checkpoint.saved');
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ runId: 'end-1', status: 'stopped' });

    const runs = { count: 0 };
    const before = typesOf(dataDir, 'end-1').length;
    await expect(resumeRun(buildWorkFlow(runs), { dataDir, runId: 'end-1' })).resolves.toMatchObject({ status: 'completed', action: 'finished', steps: 1 });
    expect(runs.count).toBe(0);
    expect(typesOf(dataDir, 'end-1').slice(before)).toEqual(['run.started', 'run.completed']);
    const [meta] = await listRuns({ dataDir });
    expect(meta).toMatchObject({ status: 'completed', lastStep: 1 });
    expect(meta!.segments!.map((segment) => segment.outcome)).toEqual([undefined, 'completed']);
    await expect(resumeRun(buildWorkFlow(runs), { dataDir, runId: 'end-1' })).rejects.toThrow(/already completed/);
  }, 20_000);

  it('with a keyframe at its last step, and its last line cut: its end is recorded with the action of that step', async () => {
    const dataDir = makeTempDir('run-end-', 'test');
    const runs = { count: 0 };
    await runFlow(buildWorkFlow(runs), { dataDir, runId: 'end-2', keyframeInterval: 1 });
    // As a writer killed between its last step and its end leaves the log: without the run's end.
    const dir = join(dataDir, 'sessions', 'default', 'runs', 'end-2');
    const lines = readFileSync(eventsOf(dataDir, 'end-2'), 'utf8').replace(/\0+$/, '').trimEnd().split('\n');
    expect(lines.at(-1)).toContain('"run.completed"');
    writeFileSync(eventsOf(dataDir, 'end-2'), `${lines.slice(0, -1).join('\n')}\n`);
    rmSync(join(dir, 'events.pending'));
    rmSync(join(dir, 'projections'), { recursive: true, force: true });
    expect((await listRuns({ dataDir }))[0]!.status).toBe('stopped');

    // An answer is refused: the run waits for none.
    await expect(resumeRun(buildWorkFlow(runs), { dataDir, runId: 'end-2', resume: true })).rejects.toThrow(/is stopped, not waiting for an answer/);
    await expect(resumeRun(buildWorkFlow(runs), { dataDir, runId: 'end-2' })).resolves.toMatchObject({ status: 'completed', action: 'finished', steps: 1 });
    expect(runs.count).toBe(1);
    expect((await listRuns({ dataDir }))[0]!.status).toBe('completed');
  });
});
