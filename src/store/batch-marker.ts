/**
 * The batch marker of the event log (`events.pending`, see event-store.ts), so that a crash or a reader beside the
 * writer never exposes half a batch. The writer rewrites it in place (one fixed-size record); readers use it to find
 * the committed end of the log. It holds one of:
 *
 * - `{"gen":G,"start":S,"end":E}`: one batch being written at bytes S..E. Bytes from S on are invisible while the
 *   log is shorter than E. The writer uses it for a batch with a sealed line inside it (the first batch of a log,
 *   whose first line is sealed too). `start` = `end` = 0 names nothing (a closed log).
 * - `{"gen":G,"region":[S,E]}`: batches are being appended at bytes S..E, one after another, each ending with a
 *   sealed line (see chain.ts): the committed end is the end of the last sealed line at or after S, and the complete
 *   lines after it are the batch being written. One marker write serves every batch that fits in the region (most
 *   steps then make one system call, the log's write, not two). Its field names differ from the batch form's, so a
 *   reader that knows only that form takes it for a marker being rewritten and never for a batch to cut.
 *
 * What follows the last sealed line of a region is taken for an unfinished batch only when it looks like one:
 * complete lines of JSON, none of them shaped like a sealed line, and a torn end without a seal in it. A damaged
 * seal (or brace, or line end) is not cut or hidden: readers serve the log up to it and report what follows (see
 * log-reader.ts), and the writer cuts nothing and refuses to continue it.
 */
import { promises as fsp, statSync, writeSync } from 'node:fs';
import { readTextIfExistsSync } from '../fs/index.js';
import { lastSealedLine, looksSealed } from './chain.js';
import { endOfLastLine } from './lines.js';
import type { RunPaths } from './paths.js';

/** Bytes of the log being written: a batch (`start`..`end`), or with `region` a region of sealed batches. */
export interface PendingBatch {
  gen: number;
  start: number;
  end: number;
  /** A region of batches each ending with a sealed line (see the module comment), not one batch. */
  region?: boolean;
}

const PENDING_RECORD_BYTES = 96;

/**
 * The bytes a region covers at least: a marker write every this many bytes of the log (a few hundred steps of
 * small events).
 */
export const REGION_BYTES = 1 << 20;

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/**
 * The batch marker: undefined when there is none (no file, or empty), 'torn' when it is being rewritten as we read
 * it (the caller reads again).
 */
export function readPending(path: string): PendingBatch | undefined | 'torn' {
  const text = readTextIfExistsSync(path);
  if (text === undefined || text.trim() === '') return undefined;
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    if (typeof parsed['gen'] !== 'number') return 'torn';
    const region = parsed['region'];
    if (Array.isArray(region)) {
      if (region.length === 2 && isCount(region[0]) && isCount(region[1]) && region[0] <= region[1]) return { gen: parsed['gen'], start: region[0], end: region[1], region: true };
      return 'torn';
    }
    if (typeof parsed['start'] === 'number' && typeof parsed['end'] === 'number') return { gen: parsed['gen'], start: parsed['start'], end: parsed['end'] };
  } catch {
    // fall through
  }
  return 'torn';
}

/** The writer's side of the marker: one fixed-size record, rewritten in place on an open descriptor. */
export class BatchMarker {
  private readonly record = Buffer.alloc(PENDING_RECORD_BYTES);
  /** The generation last written. */
  gen = 0;
  /** The end of the region the marker names (0: it names none). */
  regionEnd = 0;

  constructor(readonly fd: number) {}

  /** Rewrites the marker in place: one positional write of a fixed-size record, so the file is never empty. */
  write(record: PendingBatch): void {
    const data = this.record;
    // JSON.stringify's text of the record (its fields are integers), written without building it through JSON.
    const text = record.region === true ? `{"gen":${record.gen},"region":[${record.start},${record.end}]}` : `{"gen":${record.gen},"start":${record.start},"end":${record.end}}`;
    data.fill(0x20, data.write(text, 'latin1'));
    let written = 0;
    while (written < data.length) written += writeSync(this.fd, data, written, data.length - written, written);
    this.gen = record.gen;
    this.regionEnd = record.region === true ? record.end : 0;
  }

  /** Names no batch: nothing in the log is invisible. */
  clear(): void {
    this.write({ gen: this.gen + 1, start: 0, end: 0 });
  }
}

/** Where the committed lines of a log end (see {@link committedOf}). */
export interface Committed {
  /** The end of the last committed line. */
  end: number;
  /**
   * Set when the log's tail, inside the region the marker names, is not an unfinished batch but a damaged one (a
   * damaged seal, brace or line end): `end` is then the end of the last complete line, and the writer cuts nothing.
   */
  damaged: boolean;
}

/** A seal, as it ends a sealed line (see chain.ts), anywhere in a text read as latin1. */
const SEAL_TEXT = /,"chain":"[0-9a-f]{64}"\}/;

/**
 * Where the committed lines of a log end, given its marker and its size: `size` cut to its last complete line,
 * less a batch being written (or left unfinished by a crash).
 */
export async function committedOf(path: string, handle: fsp.FileHandle, pending: PendingBatch | undefined | 'torn', size: number): Promise<Committed> {
  if (pending !== undefined && pending !== 'torn' && size > pending.start && size < pending.end && pending.region !== true) size = pending.start;
  if (size === 0) return { end: 0, damaged: false };
  const end = await endOfLastLine(handle, size);
  if (pending === undefined || pending === 'torn' || pending.region !== true || size <= pending.start || size > pending.end) return { end, damaged: false };
  // In a region: up to the last sealed line, when what follows it is an unfinished batch.
  const from = end > pending.start ? ((await lastSealedLine(path, end, pending.start))?.end ?? pending.start) : end;
  const tail = Buffer.allocUnsafe(size - from);
  const { bytesRead } = await handle.read(tail, 0, tail.length, from);
  if (bytesRead === tail.length && unfinishedBatch(tail.subarray(0, end - from)) && !SEAL_TEXT.test(tail.toString('latin1', end - from))) return { end: from, damaged: false };
  return { end, damaged: true };
}
/**
 * Whether `lines` (complete lines, each with its newline) can be the start of a batch the writer had not finished:
 * every line is JSON and none is shaped like a sealed line (a sealed line whose seal was damaged is not).
 */
function unfinishedBatch(lines: Buffer): boolean {
  for (let from = 0; from < lines.length; ) {
    const nl = lines.indexOf(0x0a, from);
    const line = lines.subarray(from, nl);
    if (looksSealed(line)) return false;
    try {
      JSON.parse(line.toString('utf8'));
    } catch {
      return false;
    }
    from = nl + 1;
  }
  return true;
}

/**
 * Bytes of the log that hold committed, complete lines: excludes a batch being written (or left unfinished by a
 * crash) and a torn last line. Safe against a concurrent writer: the marker is read before and after the log's
 * size, and again if its generation changed in between.
 */
export async function committedEnd(paths: RunPaths): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const before = readPending(paths.pendingBatch);
    let size: number;
    try {
      size = statSync(paths.events).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
    const after = readPending(paths.pendingBatch);
    if (attempt < 100 && (before === 'torn' || after === 'torn' || before?.gen !== after?.gen)) continue;
    if (size === 0) return 0;
    const handle = await fsp.open(paths.events, 'r');
    try {
      return (await committedOf(paths.events, handle, after, size)).end;
    } finally {
      await handle.close();
    }
  }
}
