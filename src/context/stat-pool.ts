import { lstatSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** Per path, four numbers: kind (0 missing, 1 file, 2 symlink, 3 other, 4 directory), size, mtimeMs, ino. */
export const STAT_FIELDS = 4;

/** Node's own lstat binding: the numbers of a stat (see {@link verifiedBindingLstat}), undefined when nothing is there. */
type BindingLstat = (path: string | Buffer, bigint: false, request: undefined, throwIfNoEntry: false) => Float64Array | undefined;

/**
 * lstat of one path into slot `i` of `out`: through Node's binding when it passed its check, else `fs.lstatSync`.
 * The path is a string or its UTF-8 bytes (a buffer can be reused from one call to the next; a string is made anew).
 */
export function statOne(path: string | Buffer, out: Float64Array, i: number): void {
  const binding = bindingLstat();
  if (binding !== null) statByBinding(binding, path, out, i * STAT_FIELDS);
  else statByStats(path, out, i * STAT_FIELDS);
}

let fastLstat: BindingLstat | null | undefined;

/** The verified binding of this thread (checked on first use), or null. */
function bindingLstat(): BindingLstat | null {
  return fastLstat === undefined ? (fastLstat = verifiedBindingLstat() ?? null) : fastLstat;
}

/**
 * The fields of Node's stat array this module reads (mode, ino, size, mtime seconds and nanoseconds), and the
 * kind code of each file type.
 */
const MODE = 1;
const INO = 7;
const SIZE = 8;
const MTIME_SEC = 12;
const MTIME_NSEC = 13;
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;

function statByBinding(binding: BindingLstat, path: string | Buffer, out: Float64Array, j: number): void {
  let st: Float64Array | undefined;
  try {
    st = binding(path, false, undefined, false);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') st = undefined;
    else throw error;
  }
  if (st === undefined) {
    out[j] = 0;
    return;
  }
  const type = st[MODE]! & S_IFMT;
  out[j] = type === S_IFREG ? 1 : type === S_IFLNK ? 2 : type === S_IFDIR ? 4 : 3;
  out[j + 1] = st[SIZE]!;
  // The same arithmetic as Node's Stats.mtimeMs, so the numbers equal those a Stats gives (and the stored ones).
  out[j + 2] = st[MTIME_SEC]! * 1e3 + st[MTIME_NSEC]! / 1e6;
  out[j + 3] = st[INO]!;
}

function statByStats(path: string | Buffer, out: Float64Array, j: number): void {
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

/**
 * Node's internal lstat (`process.binding('fs').lstat`), when it can be trusted here; otherwise undefined and
 * `fs.lstatSync` serves. A rescan is one lstat per file, and `fs.lstatSync` spends about as long building each
 * `Stats` object (its dates included) as the kernel spends on the call; the binding hands back the numbers alone.
 * It is an undocumented interface, so it is used only when it answers exactly as `fs.lstatSync` does for a file (by
 * name and by bytes), a directory, a missing path and a path through a file (checked once per thread), on POSIX,
 * and not under the permission model (whose checks live in `fs.lstatSync`) or `--pending-deprecation` (which would
 * print a warning). Its callers pass no path with a NUL byte (`fs.lstatSync` refuses those; the binding would cut
 * the path there): the tree file refuses them, and names read from a directory cannot hold one.
 */
export function verifiedBindingLstat(): BindingLstat | undefined {
  const proc = process as NodeJS.Process & { permission?: unknown; binding?: (name: string) => unknown };
  if (process.platform === 'win32' || proc.permission !== undefined || typeof proc.binding !== 'function') return undefined;
  if (process.execArgv.includes('--pending-deprecation') || /--pending-deprecation/.test(process.env.NODE_OPTIONS ?? '') || process.env.NODE_PENDING_DEPRECATION === '1') {
    return undefined;
  }
  try {
    const lstat = (proc.binding('fs') as { lstat?: unknown }).lstat;
    if (typeof lstat !== 'function') return undefined;
    const binding = lstat as BindingLstat;
    const file = fileURLToPath(import.meta.url);
    const dir = dirname(file);
    const a = new Float64Array(STAT_FIELDS);
    const b = new Float64Array(STAT_FIELDS);
    for (const path of [file, dir, `${file}.absent-${process.pid}`, `${file}/not-a-directory`, Buffer.from(file)]) {
      statByBinding(binding, path, a, 0);
      statByStats(path, b, 0);
      if (a[0] !== b[0] || (b[0] !== 0 && (a[1] !== b[1] || a[2] !== b[2] || a[3] !== b[3]))) return undefined;
    }
    return binding;
  } catch {
    return undefined;
  }
}

/** lstat, or undefined when nothing is there: no entry, or a component of the path is no longer a directory. */
function lstatMissingOk(path: string | Buffer): Stats | undefined {
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

// A request is NUL-joined paths, or records of a stored tree file (see StoredNodes) whose paths are relative to root;
// \`fast\` says that the calling thread verified Node's lstat binding (see verifiedBindingLstat), which answers the
// same on every thread of a process.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { lstatSync } = require('node:fs');
let binding;
function statInto(path, out, j, fast) {
  let st;
  if (fast) {
    binding ??= process.binding('fs').lstat;
    try { st = binding(path, false, undefined, false); } catch (e) { if (e.code !== 'ENOTDIR') throw e; }
    if (st === undefined) { out[j] = 0; return; }
    const type = st[${MODE}] & ${S_IFMT};
    out[j] = type === ${S_IFREG} ? 1 : type === ${S_IFLNK} ? 2 : type === ${S_IFDIR} ? 4 : 3;
    out[j + 1] = st[${SIZE}]; out[j + 2] = st[${MTIME_SEC}] * 1e3 + st[${MTIME_NSEC}] / 1e6; out[j + 3] = st[${INO}];
    return;
  }
  try { st = lstatSync(path, { throwIfNoEntry: false }); } catch (e) { if (e.code !== 'ENOTDIR') throw e; }
  if (st === undefined) { out[j] = 0; return; }
  out[j] = st.isFile() ? 1 : st.isSymbolicLink() ? 2 : st.isDirectory() ? 4 : 3;
  out[j + 1] = st.size; out[j + 2] = st.mtimeMs; out[j + 3] = st.ino;
}
parentPort.on('message', ({ id, joined, records, fast }) => {
  let out;
  let error;
  try {
    if (records !== undefined) {
      const { bytes, starts, root } = records;
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      out = new Float64Array(starts.length * ${STAT_FIELDS});
      for (let i = 0; i < starts.length; i++) {
        const o = starts[i];
        statInto(root + '/' + buf.toString('utf8', o + 5, o + 5 + buf.readUInt32BE(o + 1)), out, i * ${STAT_FIELDS}, fast);
      }
    } else {
      const paths = joined.split('\\0');
      out = new Float64Array(paths.length * ${STAT_FIELDS});
      for (let i = 0; i < paths.length; i++) statInto(paths[i], out, i * ${STAT_FIELDS}, fast);
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
      worker.postMessage({ id, fast: bindingLstat() !== null, ...message });
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
