/**
 * A writer whose lease ran out while it could not refresh it (its event loop blocked, its process suspended) may
 * have lost its run to a process that judges it by that lease (another host, boot or pid namespace), which then took
 * the lock over. The old writer finds out at its next write (FileLock.confirm) and writes nothing more: not the
 * step, not its failure, not the end-of-log marker or the cut of its reserved space on close, not its projection.
 * The takeover is simulated as it happens: the clock moves past the lease with no refresh (Date.now), and the lock
 * file is replaced by another holder's record, as the other process's tryLock does after judging the lock stale.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { BackpackNode, EventStore, Flow, LockError, runFlow, type BackpackHandle } from '../../src/index.js';
import { FileRunStore } from '../../src/store/index.js';
import { runPaths } from '../../src/store/paths.js';
import { makeTempDir } from '../support/temp.js';

const LEASE_MS = 30_000;

afterEach(() => {
  vi.restoreAllMocks();
});

/** Moves this process's clock `ms` ahead, as a blocked event loop sees it when it wakes (no refresh ran meanwhile). */
function clockAhead(ms: number): void {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => real() + ms);
}

/** The lock file as another host's process leaves it after recovering it from this one (see tryLock). */
function takeOverLock(lockPath: string): string {
  const record = JSON.stringify({ pid: 4242, host: 'other-host', createdAt: Date.now(), token: 'b0b0b0b0b0b0b0b0' });
  writeFileSync(lockPath, record);
  return record;
}

function event(seq: number, type = 'custom') {
  return { v: 1 as const, id: `ev-${seq}`, seq, timestamp: 1_700_000_000_000 + seq, runId: 'r', type, payload: { n: seq } } as never;
}

it('a writer that lost its lock after its lease ran out refuses to append, and leaves the files to the new holder on close', async () => {
  const dataDir = makeTempDir('bpf-lock-lost-', 'test');
  const paths = runPaths(dataDir, 'default', 'r');
  const store = new EventStore({ dataDir, sessionKey: 'default', runId: 'r', durability: 'batch' });
  await store.appendBatch([event(1, 'run.started'), event(2)]);
  const record = takeOverLock(paths.lock);
  // What the new holder wrote since it took over (it continues the log): the old writer must not touch it.
  const logBefore = readFileSync(paths.events);
  const markerBefore = readFileSync(paths.pendingBatch);
  const sizeBefore = statSync(paths.events).size;
  clockAhead(LEASE_MS + 10_000);
  const refused = await store.appendBatch([event(3), event(4)]).then(() => 'appended', (error: unknown) => error);
  expect(refused).toBeInstanceOf(LockError);
  expect((refused as Error).message).toMatch(/no longer holds .*events\.lock: pid 4242 on other-host since .* holds it now\. Its lease ran out/);
  expect(store.lockLost).toBe(true);
  // Refused for good, even once the clock is back.
  vi.restoreAllMocks();
  await expect(store.appendBatch([event(3)])).rejects.toBeInstanceOf(LockError);
  await store.close();
  expect(readFileSync(paths.events).equals(logBefore)).toBe(true);
  expect(statSync(paths.events).size).toBe(sizeBefore);
  expect(readFileSync(paths.pendingBatch).equals(markerBefore)).toBe(true);
  expect(readFileSync(paths.lock, 'utf8')).toBe(record);
});

it('a writer whose lease ran out but whose lock is still its own refreshes the lease and goes on', async () => {
  const dataDir = makeTempDir('bpf-lock-kept-', 'test');
  const paths = runPaths(dataDir, 'default', 'r');
  const store = new EventStore({ dataDir, sessionKey: 'default', runId: 'r', durability: 'never' });
  await store.appendBatch([event(1, 'run.started'), event(2)]);
  const mtimeBefore = statSync(paths.lock).mtimeMs;
  clockAhead(LEASE_MS + 10_000);
  await store.appendBatch([event(3), event(4)]);
  expect(store.lockLost).toBe(false);
  // The lease was refreshed at the clock the process now reads, so a judge by lease sees it fresh.
  expect(statSync(paths.lock).mtimeMs).toBeGreaterThan(mtimeBefore + LEASE_MS);
  vi.restoreAllMocks();
  await store.close();
  expect(readFileSync(paths.events, 'utf8').trim().split('\n')).toHaveLength(4);
});

it('a run whose writer lost its lock mid-run fails with a LockError, and writes neither that step, nor its failure, nor its projection', async () => {
  const dataDir = makeTempDir('bpf-lock-lost-run-', 'test');
  const paths = runPaths(dataDir, 'default', 'stalled');
  let snapshot: { log: Buffer; marker: Buffer; meta: Buffer | undefined } | undefined;
  class Stall extends BackpackNode {
    override exec(): string {
      // Step 2: the node blocks for longer than the lease; meanwhile another host's worker took the run over.
      takeOverLock(paths.lock);
      let meta: Buffer | undefined;
      try {
        meta = readFileSync(paths.runMeta);
      } catch {
        meta = undefined;
      }
      snapshot = { log: readFileSync(paths.events), marker: readFileSync(paths.pendingBatch), meta };
      clockAhead(LEASE_MS + 5_000);
      return 'late';
    }
    override post(backpack: BackpackHandle, _prep: unknown, result: unknown): undefined {
      backpack.pack('late', result);
      return undefined;
    }
  }
  class First extends BackpackNode {
    override post(backpack: BackpackHandle): string {
      backpack.pack('first', 1);
      return 'next';
    }
  }
  const flow = new Flow({ namespace: 'lease' });
  const first = flow.addNode(First, { id: 'first' });
  first.on('next', flow.addNode(Stall, { id: 'stall' }));
  const outcome = await runFlow(flow, { dataDir, runId: 'stalled' }).then((r) => r.status, (error: unknown) => error);
  expect(outcome).toBeInstanceOf(LockError);
  expect((outcome as Error).message).toMatch(/no longer holds/);
  expect(snapshot).toBeDefined();
  // Not one byte of the old writer after the takeover: the step, its run.failed, the end-of-log marker, the projection.
  expect(readFileSync(paths.events).equals(snapshot!.log)).toBe(true);
  expect(readFileSync(paths.pendingBatch).equals(snapshot!.marker)).toBe(true);
  const metaNow = (() => {
    try {
      return readFileSync(paths.runMeta);
    } catch {
      return undefined;
    }
  })();
  expect(metaNow === undefined ? undefined : metaNow.toString()).toBe(snapshot!.meta?.toString());
  expect(readFileSync(paths.events, 'utf8')).not.toContain('"late"');
  expect(JSON.parse(readFileSync(paths.lock, 'utf8'))).toMatchObject({ host: 'other-host' });
});

it('a writer that finds the loss only when it closes (no write came after the lease ran out) leaves the projection to the new holder (review s24, finding 4)', async () => {
  const dataDir = makeTempDir('bpf-lock-lost-close-', 'test');
  const paths = runPaths(dataDir, 'default', 'r');
  const writer = await new FileRunStore(dataDir).openWriter({ sessionKey: 'default', runId: 'r' }, { fresh: true });
  await writer.commit([event(1, 'run.started'), event(2)]);
  takeOverLock(paths.lock);
  const theirs = JSON.stringify({ written: 'by the new holder' });
  mkdirSync(dirname(paths.runMeta), { recursive: true });
  writeFileSync(paths.runMeta, theirs);
  clockAhead(LEASE_MS + 10_000);
  await writer.close();
  expect(readFileSync(paths.runMeta, 'utf8')).toBe(theirs);
});

it('a writer that lost its lock writes no keyframe and no run document: they fail with a LockError (review s24, finding 4)', async () => {
  const dataDir = makeTempDir('bpf-lock-lost-files-', 'test');
  const paths = runPaths(dataDir, 'default', 'r');
  const writer = await new FileRunStore(dataDir).openWriter({ sessionKey: 'default', runId: 'r' }, { fresh: true });
  await writer.commit([event(1, 'run.started'), event(2)]);
  const keyframe = writer.takeKeyframe({ step: 7, createdAt: Date.now(), position: ['a'], state: { items: {} } } as never);
  takeOverLock(paths.lock);
  clockAhead(LEASE_MS + 10_000);
  await expect(keyframe.write()).rejects.toBeInstanceOf(LockError);
  await expect(writer.saveDocument('flow', { nodes: [] })).rejects.toBeInstanceOf(LockError);
  vi.restoreAllMocks();
  await writer.close();
  expect(existsSync(`${paths.checkpointDir}/7.json`)).toBe(false);
  expect(existsSync(paths.runMeta)).toBe(false);
});

it('a lock record whose createdAt no Date holds is read as unknown: the lost writer still gets its LockError, and runs show describes the writer (review s24, finding 5)', async () => {
  const dataDir = makeTempDir('bpf-lock-bad-date-', 'test');
  const paths = runPaths(dataDir, 'default', 'r');
  const store = new EventStore({ dataDir, sessionKey: 'default', runId: 'r', durability: 'batch' });
  await store.appendBatch([event(1, 'run.started')]);
  writeFileSync(paths.lock, JSON.stringify({ pid: 4242, host: 'other-host', createdAt: 1e300, token: 'b0b0b0b0b0b0b0b0' }));
  await expect(new FileRunStore(dataDir).describeWriter({ sessionKey: 'default', runId: 'r' })).resolves.toMatch(/pid 4242 on other-host/);
  clockAhead(LEASE_MS + 10_000);
  const refused = await store.appendBatch([event(2)]).then(() => 'appended', (error: unknown) => error);
  expect(refused).toBeInstanceOf(LockError);
  expect(store.lockLost).toBe(true);
  vi.restoreAllMocks();
  await store.close();
});
