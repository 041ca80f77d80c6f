/**
 * `backpackflow runs resume` of a run whose writer died after its last step but before the run's end (e.g. Ctrl-C on
 * `backpackflow run` at that moment): the run is listed stopped, the resume records its end without running a node
 * again, and every listing then says completed.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { FIXTURES, MODULES, cli, cliJson, tempDir } from './helpers.js';

it('runs resume records the end of a run whose every step is recorded, and runs list then says completed', async () => {
  const dataDir = tempDir();
  const d = ['--data-dir', dataDir];
  const done = await cliJson(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--run-id', 'ended', ...d]);
  expect(done).toMatchObject({ status: 'completed' });
  // The log as the killed writer leaves it: its last step recorded, not the run's end.
  const dir = join(dataDir, 'sessions', 'default', 'runs', 'ended');
  const lines = readFileSync(join(dir, 'events.jsonl'), 'utf8').replace(/\0+$/, '').trimEnd().split('\n');
  expect(lines.at(-1)).toContain('"run.completed"');
  writeFileSync(join(dir, 'events.jsonl'), `${lines.slice(0, -1).join('\n')}\n`);
  rmSync(join(dir, 'events.pending'));
  rmSync(join(dir, 'projections'), { recursive: true, force: true });
  expect((await cliJson(['runs', 'list', ...d]))[0]).toMatchObject({ runId: 'ended', status: 'stopped' });

  const resumed = await cliJson(['runs', 'resume', 'ended', ...d]);
  expect(resumed).toMatchObject({ runId: 'ended', status: 'completed', action: done.action, steps: done.steps });
  const [listed] = await cliJson(['runs', 'list', ...d]);
  expect(listed).toMatchObject({ runId: 'ended', status: 'completed' });
  // No node ran again: the nodes completed are those of the first run, one per step.
  expect(listed.stepCount).toBe(done.steps);
  expect((await cli(['runs', 'resume', 'ended', ...d])).stderr).toMatch(/already completed/);
});
