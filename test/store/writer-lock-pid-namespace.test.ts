/**
 * Audit s22a M3: a writer in another pid namespace with the same host name (containers given one host name,
 * Kubernetes pods with hostNetwork on one node, `--uts=host`) sharing the data directory. Its pid means nothing in
 * the reader's namespace, so it is judged by its lease (the lock file's mtime, which it refreshes while it lives),
 * never by that pid: its run is listed `running`, a resume elsewhere is refused, and the log keeps one history.
 * The writer really runs under `unshare -rpf --mount-proc`; skipped where that is not allowed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { LockError, listRuns, resumeRun, verifyRun } from '../../src/index.js';
import { workFlow } from './fixtures/work-flow.js';
import { inspectLock, systemProbe } from '../../src/fs/index.js';
import { bundledScript } from '../support/bundle.js';
import { makeTempDir } from '../support/temp.js';

const child = await bundledScript(join(import.meta.dirname, 'fixtures', 'run-writer.ts'));
const canUnshare = spawnSync('unshare', ['-rpf', '--mount-proc', 'true']).status === 0;

const build = workFlow;

it.skipIf(!canUnshare)('a live writer in another pid namespace (same host name) is listed running and keeps its run', async () => {
  const dataDir = makeTempDir('bpf-lock-ns-', 'test');
  const proc = spawn('unshare', ['-rpf', '--mount-proc', process.execPath, child, dataDir, 'ns-1', 'hold'], {
    // It holds the run until the checks below are done and the test releases it (15 s at most, should the test die).
    env: { ...process.env, HOLD_MS: '15000' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  const holding = new Promise<void>((resolve) => {
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('holding')) resolve();
    });
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  await holding;
  try {
    // Inside its namespace the writer is pid 1 or 2: a pid that names another process here, or none.
    const pidInside = Number(/holding (\d+)/.exec(out)![1]);
    expect(pidInside).toBeLessThan(10);
    expect((await listRuns({ dataDir }))[0]!.status).toBe('running');
    const second = await resumeRun(build(), { dataDir, runId: 'ns-1' }).then((r) => r.status, (e: unknown) => e);
    expect(second).toBeInstanceOf(LockError);
    expect((second as Error).message).toMatch(/judged live: .*lease was refreshed .* ago \(stale after 30 s without one\)/);
    const lock = join(dataDir, 'sessions', 'default', 'runs', 'ns-1', 'events.lock');
    const holder = JSON.parse(readFileSync(lock, 'utf8')) as { pidNs?: string };
    expect(holder.pidNs).toMatch(/^pid:\[\d+\]$/);
    expect(holder.pidNs).not.toBe(systemProbe.pidNamespace!());
    expect(inspectLock(lock)).toMatchObject({ state: 'held', why: expect.stringMatching(/pid namespace .*not checkable by pid here: its lease was refreshed/) });
  } finally {
    proc.stdin.end('release\n');
    await exited;
  }
  expect(out.trim().split('\n').at(-1)).toMatch(/"status":"completed"/);
  const report = await verifyRun({ dataDir, runId: 'ns-1' });
  expect(report.ok).toBe(true);
  const log = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'ns-1', 'events.jsonl'), 'utf8');
  expect(log.split('\n').filter((l) => l.includes('"type":"run.completed"'))).toHaveLength(1);
  expect((await listRuns({ dataDir }))[0]!.status).toBe('completed');
}, 20_000);
