/**
 * Audit s22a M2: a writer killed by SIGKILL leaves its lock. The host name changed since (a container restarted with
 * a new name on the same volume, DHCP, hostnamectl), in the same boot and pid namespace: the lock's pid is still
 * checkable here, so the dead writer's lock is stale. Before, a lock naming another host name was never stale: the
 * run was listed `running` forever and could not be resumed.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { listRuns, resumeRun } from '../../src/index.js';
import { workFlow } from './fixtures/work-flow.js';
import { systemProbe } from '../../src/fs/index.js';
import { bundledScript } from '../support/bundle.js';
import { makeTempDir } from '../support/temp.js';

const child = await bundledScript(join(import.meta.dirname, 'fixtures', 'run-writer.ts'));

const build = workFlow;

it.skipIf(systemProbe.bootId() === undefined)('a dead writer whose lock names an old host name (same boot) is listed stopped, and the run resumes', async () => {
  const dataDir = makeTempDir('bpf-lock-host-', 'test');
  const killed = spawnSync(process.execPath, [child, dataDir, 'host-1', 'kill'], { encoding: 'utf8' });
  expect(killed.signal).toBe('SIGKILL');
  const runDir = join(dataDir, 'sessions', 'default', 'runs', 'host-1');
  const lockPath = join(runDir, 'events.lock');
  expect(readdirSync(runDir)).toContain('events.lock');
  expect((await listRuns({ dataDir }))[0]!.status).toBe('stopped');
  // The host was renamed since; the lock's boot id (and pid namespace) are still this boot's.
  const holder = JSON.parse(readFileSync(lockPath, 'utf8')) as Record<string, unknown>;
  expect(holder['bootId']).toBe(systemProbe.bootId());
  writeFileSync(lockPath, JSON.stringify({ ...holder, host: 'old-container-name' }));
  expect((await listRuns({ dataDir }))[0]!.status).toBe('stopped');
  const resumed = await resumeRun(build(), { dataDir, runId: 'host-1' });
  expect(resumed).toMatchObject({ status: 'completed' });
}, 15_000);
