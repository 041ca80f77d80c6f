/**
 * A lock holder in another pid namespace (a container sharing the volume and the host name), run for real under
 * `unshare -rpf --mount-proc` (skipped where that is not allowed): judged by its lease, which it refreshes while it
 * lives, so it keeps its lock however long it holds it; once it is killed, its lock is stale within the lease.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { trials } from '../support/soak.js';
import { inspectLock, systemProbe, tryLock } from '../../src/fs/index.js';
import { tempDir } from './helpers.js';

const canUnshare = spawnSync('unshare', ['-rpf', '--mount-proc', '--kill-child', 'true']).status === 0;
const LEASE_MS = 600;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

it.skipIf(!canUnshare)('a holder in another pid namespace keeps its lock for many leases while it lives, and loses it within a lease once killed', async () => {
  const fixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'hold-lock-lease.ts'));
  const file = join(tempDir(), 'lock');
  // `unshare -f` forks the holder as pid 1 of the new namespace; `--kill-child` kills it when unshare is killed.
  const child = spawn('unshare', ['-rpf', '--mount-proc', '--kill-child', process.execPath, fixture, file, String(LEASE_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const pidInside = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /taken (\d+)/.exec(out);
      if (m !== null) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error(`holder exited: ${out}`)));
  });
  expect(pidInside).toBeLessThan(10);
  const record = JSON.parse(readFileSync(file, 'utf8')) as { pidNs: string; bootId: string };
  expect(record.pidNs).not.toBe(systemProbe.pidNamespace!());
  expect(record.bootId).toBe(systemProbe.bootId());
  // Several leases long (3 in `npm test`, 10 in the soak): held at every look, its mtime refreshed every third of
  // the lease.
  const until = Date.now() + trials(3, 10) * LEASE_MS;
  while (Date.now() < until) {
    expect(tryLock(file, { leaseMs: LEASE_MS })).toMatchObject({ busy: true, reason: 'held', why: expect.stringMatching(/another container/) });
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const killedAt = Date.now();
  let state = inspectLock(file, { leaseMs: LEASE_MS });
  while (state.state === 'held' && Date.now() - killedAt < 3 * LEASE_MS) {
    await new Promise((r) => setTimeout(r, 20));
    state = inspectLock(file, { leaseMs: LEASE_MS });
  }
  expect(state).toMatchObject({ state: 'stale', why: expect.stringMatching(/lease was last refreshed/) });
  expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + 200);
  const lock = tryLock(file, { leaseMs: LEASE_MS });
  expect(lock).not.toHaveProperty('busy');
  if (!('busy' in lock)) lock.release();
}, 20_000);
