import { closeSync, fsyncSync, ftruncateSync, openSync, readFileSync, readSync, statSync, writeSync } from 'node:fs';
import { removeFileIfExists, writeFileAtomicSync } from '../fs/index.js';
import type { HashBackend } from './hash.js';

/**
 * A base file plus an append-only journal of changes since it was written, so that a small change appends a small
 * entry instead of rewriting the whole file (git's split index).
 *
 * Journal layout: an 8-byte magic, u32 version, the 32-byte checksum of the base file it extends; then entries,
 * each a u32 payload length, the BLAKE3 of the payload and the payload (UTF-8 JSON). A journal whose checksum is not
 * the base file's belongs to an older base and is ignored; a torn or corrupt entry ends the journal (it can only be
 * the last one, from an append cut short by a crash) and the next append overwrites it.
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

const VERSION = 1;
const HEADER_BYTES = 8 + 4 + 32;
/** A journal is folded into its base once it outgrows this share of the base (and 64 KB), unless its codec says otherwise. */
const COMPACT_RATIO = 1 / 8;

interface Cached<T> {
  key: string;
  value: T;
}

/** One journaled file: reads it whole, replaces it, or appends a change to it. Callers serialize writers. */
export class JournaledFile<T, E> {
  private base: Cached<{ value: T; checksum: Buffer; size: number }> | undefined;
  private current: Cached<T> | undefined;
  /** The journal of the cached value: where its valid entries end, and its size on disk. */
  private journal: { validLength: number; size: number } | undefined;

  constructor(
    private readonly file: string,
    private readonly journalFile: string,
    private readonly codec: JournalCodec<T, E>,
    private readonly backend: HashBackend,
    /** Called after each write of the base file with its bytes (to keep a cache derived from them). */
    private readonly onBaseWritten?: (data: Buffer) => void,
  ) {}

  /**
   * Bytes after the last valid journal entry (an append cut short by a crash, or damage), as read by the last
   * {@link read}: a sentence naming the file, the offset and the size; undefined when there are none.
   */
  tail(): string | undefined {
    const journal = this.journal;
    if (journal === undefined || journal.size <= journal.validLength) return undefined;
    return `${this.journalFile}: ${journal.size - journal.validLength} bytes after the last valid entry (at byte ${journal.validLength}) are ignored`;
  }

  /** The stored value (base with journal applied) and when it was last written; undefined when never written. */
  read(): { value: T; writtenMs: number; key: string } | undefined {
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (stat === undefined) return undefined;
    const baseKey = statKey(stat);
    if (this.base?.key !== baseKey) {
      const data = readFileSync(this.file);
      this.base = { key: baseKey, value: { value: this.codec.decode(data, this.file), checksum: Buffer.from(this.codec.checksum(data)), size: data.length } };
    }
    const journalStat = statSync(this.journalFile, { throwIfNoEntry: false });
    const key = `${baseKey}|${journalStat === undefined ? '' : statKey(journalStat)}`;
    if (this.current?.key !== key) {
      const base = this.base.value;
      const journal = journalStat === undefined ? undefined : this.decodeJournal(readFileSync(this.journalFile), base.checksum);
      const value = journal === undefined ? base.value : this.codec.apply(base.value, journal.entries, this.journalFile);
      this.current = { key, value };
      this.journal = journal === undefined ? undefined : { validLength: journal.validLength, size: journalStat!.size };
    }
    return { value: this.current.value, writtenMs: Math.max(stat.mtimeMs, journalStat?.mtimeMs ?? 0), key };
  }

  /** What {@link read} would return, when it would return the value already in memory; otherwise undefined. */
  readIfCached(): { value: T; writtenMs: number; key: string } | undefined {
    if (this.current === undefined) return undefined;
    const stat = statSync(this.file, { throwIfNoEntry: false });
    const journalStat = statSync(this.journalFile, { throwIfNoEntry: false });
    if (stat === undefined) return undefined;
    const key = `${statKey(stat)}|${journalStat === undefined ? '' : statKey(journalStat)}`;
    return this.current.key === key ? { value: this.current.value, writtenMs: Math.max(stat.mtimeMs, journalStat?.mtimeMs ?? 0), key } : undefined;
  }

  /**
   * The journal's entries without decoding the base: for a reader that has what it needs of the base elsewhere (a
   * cache derived from it, see `onBaseWritten`). `header` gets the base file's first bytes (the reader checks that
   * its cache belongs to them); `key` is the one {@link read} would return for the same files. Undefined before the
   * first write, or when the base file is too short to be one.
   */
  readEntries(headerBytes: number): { header: Buffer; entries: E[]; writtenMs: number; key: string } | undefined {
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (stat === undefined || stat.size < headerBytes) return undefined;
    const header = Buffer.alloc(headerBytes);
    const fd = openSync(this.file, 'r');
    try {
      if (readSync(fd, header, 0, headerBytes, 0) !== headerBytes) return undefined;
    } finally {
      closeSync(fd);
    }
    const journalStat = statSync(this.journalFile, { throwIfNoEntry: false });
    const journal = journalStat === undefined ? undefined : this.decodeJournal(readFileSync(this.journalFile), Buffer.from(this.codec.checksum(header)));
    // A writer that replaced the base meanwhile may have dropped the journal of the header read above.
    const after = statSync(this.file, { throwIfNoEntry: false });
    if (after === undefined || statKey(after) !== statKey(stat)) return undefined;
    return {
      header,
      entries: journal?.entries ?? [],
      writtenMs: Math.max(stat.mtimeMs, journalStat?.mtimeMs ?? 0),
      key: `${statKey(stat)}|${journalStat === undefined ? '' : statKey(journalStat)}`,
    };
  }

  /** Replaces the stored value (and drops the journal). */
  write(value: T): void {
    const data = this.codec.encode(value);
    const checksum = this.codec.checksum(data);
    // A journal left on disk must never apply to the new base. It names its base by checksum, so normally the new
    // base goes first (a crash in between leaves a journal naming another base: ignored). Only a journal naming
    // this very checksum (an identical base) must go first; a crash in between then leaves exactly the new value.
    if (this.journalNames(checksum)) removeFileIfExists(this.journalFile);
    writeFileAtomicSync(this.file, data);
    removeFileIfExists(this.journalFile);
    this.onBaseWritten?.(data);
    const key = statKey(statSync(this.file));
    // The value just written is the value in memory: the next read need not decode it again.
    this.base = { key, value: { value, checksum: Buffer.from(checksum), size: data.length } };
    this.current = { key: `${key}|`, value };
    this.journal = undefined;
  }

  /**
   * Stores `value`, the value last read or written changed by `entry`: one fsynced append to the journal, or a
   * rewrite of the base once the journal has grown past an eighth of it.
   */
  append(value: T, entry: E): void {
    const base = this.base?.value;
    const payload = Buffer.from(JSON.stringify(entry), 'utf8');
    const record = Buffer.alloc(36 + payload.length);
    record.writeUInt32BE(payload.length, 0);
    this.backend.digest(payload).copy(record, 4);
    payload.copy(record, 36);
    const length = this.journal?.validLength ?? HEADER_BYTES;
    if (base === undefined || this.current === undefined || length + record.length > Math.max(64 * 1024, base.size * (this.codec.compactRatio ?? COMPACT_RATIO))) {
      this.write(value);
      return;
    }
    if (this.journal === undefined) {
      writeFileAtomicSync(this.journalFile, Buffer.concat([this.header(base.checksum), record]));
    } else {
      const fd = openSync(this.journalFile, 'r+');
      try {
        // Drop a torn entry left by a crash before appending after it.
        if (this.journal.size !== length) ftruncateSync(fd, length);
        writeSync(fd, record, 0, record.length, length);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    const journalStat = statSync(this.journalFile);
    this.current = { key: `${this.base!.key}|${statKey(journalStat)}`, value };
    this.journal = { validLength: length + record.length, size: journalStat.size };
  }

  private header(checksum: Buffer): Buffer {
    const out = Buffer.alloc(HEADER_BYTES);
    out.write(this.codec.magic, 0, 8, 'latin1');
    out.writeUInt32BE(VERSION, 8);
    checksum.copy(out, 12);
    return out;
  }

  private decodeJournal(data: Buffer, checksum: Buffer): { entries: E[]; validLength: number } | undefined {
    if (data.length < HEADER_BYTES || !data.subarray(0, 12).equals(this.header(checksum).subarray(0, 12))) return undefined;
    if (!data.subarray(12, HEADER_BYTES).equals(checksum)) return undefined;
    const entries: E[] = [];
    let o = HEADER_BYTES;
    while (o + 36 <= data.length) {
      const end = o + 36 + data.readUInt32BE(o);
      if (end > data.length) break;
      const payload = data.subarray(o + 36, end);
      if (!this.backend.digest(payload).equals(data.subarray(o + 4, o + 36))) break;
      let entry: E | undefined;
      try {
        entry = this.codec.parseEntry(JSON.parse(payload.toString('utf8')));
      } catch {
        entry = undefined;
      }
      if (entry === undefined) break;
      entries.push(entry);
      o = end;
    }
    return { entries, validLength: o };
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
      const header = Buffer.alloc(HEADER_BYTES);
      return readSync(fd, header, 0, HEADER_BYTES, 0) === HEADER_BYTES && header.subarray(12).equals(checksum);
    } finally {
      closeSync(fd);
    }
  }
}

function statKey(stat: { ino: number; mtimeMs: number; size: number }): string {
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}
