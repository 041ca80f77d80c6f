import type { LockHolder } from '../fs/index.js';

export type { LockHolder };

/**
 * Error classes of the storage layer. Every message names what was wrong and where (path, id, line), so that a
 * caller can act on it without reading the source.
 */

/** Base class of every storage error. `path` is the file or directory involved, when there is one. */
export class StoreError extends Error {
  readonly path: string | undefined;

  constructor(message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.path = options.path;
  }
}

/** An id (session key, run id, step id, memory id) that cannot be used in a path. Thrown before any file is touched. */
export class InvalidIdError extends StoreError {
  readonly id: string;
  readonly kind: string;

  constructor(kind: string, id: string, reason: string) {
    super(`invalid ${kind} ${JSON.stringify(id.length > 160 ? id.slice(0, 160) + '…' : id)}: ${reason}`);
    this.id = id;
    this.kind = kind;
  }
}

/** A failure of the event log: invalid event, corrupt line (with its 1-based `line`), write failure. */
export class EventStoreError extends StoreError {
  /** 1-based line number in events.jsonl, when the error concerns one line. */
  readonly line: number | undefined;

  constructor(message: string, options: { path?: string; line?: number; cause?: unknown } = {}) {
    super(message, options);
    this.line = options.line;
  }
}

/** A second writer on the same run: the lock is held by a live process (or by another instance in this one). */
export class LockError extends EventStoreError {
  readonly holder: LockHolder | undefined;

  constructor(message: string, options: { path: string; holder?: LockHolder; cause?: unknown }) {
    super(message, options);
    this.holder = options.holder;
  }
}

/** Starting a run (or a fork) under an id that already has a recorded run: resume is the way to continue one. */
export class RunExistsError extends StoreError {
  constructor(
    readonly sessionKey: string,
    readonly runId: string,
    path: string,
  ) {
    super(`run ${sessionKey}/${runId} already exists (${path}); resume it to continue it, or start a new run with another id`, { path });
  }
}

/**
 * Continuing a run (a resume) whose record is gone: deleted by `runs delete` or `runs prune` in another process while
 * this one was starting, after it had read the run. Nothing was written, and the run is not recreated.
 */
export class RunGoneError extends StoreError {
  constructor(
    readonly sessionKey: string,
    readonly runId: string,
    path: string,
  ) {
    super(`run ${sessionKey}/${runId} was deleted while this command was starting (${path} is gone: 'runs delete' or 'runs prune' in another process?); nothing was written`, { path });
  }
}

/**
 * A folder of the data directory that a run is read, written or deleted through (`sessions/<key>`, its `runs`,
 * `runs/<id>`, the run's `projections` and `checkpoint`) that is not a real directory: a symbolic link (to a folder
 * elsewhere, or to nothing), a file, a FIFO. Nothing is read, written or deleted through it, so nothing lands outside
 * the data directory (see `assertRunDir`). `path` is the entry, `what` what is there.
 */
export class RunFolderError extends StoreError {
  constructor(
    readonly sessionKey: string,
    readonly runId: string,
    path: string,
    readonly what: string,
  ) {
    super(
      `${path} is ${what}, not a directory: run ${sessionKey}/${runId} is not read, written or deleted through it (nothing outside the data directory is touched). ` +
        `Remove that entry (rm ${path}) to drop it from the data directory, or move the folder it stands for back in its place`,
      { path },
    );
  }
}

/**
 * A document the run recorded when it started (its flow config, its recipe: see run-documents.ts) that is gone now:
 * the run's start record names it, so it was deleted after the start, never "not recorded".
 */
export class DocumentGoneError extends StoreError {
  constructor(
    readonly document: string,
    path: string,
    log: string,
    line: number,
  ) {
    super(`${path}: the run recorded it when it started (${log}, line ${line}), and it is gone`, { path });
  }
}

/** A checkpoint that is invalid on save, or a checkpoint file that is corrupt on load. */
export class CheckpointStoreError extends StoreError {}

/** A memory item that is invalid, or a memory file that cannot be read or written. */
export class MemoryStoreError extends StoreError {}

/**
 * A folder of the shared memory (`memory`, `memory/shared`, its `items` and `index`) that is not a real directory: a
 * symbolic link (to a folder elsewhere), a file, a FIFO. The memory is not read, written or deleted through it, so
 * nothing lands outside the data directory (as {@link RunFolderError} for a run). `path` is the entry, `what` what is
 * there.
 */
export class MemoryFolderError extends MemoryStoreError {
  constructor(
    path: string,
    readonly what: string,
  ) {
    super(
      `${path} is ${what}, not a directory: the memory is not read, written or deleted through it (nothing outside the data directory is touched). ` +
        `Remove that entry (rm ${path}), or move the folder it stands for back in its place`,
      { path },
    );
  }
}

/** A run projection that cannot be computed, read or written. */
export class ProjectionStoreError extends StoreError {}

/** A zod error's issues as one line, `path: message; ...`; `root` names the value itself when an issue has no path. */
export function describeIssues(error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> }, root: string): string {
  return error.issues.map((i) => `${i.path.length ? i.path.map(String).join('.') : root}: ${i.message}`).join('; ');
}

/**
 * A writer whose run was taken over: its lease expired and another writer took the run (a higher fencing token), or
 * another writer stored the same event first. Nothing of the refused commit is stored; the writer cannot go on.
 */
export class FencedError extends EventStoreError {}

/**
 * What says that the connection to a shared store (a database) was lost: the `postgres` driver's codes, the socket's, and the server's own
 * (SQLSTATE class 08, connection exception; 57P01-57P03, the server shutting down or not yet accepting connections).
 */
const CONNECTION_LOST: ReadonlySet<string> = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', '57P01', '57P02', '57P03']);

/**
 * The error in `error`'s cause chain (itself first) whose code says that a database connection was lost (see
 * CONNECTION_LOST), or undefined. A statement that failed so may or may not have been carried out: its outcome is
 * unknown until the database is read again.
 */
export function lostConnection(error: unknown): Error | undefined {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 10; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (CONNECTION_LOST.has(code) || code.startsWith('08'))) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
