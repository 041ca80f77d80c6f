import { lstatSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

/** Per path, four numbers: kind (0 missing, 1 file, 2 symlink, 3 other), size, mtimeMs, ino. */
export const STAT_FIELDS = 4;

function statInto(paths: readonly string[], out: Float64Array, from: number, to: number, offset: number): void {
  for (let i = from; i < to; i++) {
    const j = (i - offset) * STAT_FIELDS;
    const st = lstatSync(paths[i], { throwIfNoEntry: false });
    if (st === undefined) {
      out[j] = 0;
      continue;
    }
    out[j] = st.isFile() ? 1 : st.isSymbolicLink() ? 2 : 3;
    out[j + 1] = st.size;
    out[j + 2] = st.mtimeMs;
    out[j + 3] = st.ino;
  }
}

/** lstat of one path into slot `i` of `out`. */
export function statOne(path: string, out: Float64Array, i: number): void {
  statInto([path], out, 0, 1, -i);
}

/** Single-threaded lstat of every path, into {@link STAT_FIELDS} numbers per path. */
export const statSerial = async (paths: readonly string[]): Promise<Float64Array> => {
  const out = new Float64Array(paths.length * STAT_FIELDS);
  statInto(paths, out, 0, paths.length, 0);
  return out;
};

// The worker needs only node:fs, so it runs from source in every runtime (node, tsx, vitest).
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { lstatSync } = require('node:fs');
parentPort.on('message', ({ id, joined }) => {
  const paths = joined.split('\\0');
  const out = new Float64Array(paths.length * ${STAT_FIELDS});
  let error;
  try {
    for (let i = 0; i < paths.length; i++) {
      const j = i * ${STAT_FIELDS};
      const st = lstatSync(paths[i], { throwIfNoEntry: false });
      if (st === undefined) { out[j] = 0; continue; }
      out[j] = st.isFile() ? 1 : st.isSymbolicLink() ? 2 : 3;
      out[j + 1] = st.size; out[j + 2] = st.mtimeMs; out[j + 3] = st.ino;
    }
  } catch (e) { error = String(e && e.message || e); }
  parentPort.postMessage({ id, out, error }, [out.buffer]);
});`;

/**
 * One helper thread for lstat work: a rescan is dominated by one lstat per file, and the kernel serves them in
 * parallel, so the helper stats a share of the files while the calling thread stats the rest. Created on first
 * use; it does not keep the process alive.
 */
export class StatPool {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (out: Float64Array) => void; reject: (error: Error) => void }>();

  /** Starts the helper thread ahead of its first use (it takes a few tens of milliseconds to boot). */
  warm(): void {
    this.ensureWorker();
  }

  /** Stops the helper thread. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }

  /**
   * Stats paths on the helper thread while this thread does other work. The paths come joined by NUL (which no
   * path contains): one long string crosses to the thread far faster than an array of strings.
   */
  statOnHelper(joinedPaths: string): Promise<Float64Array> {
    if (joinedPaths === '') return Promise.resolve(new Float64Array(0));
    const worker = this.ensureWorker();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, joined: joinedPaths });
    });
  }

  private ensureWorker(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.unref();
    worker.on('message', ({ id, out, error }: { id: number; out: Float64Array; error?: string }) => {
      const waiter = this.waiting.get(id);
      this.waiting.delete(id);
      if (this.waiting.size === 0) worker.unref();
      if (error !== undefined) waiter?.reject(new Error(error));
      else waiter?.resolve(out);
    });
    const fail = (error: Error) => {
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
      if (this.worker === worker) this.worker = undefined;
    };
    worker.on('error', fail);
    worker.on('exit', () => fail(new Error('stat helper thread exited')));
    this.worker = worker;
    return worker;
  }
}
