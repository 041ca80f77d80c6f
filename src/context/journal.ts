import { closeSync, fdatasyncSync, fsyncSync, ftruncateSync, openSync, readFileSync, readSync, statSync, writeSync, type Stats } from 'node:fs';
import { writeFileAtomicSync } from '../fs/index.js';
import type { HashBackend } from './hash.js';

/**
 * A base file plus an append-only journal of changes since it was written, so that a small change appends a small
 * entry instead of rewriting the whole file (git's split index).
 *
 * Journal layout (format 2): an 8-byte magic, u32 version, the 32-byte checksum of the base file it extends, the
 * BLAKE3 of those 44 bytes, then the commit record: u32 committed length and a u32 check of it; then entries, each a
 * u32 payload length, the BLAKE3 of the payload and the payload (UTF-8 JSON).
 *
 * What tells damage from a crash:
 * - An append writes its entry after the committed length and fsyncs it, then rewrites the commit record to cover it
 *   and fsyncs again; only then is the change acknowledged. Bytes after the committed length are an append that a
 *   crash cut short before it was acknowledged: ignored in silence, and dropped by the next append. A committed byte
 *   that is missing or fails its checksum is damage: an acknowledged change is lost, and every reader says so.
 * - The journal always exists beside its base: a write of the base writes an empty journal with it (the journal
 *   first when there is no base yet or the one on disk names the new base, the base first otherwise), so a missing
 *   journal is damage too, never "nothing journaled yet". A journal with an intact header that names another base is
 *   the old journal of a rewrite that a crash interrupted after its base was renamed into place: the base already
 *   holds everything it had, so it is ignored in silence.
 */
export interface JournalCodec<T, E> {
  /** 8 ASCII bytes identifying this kind of journal. */
  readonly magic: string;
  /** Parses and verifies a base file; `file` names it in errors. */
  decode(data: Buffer, file: string): T;
  encode(value: T): Buffer;
  /** The 32-byte checksum a journal names its base by. */
  checksum(data: Buffer): Buffer;
  /** An entry from its parsed JSON, or undefined when malformed. */
  parseEntry(value: unknown): E | undefined;
  /** The base with entries applied in order; `file` names the journal in errors. */
  apply(base: T, entries: readonly E[], file: string): T;
  /** The journal is folded into its base once it outgrows this share of the base (and 64 KB); default 1/8. */
  readonly compactRatio?: number;
}

/** What a read of a journaled file answers. */
export interface JournaledRead<T> {
  readonly value: T;
  /** When the value was last written (the journal's mtime once it holds entries, else the base file's). */
  readonly writtenMs: number;
  /** Identifies the files read: equal keys, equal values. */
  readonly key: string;
  /**
   * Set when the journal is damaged or missing: a sentence naming it and what was lost. The value is then the base
   * with the journal's intact entries, which may be older than the last acknowledged write.
   */
  readonly damage?: string;
}

const VERSION = 2;
const COMMIT_OFFSET = 8 + 4 + 32 + 32;
const HEADER_BYTES = COMMIT_OFFSET + 8;
/** A journal is folded into its base once it outgrows this share of the base (and 64 KB), unless its codec says otherwise. */
const COMPACT_RATIO = 1 / 8;
/** Reads that found damage are repeated (a writer may have been between its two writes of an append). */
const READ_ATTEMPTS = 3;

/**
 * A journal as read: where its intact committed entries end, its size, and damage when committed bytes are missing
 * or bad (then `committed` is where the intact entries end).
 */
interface JournalState {
  readonly committed: number;
  readonly size: number;
  readonly damage?: string;
}

/** One journaled file: reads it whole, replaces it, or appends a change to it. Callers serialize writers. */
export class JournaledFile<T, E> {
  private base: { key: string; value: T; checksum: Buffer; size: number } | undefined;
  private current: (JournaledRead<T> & { journal: JournalState | undefined }) | undefined;

  constructor(
    private readonly file: string,
    private readonly journalFile: string,
    private readonly codec: JournalCodec<T, E>,
    private readonly backend: HashBackend,
    /** Called after each write of the base file with its bytes (to keep a cache derived from them). */
    private readonly onBaseWritten?: (data: Buffer) => void,
  ) {}

  /**
   * Bytes after the committed length of the journal (an append cut short by a crash before it was acknowledged),
   * as read by the last {@link read}: a sentence naming the file, the offset and the size; undefined when none.
   */
  uncommitted(): string | undefined {
    const journal = this.current?.journal;
    if (journal === undefined || journal.damage !== undefined || journal.size <= journal.committed) return undefined;
    return `${this.journalFile}: ${journal.size - journal.committed} bytes after the last committed entry (at byte ${journal.committed}) are ignored (an append interrupted before it was acknowledged)`;
  }

  /** The stored value (base with journal applied) and when it was last written; undefined when never written. */
  read(): JournaledRead<T> | undefined {
    let result: JournaledRead<T> | undefined;
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      result = this.readOnce();
      if (result?.damage === undefined) return result;
    }
    return result;
  }

  /** What {@link read} would return, when it would return the value already in memory; otherwise undefined. */
  readIfCached(): JournaledRead<T> | undefined {
    if (this.current === undefined) return undefined;
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (stat === undefined) return undefined;
    const journalStat = statSync(this.journalFile, { throwIfNoEntry: false });
    return this.current.key === pairKey(stat, journalStat) ? this.current : undefined;
  }

  /**
   * The journal's entries without decoding the base: for a reader that has what it needs of the base elsewhere (a
   * cache derived from it, see `onBaseWritten`). `header` gets the base file's first bytes (the reader checks that
   * its cache belongs to them); `key` is the one {@link read} would return for the same files, `damage` as there.
   * Undefined before the first write, when the base file is too short to be one, or when a writer replaced it meanwhile.
   */
  readEntries(headerBytes: number): { header: Buffer; entries: E[]; writtenMs: number; key: string; damage?: string } | undefined {
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (stat === undefined || stat.size < headerBytes) return undefined;
    const header = Buffer.alloc(headerBytes);
    const fd = openSync(this.file, 'r');
    try {
      if (readSync(fd, header, 0, headerBytes, 0) !== headerBytes) return undefined;
    } finally {
      closeSync(fd);
    }
    const { journal, journalStat } = this.readJournal(Buffer.from(this.codec.checksum(header)));
    // A writer that replaced the base meanwhile may have replaced the journal of the header read above.
    const after = statSync(this.file, { throwIfNoEntry: false });
    if (after === undefined || statKey(after) !== statKey(stat)) return undefined;
    return { header, entries: journal?.entries ?? [], writtenMs: writtenMs(stat, journalStat, journal), key: pairKey(stat, journalStat), damage: journal?.damage };
  }

  /** Replaces the stored value, with an empty journal. */
  write(value: T): void {
    const data = this.codec.encode(value);
    const checksum = Buffer.from(this.codec.checksum(data));
    const journal = Buffer.concat([this.header(checksum), this.commitRecord(HEADER_BYTES)]);
    // A journal left on disk must never apply to the new base, and a base must never be left without a journal
    // (a missing one reads as damage). A journal naming this very checksum (an identical base), or one without a
    // base, is replaced first; otherwise the base goes first: a crash in between leaves the old journal, naming
    // another base, which is ignored.
    if (statSync(this.file, { throwIfNoEntry: false }) === undefined || this.journalNames(checksum)) {
      writeFileAtomicSync(this.journalFile, journal);
      writeFileAtomicSync(this.file, data);
    } else {
      writeFileAtomicSync(this.file, data);
      writeFileAtomicSync(this.journalFile, journal);
    }
    this.onBaseWritten?.(data);
    // The value just written is the value in memory: the next read need not decode it again.
    const stat = statSync(this.file);
    const journalStat = statSync(this.journalFile);
    this.base = { key: statKey(stat), value, checksum, size: data.length };
    const state = { committed: HEADER_BYTES, size: journal.length };
    this.current = { value, writtenMs: writtenMs(stat, journalStat, state), key: pairKey(stat, journalStat), journal: state };
  }

  /**
   * Stores `value`, the value last read or written changed by `entry`: one append to the journal, committed once
   * it is durable (see the layout above), or a rewrite of the base once the journal has grown past its share of it.
   * A damaged or missing journal is never appended to: the value is written whole, which ends the damage's report,
   * so callers that must keep reporting it refuse to write first (see MerkleStore.readStateForUpdate).
   */
  append(value: T, entry: E): void {
    const base = this.base;
    const journal = this.current?.journal;
    const payload = Buffer.from(JSON.stringify(entry), 'utf8');
    const record = Buffer.alloc(36 + payload.length);
    record.writeUInt32BE(payload.length, 0);
    this.backend.digest(payload).copy(record, 4);
    payload.copy(record, 36);
    const length = journal?.committed ?? HEADER_BYTES;
    const limit = Math.max(64 * 1024, (base?.size ?? 0) * (this.codec.compactRatio ?? COMPACT_RATIO));
    if (base === undefined || this.current === undefined || journal?.damage !== undefined || length + record.length > limit) {
      this.write(value);
      return;
    }
    const committed = length + record.length;
    if (journal === undefined) {
      // The journal on disk names another base (a rewrite interrupted after its base was renamed): a new one.
      writeFileAtomicSync(this.journalFile, Buffer.concat([this.header(base.checksum), this.commitRecord(committed), record]));
    } else {
      const fd = openSync(this.journalFile, 'r+');
      try {
        // Drop an uncommitted entry left by a crash before appending after it.
        if (journal.size !== length) ftruncateSync(fd, length);
        writeSync(fd, record, 0, record.length, length);
        fsyncSync(fd);
        writeSync(fd, this.commitRecord(committed), 0, 8, COMMIT_OFFSET);
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    const stat = statSync(this.file);
    const journalStat = statSync(this.journalFile);
    const state = { committed, size: journalStat.size };
    this.current = { value, writtenMs: writtenMs(stat, journalStat, state), key: pairKey(stat, journalStat), journal: state };
  }

  private readOnce(): JournaledRead<T> | undefined {
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (stat === undefined) return undefined;
    const baseKey = statKey(stat);
    if (this.base?.key !== baseKey) {
      const data = readFileSync(this.file);
      this.base = { key: baseKey, value: this.codec.decode(data, this.file), checksum: Buffer.from(this.codec.checksum(data)), size: data.length };
    }
    const cached = this.readIfCached();
    if (cached !== undefined) return cached;
    const base = this.base;
    const { journal, journalStat } = this.readJournal(base.checksum);
    // A journal naming another base while the base changed under this read: a writer's rewrite, read again.
    if (journal === undefined && journalStat !== undefined && statKey(statSync(this.file, { throwIfNoEntry: false }) ?? stat) !== baseKey) return this.readOnce();
    const value = journal === undefined || journal.entries.length === 0 ? base.value : this.codec.apply(base.value, journal.entries, this.journalFile);
    const read = { value, writtenMs: writtenMs(stat, journalStat, journal), key: pairKey(stat, journalStat), damage: journal?.damage };
    // An append in progress (or cut short) is not cached: its commit record is rewritten in place, which need not
    // change the journal's size or mtime.
    const settled = journal === undefined || journal.size === journal.committed;
    this.current = { ...read, key: settled ? read.key : '', journal: journal && { committed: journal.committed, size: journal.size, damage: journal.damage } };
    return read;
  }

  /** The journal on disk decoded against a base checksum (undefined when it names another base), with its stat. */
  private readJournal(checksum: Buffer): { journal: (JournalState & { entries: E[] }) | undefined; journalStat: Stats | undefined } {
    const journalStat = statSync(this.journalFile, { throwIfNoEntry: false });
    let data: Buffer | undefined;
    try {
      data = journalStat === undefined ? undefined : readFileSync(this.journalFile);
    } catch {
      data = undefined; // removed meanwhile
    }
    if (data === undefined) {
      const damage = `${this.journalFile} is missing: every change journaled since ${this.file} was last written is lost (the answer is that of ${this.file} alone)`;
      return { journal: { entries: [], committed: 0, size: 0, damage }, journalStat: undefined };
    }
    return { journal: this.decodeJournal(data, checksum), journalStat };
  }

  private header(checksum: Buffer): Buffer {
    const out = Buffer.alloc(COMMIT_OFFSET);
    out.write(this.codec.magic, 0, 8, 'latin1');
    out.writeUInt32BE(VERSION, 8);
    checksum.copy(out, 12);
    this.backend.digest(out.subarray(0, 44)).copy(out, 44);
    return out;
  }

  /** The committed length and its check (the first 4 bytes of its BLAKE3), so that a damaged one is told. */
  private commitRecord(length: number): Buffer {
    const out = Buffer.alloc(8);
    out.writeUInt32BE(length, 0);
    this.backend.digest(out.subarray(0, 4)).copy(out, 4, 0, 4);
    return out;
  }

  private decodeJournal(data: Buffer, checksum: Buffer): (JournalState & { entries: E[] }) | undefined {
    const lost = (what: string, entries: E[], committed: number): JournalState & { entries: E[] } => ({
      entries,
      committed,
      size: data.length,
      damage: `${this.journalFile} is damaged: ${what}`,
    });
    if (data.length < HEADER_BYTES || !data.subarray(0, COMMIT_OFFSET).equals(this.header(data.subarray(12, 44)))) {
      return lost(`its header is not an intact format-${VERSION} ${this.codec.magic} header, so every change journaled since ${this.file} was last written is lost`, [], 0);
    }
    if (!data.subarray(12, 44).equals(checksum)) return undefined;
    const commit = data.subarray(COMMIT_OFFSET, HEADER_BYTES);
    const committed = commit.readUInt32BE(0);
    const commitIntact = commit.equals(this.commitRecord(committed));
    const end = commitIntact ? committed : data.length;
    const entries: E[] = [];
    let o = HEADER_BYTES;
    while (o + 36 <= end) {
      const next = o + 36 + data.readUInt32BE(o);
      const entry = next > end ? undefined : this.parseEntry(data, o, next);
      if (entry === undefined) break;
      entries.push(entry);
      o = next;
    }
    if (!commitIntact) {
      return lost(`its committed length (bytes ${COMMIT_OFFSET}-${HEADER_BYTES}) fails its check; the ${entries.length} intact entries up to byte ${o} are applied, and any committed after them are lost`, entries, o);
    }
    if (o < committed) {
      const missing = committed > data.length ? `, of which ${committed - data.length} are missing (the file was cut)` : '';
      return lost(`committed bytes ${o}-${committed} (${committed - o} bytes${missing}) fail their checksum, so the changes they held and any after them are lost; ${entries.length} intact entries before them are applied`, entries, o);
    }
    return { entries, committed, size: data.length };
  }

  /** The entry at `start`..`end` when its checksum and shape are intact. */
  private parseEntry(data: Buffer, start: number, end: number): E | undefined {
    const payload = data.subarray(start + 36, end);
    if (!this.backend.digest(payload).equals(data.subarray(start + 4, start + 36))) return undefined;
    try {
      return this.codec.parseEntry(JSON.parse(payload.toString('utf8')));
    } catch {
      return undefined;
    }
  }

  /** True when the journal on disk (if any) extends a base with this checksum. */
  private journalNames(checksum: Buffer): boolean {
    let fd: number;
    try {
      fd = openSync(this.journalFile, 'r');
    } catch {
      return false;
    }
    try {
      const header = Buffer.alloc(44);
      return readSync(fd, header, 0, 44, 0) === 44 && header.subarray(12).equals(checksum);
    } finally {
      closeSync(fd);
    }
  }
}

function statKey(stat: { ino: number; mtimeMs: number; size: number }): string {
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}

function pairKey(stat: Stats, journalStat: Stats | undefined): string {
  return `${statKey(stat)}|${journalStat === undefined ? '' : statKey(journalStat)}`;
}

/**
 * When the value was last written: the journal's mtime once it holds committed entries, else the base file's (the
 * empty journal written with a base is written after it, and must not make the tree look younger than its scan).
 */
function writtenMs(stat: Stats, journalStat: Stats | undefined, journal: JournalState | undefined): number {
  return journalStat !== undefined && journal !== undefined && journal.committed > HEADER_BYTES ? Math.max(stat.mtimeMs, journalStat.mtimeMs) : stat.mtimeMs;
}
