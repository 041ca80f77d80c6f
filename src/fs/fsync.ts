import { fdatasync, fdatasyncSync, fsync, fsyncSync } from 'node:fs';

/**
 * What the fsync calls return when the sync is done and there is nothing to wait for: one shared resolved promise,
 * so that a caller can tell (by identity) and go on without waiting a turn of the event loop.
 */
export const DONE: Promise<void> = Promise.resolve();

/**
 * How an fsync is made: on the event loop (the direct system call) or through the thread pool. The caller waits for
 * it either way; what differs is whether the event loop waits too. Through the pool, other work of the process goes
 * on meanwhile (several runs' fsyncs overlap), at the cost of a thread hand-off each way, 100-400 µs on these
 * machines when the pool's threads sleep: measured on this project's CI disk, a step with the direct call costs
 * 0.70-0.75x the wall time of one through the pool (`BENCH_ONLY=runtime npx tsx bench/store.bench.ts`). So the
 * call is direct only while it cannot hold anything up for long: one run's log writer is open in this process,
 * whatever its durability ({@link runWriterOpened}: a second run, even one that never syncs, has work of its own
 * that a direct fsync would hold up), and the last fsync took under {@link QUICK_FSYNC_MS} ms, failed or not (a
 * slow disk switches to the pool until a pooled one is quick again). Many runs in one process (a worker's slots, a
 * server) use the pool; so do atomic writes of more than {@link DIRECT_SYNC_MAX_BYTES} (see fs/atomic.ts). Exported
 * for tests only (src/fs/index.ts does not export it).
 */
export const policy = { openWriters: 0, quick: true };
const QUICK_FSYNC_MS = 1;

/**
 * The largest file whose fsync an atomic write may make directly (under the policy above): a run's projection or a
 * memory item, a few kilobytes. The fsync of a larger file takes longer in proportion (about 9 ms for 16 MB on
 * this project's disks), which the event loop must not wait for.
 */
export const DIRECT_SYNC_MAX_BYTES = 64 * 1024;

/** Counts a run's log writer as open, for the policy above (any durability). Call {@link runWriterClosed} once for each. */
export function runWriterOpened(): void {
  policy.openWriters++;
}

/** Counts it as closed again (see {@link runWriterOpened}). */
export function runWriterClosed(): void {
  policy.openWriters--;
}

/**
 * fdatasync (`'data'`) or fsync (`'all'`) of `fd`, direct or through the thread pool as the policy above says;
 * returns {@link DONE} when it was direct and succeeded.
 */
export function syncDescriptor(fd: number, what: 'data' | 'all'): Promise<void> {
  const start = performance.now();
  if (policy.openWriters === 1 && policy.quick) {
    try {
      if (what === 'data') fdatasyncSync(fd);
      else fsyncSync(fd);
    } catch (error) {
      return Promise.reject(error);
    } finally {
      policy.quick = performance.now() - start < QUICK_FSYNC_MS;
    }
    return DONE;
  }
  const timed = (): void => {
    policy.quick = performance.now() - start < QUICK_FSYNC_MS;
  };
  return syncOnPool(fd, what).then(timed, (error: unknown) => {
    timed();
    throw error;
  });
}

/** fdatasync or fsync of `fd` through the thread pool, whatever the policy says (writes nothing waits for). */
export function syncOnPool(fd: number, what: 'data' | 'all'): Promise<void> {
  return new Promise((resolve, reject) => (what === 'data' ? fdatasync : fsync)(fd, (error) => (error ? reject(error) : resolve())));
}
