import { lstatSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * Per path, four numbers: kind (0 missing, 1 file, 2 symlink, 3 other, 4 directory, {@link STAT_FAILED}), size,
 * mtimeMs, ino.
 */
export const STAT_FIELDS = 4;

/**
 * The kind of a path whose lstat failed for another reason than "nothing there" (EACCES on a directory that cannot
 * be searched, ELOOP, ENAMETOOLONG, ...): the stat is not thrown raw from deep inside a check, but recorded, and the
 * caller that knows the path's workspace spelling reports it (see `scan.ts`) or lets a full listing decide.
 */
export const STAT_FAILED = 5;

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
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') {
      out[j] = STAT_FAILED;
      return;
    }
    st = undefined;
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
  let st: Stats | undefined;
  try {
    st = lstatMissingOk(path);
  } catch {
    out[j] = STAT_FAILED;
    return;
  }
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

/** Slots of {@link SharedStatJob.control}. */
export const NEXT = 0;
export const BUSY = 1;
export const ABORT = 2;

/**
 * lstat of stored records shared by the calling thread and the helper: every buffer is on a SharedArrayBuffer.
 * The records (`bytes`, `starts`: see RecordBody; paths relative to `root`, record 0 the root itself) are cut in
 * chunks of `chunk`; each thread claims the next chunk with `Atomics.add(control, NEXT, 1)` until none is left, so
 * the calling thread works from the start while the helper boots and neither waits for the other's share. The
 * helper writes its stats into `stats` ({@link STAT_FIELDS} per record), then sets `done[chunk]`; it sets
 * `control[BUSY]` while it may hold a chunk (before it claims, cleared once the chunk is done, or it failed, or there
 * was none left), so once every chunk is claimed and BUSY is clear, `done` tells which ones it statted.
 * `control[ABORT]` stops it.
 */
export interface SharedStatJob {
  readonly bytes: Uint8Array;
  readonly starts: Int32Array;
  readonly root: string;
  readonly stats: Float64Array;
  readonly done: Uint8Array;
  readonly control: Int32Array;
  readonly chunk: number;
}

// A request is NUL-joined paths, or a SharedStatJob over records of a stored tree (see RecordBody);
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
    try { st = binding(path, false, undefined, false); } catch (e) { if (e.code !== 'ENOTDIR') { out[j] = ${STAT_FAILED}; return; } }
    if (st === undefined) { out[j] = 0; return; }
    const type = st[${MODE}] & ${S_IFMT};
    out[j] = type === ${S_IFREG} ? 1 : type === ${S_IFLNK} ? 2 : type === ${S_IFDIR} ? 4 : 3;
    out[j + 1] = st[${SIZE}]; out[j + 2] = st[${MTIME_SEC}] * 1e3 + st[${MTIME_NSEC}] / 1e6; out[j + 3] = st[${INO}];
    return;
  }
  try { st = lstatSync(path, { throwIfNoEntry: false }); } catch (e) { if (e.code !== 'ENOTDIR') { out[j] = ${STAT_FAILED}; return; } }
  if (st === undefined) { out[j] = 0; return; }
  out[j] = st.isFile() ? 1 : st.isSymbolicLink() ? 2 : st.isDirectory() ? 4 : 3;
  out[j + 1] = st.size; out[j + 2] = st.mtimeMs; out[j + 3] = st.ino;
}
parentPort.on('message', ({ id, joined, shared, fast }) => {
  let out;
  let error;
  if (shared !== undefined) {
    // Chunks of records claimed one at a time from the shared counter, the calling thread claiming too: see
    // SharedStatJob. BUSY is set before each claim and cleared after its stats are written (or it came up empty).
    const { bytes, starts, root, stats, done, control, chunk } = shared;
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const chunks = Math.ceil(starts.length / chunk);
    // Each path as bytes after root + '/', in a buffer reused for every path of its length (no string per path).
    const head = Buffer.from(root + '/');
    const byLength = [];
    try {
      for (;;) {
        if (Atomics.load(control, ${ABORT}) !== 0) break;
        Atomics.store(control, ${BUSY}, 1);
        const c = Atomics.add(control, ${NEXT}, 1);
        if (c >= chunks) break;
        const end = Math.min(starts.length, (c + 1) * chunk);
        for (let i = c * chunk; i < end; i++) {
          if (i === 0) { statInto(root, stats, 0, fast); continue; }
          const o = starts[i] + 5;
          const length = buf.readUInt32BE(o - 4);
          let path = byLength[length];
          if (path === undefined) { path = Buffer.allocUnsafeSlow(head.length + length); head.copy(path, 0); byLength[length] = path; }
          for (let k = 0, at = head.length; k < length; k++) path[at + k] = buf[o + k];
          statInto(path, stats, i * ${STAT_FIELDS}, fast);
        }
        Atomics.store(done, c, 1);
        Atomics.store(control, ${BUSY}, 0);
        Atomics.notify(control, ${BUSY});
      }
    } catch (e) { error = String(e && e.message || e); }
    Atomics.store(control, ${BUSY}, 0);
    Atomics.notify(control, ${BUSY});
    parentPort.postMessage({ id, error });
    return;
  }
  try {
    const paths = joined.split('\\0');
    out = new Float64Array(paths.length * ${STAT_FIELDS});
    for (let i = 0; i < paths.length; i++) statInto(paths[i], out, i * ${STAT_FIELDS}, fast);
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
  private readonly waiting = new Map<number, { resolve: (out: never) => void; reject: (error: Error) => void; keepAlive: boolean; worker: Worker }>();
  /** Per helper thread, its unanswered requests that keep the process alive (see {@link request}). */
  private readonly keptAlive = new WeakMap<Worker, number>();

  /** Starts the helper thread ahead of its first use (it takes a few tens of milliseconds to boot). */
  warm(): void {
    this.ensureWorker();
  }

  /** Stops the helper thread. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return;
    // Held while it stops (the message handler no longer lets it go: it is not this.worker now). Unreferenced, its
    // 'exit', which settles terminate(), could come after the event loop had emptied, and a process whose last await
    // is this close() would end with it unsettled (exit code 13): that happened when a reply to a quick check that
    // no longer waited for it (see SharedStatJob) arrived during close() and unreferenced the worker again.
    worker.ref();
    await worker.terminate();
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
   * Takes part in `job` on the helper thread (see {@link SharedStatJob}): resolves once it has claimed its last
   * chunk; rejects when it failed (the chunks it finished are flagged done all the same).
   */
  statShared(job: SharedStatJob): Promise<void> {
    return this.request({ shared: job }, false);
  }

  /**
   * Sends `message` to the helper. While a `keepAlive` request is unanswered the helper keeps the process alive;
   * a shared job's reply is not waited for (see SharedStatJob), so it does not: a process whose work is done does
   * not wait for a helper that is still booting.
   */
  private request<T = Float64Array>(message: object, keepAlive = true): Promise<T> {
    const worker = this.ensureWorker();
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (out: never) => void, reject, keepAlive, worker });
      if (keepAlive) this.holdAlive(worker, 1);
      worker.postMessage({ id, fast: bindingLstat() !== null, ...message });
    });
  }

  /**
   * Counts `worker`'s requests that keep the process alive up or down: referenced while there are any, except a
   * helper being closed, which stays referenced until it has exited (see {@link close}).
   */
  private holdAlive(worker: Worker, delta: 1 | -1): void {
    const count = (this.keptAlive.get(worker) ?? 0) + delta;
    this.keptAlive.set(worker, count);
    if (count === 1 && delta === 1) worker.ref();
    else if (count === 0 && this.worker === worker) worker.unref();
  }

  private ensureWorker(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.on('message', ({ id, out, error }: { id: number; out?: Float64Array; error?: string }) => {
      const waiter = this.waiting.get(id);
      this.waiting.delete(id);
      if (waiter?.keepAlive === true) this.holdAlive(worker, -1);
      if (error !== undefined) waiter?.reject(new Error(error));
      else waiter?.resolve(out as never);
    });
    const fail = (error: Error) => {
      // Only this thread's requests: a closed helper's exit may come after a new one took requests.
      for (const [id, waiter] of this.waiting) {
        if (waiter.worker !== worker) continue;
        this.waiting.delete(id);
        if (waiter.keepAlive) this.holdAlive(worker, -1);
        waiter.reject(error);
      }
      if (this.worker === worker) this.worker = undefined;
    };
    worker.on('error', fail);
    worker.on('exit', () => fail(new Error('stat helper thread exited')));
    // After the listeners: a 'message' listener references the worker's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }
}
