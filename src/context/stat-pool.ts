import { lstatSync, type Stats } from 'node:fs';
import { Worker } from 'node:worker_threads';

/** Per path, four numbers: kind (0 missing, 1 file, 2 symlink, 3 other, 4 directory), size, mtimeMs, ino. */
export const STAT_FIELDS = 4;

/** lstat of one path into slot `i` of `out`. */
export function statOne(path: string, out: Float64Array, i: number): void {
  const j = i * STAT_FIELDS;
  const st = lstatMissingOk(path);
  if (st === undefined) {
    out[j] = 0;
    return;
  }
  out[j] = st.isFile() ? 1 : st.isSymbolicLink() ? 2 : st.isDirectory() ? 4 : 3;
  out[j + 1] = st.size;
  out[j + 2] = st.mtimeMs;
  out[j + 3] = st.ino;
}

/** lstat, or undefined when nothing is there: no entry, or a component of the path is no longer a directory. */
function lstatMissingOk(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/** Single-threaded lstat of every path, into {@link STAT_FIELDS} numbers per path. */
export const statSerial = async (paths: readonly string[]): Promise<Float64Array> => {
  const out = new Float64Array(paths.length * STAT_FIELDS);
  for (let i = 0; i < paths.length; i++) statOne(paths[i], out, i);
  return out;
};

// A request is NUL-joined paths, or records of a stored tree file (see StoredNodes) whose paths are relative to root.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { lstatSync } = require('node:fs');
function statInto(path, out, j) {
  let st;
  try { st = lstatSync(path, { throwIfNoEntry: false }); } catch (e) { if (e.code !== 'ENOTDIR') throw e; }
  if (st === undefined) { out[j] = 0; return; }
  out[j] = st.isFile() ? 1 : st.isSymbolicLink() ? 2 : st.isDirectory() ? 4 : 3;
  out[j + 1] = st.size; out[j + 2] = st.mtimeMs; out[j + 3] = st.ino;
}
parentPort.on('message', ({ id, joined, records }) => {
  let out;
  let error;
  try {
    if (records !== undefined) {
      const { bytes, starts, root } = records;
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      out = new Float64Array(starts.length * ${STAT_FIELDS});
      for (let i = 0; i < starts.length; i++) {
        const o = starts[i];
        statInto(root + '/' + buf.toString('utf8', o + 5, o + 5 + buf.readUInt32BE(o + 1)), out, i * ${STAT_FIELDS});
      }
    } else {
      const paths = joined.split('\\0');
      out = new Float64Array(paths.length * ${STAT_FIELDS});
      for (let i = 0; i < paths.length; i++) statInto(paths[i], out, i * ${STAT_FIELDS});
    }
  } catch (e) { error = String(e && e.message || e); out = new Float64Array(0); }
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
    return this.request({ joined: joinedPaths });
  }

  /**
   * Stats the records of a stored tree file on the helper thread: `bytes` holds them, `starts` says where each
   * begins, and their paths are relative to `root`. The paths are read on that thread, so this one decodes none.
   */
  statRecordsOnHelper(bytes: Uint8Array, starts: Int32Array, root: string): Promise<Float64Array> {
    if (starts.length === 0) return Promise.resolve(new Float64Array(0));
    return this.request({ records: { bytes, starts, root } });
  }

  private request(message: object): Promise<Float64Array> {
    const worker = this.ensureWorker();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, ...message });
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
