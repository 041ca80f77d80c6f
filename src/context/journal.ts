import { closeSync, fdatasyncSync, fsyncSync, ftruncateSync, lstatSync, readSync, writeSync, type Stats } from 'node:fs';
import { writeFileAtomicSync } from '../fs/index.js';
import type { HashBackend } from './hash.js';
import { entryExists, lstatEntry, openStoreFile, readStoreFile } from './store-files.js';

/**
 * A base file plus an append-only journal of changes since it was written, so that a small change appends a small
 * entry instead of rewriting the whole file (git's split index), plus a witness file that tells an older copy of
 * either from a crash.
 *
 * Journal layout (format 3): an 8-byte magic, u32 version, the 32-byte checksum of the base file it extends, the
 * u64 generation of that base, the BLAKE3 of those 52 bytes, then the commit record: u32 committed length and a u32
 * check of it; then entries, each a u32 payload length, the BLAKE3 of the payload and the payload (UTF-8 JSON).
 *
 * Generations: every acknowledged write (an append, or a write of the base) makes a new generation, one more than
 * the last. A base's generation is the one that wrote it (recorded in its journal's header); a journal's is its
 * base's plus its committed entries. The witness (`<name>.witness` beside the journal, 2 slots of 68 bytes: magic,
 * u48 generation, u48 base generation, base checksum, 16 bytes of the BLAKE3 of the rest; the valid slot with the
 * higher generation counts) records the generation of the last commit and the base it extends:
 * - A write of the base writes the witness first (both slots, atomically, fsynced: it goes durably before the base),
 *   then the base, then an empty journal naming it.
 * - An append commits its entry as before (entry written and fsynced, commit record rewritten and fsynced), then
 *   writes the slot of its new generation in place, without fsync: the one more small write of a commit, and no
 *   more fsyncs. A witness so lost to a power failure only lags behind the journal, which was durable first, and a
 *   torn slot leaves the other one, one generation behind: both read as a crash after the journal's commit.
 *
 * What tells damage (acknowledged changes lost; every reader says so, naming the file) from a crash (silent):
 * - Bytes after the committed length are an append a crash cut short before it was acknowledged: ignored, and
 *   dropped by the next append. A committed byte that is missing or fails its checksum is damage.
 * - A journal that extends the witness's base but whose generation is below the witness's is an older copy of
 *   itself: damage (the witness's newer generations are lost). One above it is a crash (or power failure) between
 *   the journal's commit and the witness's write: silent, its entries count.
 * - A base that is not the witness's base is an older (or foreign) copy: damage, unless the witness is a base
 *   write's first step (its generation is its base's) and the journal on disk extends the base on disk up to the
 *   generation before it: a crash before that base was renamed into place.
 * - A journal that is missing, or extends another base, is damage unless the witness is a base write's first step
 *   and the base on disk is the witness's: a crash before the new empty journal was written.
 * - A missing or unreadable witness (both slots bad) is damage: an older copy of the base or journal could no
 *   longer be told. An older copy of the witness alone loses nothing (it reads as lagging) and is not reported.
 *   Stores written before witnesses (journal formats 1 and 2) are reported so too, until a write of the base.
 * - A missing base is damage when the witness or the journal is there: everything it held is lost, and the read
 *   answers no value. The one crash that leaves no base is the first write's, cut after its witness: generation 1,
 *   a base write's first step, and no journal yet. Nothing was acknowledged, so it reads as never written, and the
 *   next write is generation 1 again (a second crash there stays silent too). Deleting both the base and the empty
 *   journal of a first write looks the same, and is not told.
 * Readers read the witness before the journal and again after it, and read again when it (or the base) changed
 * meanwhile, so a writer's commit between their reads is never taken for an older copy.
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

/**
 * What {@link JournaledFile.read} answers when the base file is missing though the witness or the journal shows that
 * it was written: no value, and the damage naming the file.
 */
export interface LostBase {
  readonly value?: undefined;
  readonly damage: string;
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

const VERSION = 3;
const COMMIT_OFFSET = 8 + 4 + 32 + 8 + 32;
const HEADER_BYTES = COMMIT_OFFSET + 8;
/** A journal is folded into its base once it outgrows this share of the base (and 64 KB), unless its codec says otherwise. */
const COMPACT_RATIO = 1 / 8;
/** Reads that found damage are repeated (a writer may have been between its two writes of an append). */
const READ_ATTEMPTS = 3;
const WITNESS_MAGIC = 'MRKLWTNS';
const SLOT_BYTES = 8 + 6 + 6 + 32 + 16;

/** The base a journal extends: its checksum and the generation that wrote it. */
interface Epoch {
  readonly checksum: Buffer;
  readonly baseGen: number;
}

/** What the witness records: the generation of the last commit and the base its journal extends. */
interface Witness extends Epoch {
  readonly gen: number;
}

/**
 * A journal as read against its base and witness: the epoch to append to and where its intact committed entries
 * end (`epoch` undefined when a new journal is to be written), the generation they reach, its size, and damage.
 */
interface JournalState {
  readonly epoch?: Epoch;
  readonly committed: number;
  readonly size: number;
  readonly gen: number;
  readonly damage?: string;
}

/**
 * A journal file decoded: its header's epoch, its intact committed entries, or damage when its header is bad;
 * `missing` when there is no journal file.
 */
type DecodedJournal<E> = { epoch?: Epoch; entries: E[]; committed: number; size: number; damage?: string; missing?: true };

/** One journaled file: reads it whole, replaces it, or appends a change to it. Callers serialize writers. */
export class JournaledFile<T, E> {
  private base: { key: string; value: T; checksum: Buffer; size: number } | undefined;
  private current: (JournaledRead<T> & { journal: JournalState }) | undefined;
  /** The witness beside the journal (see the module comment). */
  private readonly witnessFile: string;

  constructor(
    private readonly file: string,
    private readonly journalFile: string,
    private readonly codec: JournalCodec<T, E>,
    private readonly backend: HashBackend,
    /** Called after each write of the base file with its bytes (to keep a cache derived from them). */
    private readonly onBaseWritten?: (data: Buffer) => void,
  ) {
    this.witnessFile = `${journalFile.replace(/\.journal$/, '')}.witness`;
  }

  /**
   * Bytes after the committed length of the journal (an append cut short by a crash before it was acknowledged),
   * as read by the last {@link read}: a sentence naming the file, the offset and the size; undefined when none.
   */
  uncommitted(): string | undefined {
    const journal = this.current?.journal;
    if (journal?.epoch === undefined || journal.damage !== undefined || journal.size <= journal.committed) return undefined;
    return `${this.journalFile}: ${journal.size - journal.committed} bytes after the last committed entry (at byte ${journal.committed}) are ignored (an append interrupted before it was acknowledged)`;
  }

  /**
   * The stored value (base with journal applied) and when it was last written; undefined when never written, a
   * {@link LostBase} when the base file is missing though it was written.
   */
  read(): JournaledRead<T> | LostBase | undefined {
    let result: JournaledRead<T> | LostBase | undefined;
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      result = this.readOnce();
      if (result?.damage === undefined) return result;
    }
    return result;
  }

  /** What {@link read} would return, when it would return the value already in memory; otherwise undefined. */
  readIfCached(): JournaledRead<T> | undefined {
    if (this.current === undefined) return undefined;
    const stat = lstatEntry(this.file);
    if (stat === undefined) return undefined;
    const journalStat = lstatEntry(this.journalFile);
    return this.current.key === pairKey(stat, journalStat) ? this.current : undefined;
  }

  /**
   * The journal's entries without decoding the base: for a reader that has what it needs of the base elsewhere (a
   * cache derived from it, see `onBaseWritten`). `header` gets the base file's first bytes (the reader checks that
   * its cache belongs to them); `key` is the one {@link read} would return for the same files, `damage` as there.
   * Undefined before the first write, when the base file is too short to be one, or when a writer replaced it meanwhile.
   */
  readEntries(headerBytes: number): { header: Buffer; entries: E[]; writtenMs: number; key: string; damage?: string } | undefined {
    const stat = lstatEntry(this.file);
    if (stat === undefined || stat.size < headerBytes) return undefined;
    const header = Buffer.alloc(headerBytes);
    const fd = openStoreFile(this.file);
    if (fd === undefined) return undefined;
    try {
      if (readSync(fd, header, 0, headerBytes, 0) !== headerBytes) return undefined;
    } finally {
      closeSync(fd);
    }
    const read = this.readJournal(Buffer.from(this.codec.checksum(header)));
    // A writer that replaced the base meanwhile may have replaced the journal of the header read above.
    const after = lstatEntry(this.file);
    if (read === undefined || after === undefined || statKey(after) !== statKey(stat)) return undefined;
    const { journal, entries, journalStat } = read;
    return { header, entries, writtenMs: writtenMs(stat, journalStat, journal), key: pairKey(stat, journalStat), damage: journal.damage };
  }

  /** Replaces the stored value, with an empty journal: a new generation (see the module comment). */
  write(value: T): void {
    const data = this.codec.encode(value);
    const checksum = Buffer.from(this.codec.checksum(data));
    const witness = this.readWitness();
    const firstWrite = !entryExists(this.file) && firstWriteCut(witness, entryExists(this.journalFile));
    const gen = firstWrite ? 1 : Math.max(this.current?.journal.gen ?? 0, witness?.gen ?? 0) + 1;
    const epoch = { checksum, baseGen: gen };
    const journal = Buffer.concat([this.header(epoch), this.commitRecord(HEADER_BYTES)]);
    const slot = this.witnessSlot({ ...epoch, gen });
    writeFileAtomicSync(this.witnessFile, Buffer.concat([slot, slot]));
    writeFileAtomicSync(this.file, data);
    writeFileAtomicSync(this.journalFile, journal);
    this.onBaseWritten?.(data);
    // The value just written is the value in memory: the next read need not decode it again.
    const stat = lstatSync(this.file);
    const journalStat = lstatSync(this.journalFile);
    this.base = { key: statKey(stat), value, checksum, size: data.length };
    const state = { epoch, committed: HEADER_BYTES, size: journal.length, gen };
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
    const length = journal?.epoch === undefined ? HEADER_BYTES : journal.committed;
    const limit = Math.max(64 * 1024, (base?.size ?? 0) * (this.codec.compactRatio ?? COMPACT_RATIO));
    if (base === undefined || journal === undefined || journal.damage !== undefined || length + record.length > limit) {
      this.write(value);
      return;
    }
    const committed = length + record.length;
    const gen = journal.gen + 1;
    const epoch = journal.epoch ?? { checksum: base.checksum, baseGen: journal.gen };
    if (journal.epoch === undefined) {
      // A base write that a crash interrupted before its empty journal: a new one.
      writeFileAtomicSync(this.journalFile, Buffer.concat([this.header(epoch), this.commitRecord(committed), record]));
    } else {
      const fd = openStoreFile(this.journalFile, true);
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
    this.writeWitnessSlot({ ...epoch, gen });
    const stat = lstatSync(this.file);
    const journalStat = lstatSync(this.journalFile);
    const state = { epoch, committed, size: journalStat.size, gen };
    this.current = { value, writtenMs: writtenMs(stat, journalStat, state), key: pairKey(stat, journalStat), journal: state };
  }

  private readOnce(): JournaledRead<T> | LostBase | undefined {
    const stat = lstatEntry(this.file);
    if (stat === undefined) return this.readWithoutBase();
    const baseKey = statKey(stat);
    if (this.base?.key !== baseKey) {
      const data = readStoreFile(this.file);
      if (data === undefined) return this.readOnce(); // removed meanwhile
      this.base = { key: baseKey, value: this.codec.decode(data, this.file), checksum: Buffer.from(this.codec.checksum(data)), size: data.length };
    }
    const cached = this.readIfCached();
    if (cached !== undefined) return cached;
    const base = this.base;
    const read = this.readJournal(base.checksum);
    // A writer's commit between the reads (the witness or the base changed): read again.
    if (read === undefined || statKey(lstatEntry(this.file) ?? stat) !== baseKey) return this.readOnce();
    const { journal, entries, journalStat } = read;
    const value = entries.length === 0 ? base.value : this.codec.apply(base.value, entries, this.journalFile);
    const result = { value, writtenMs: writtenMs(stat, journalStat, journal), key: pairKey(stat, journalStat), damage: journal.damage };
    // An append in progress (or cut short) is not cached: its commit record is rewritten in place, which need not
    // change the journal's size or mtime.
    const settled = journal.epoch === undefined || journal.size === journal.committed;
    this.current = { ...result, key: settled ? result.key : '', journal };
    return result;
  }

  /**
   * A read that found no base file: undefined when none was written (nothing on disk, or the first write cut before
   * its base was renamed into place), else the damage (see the module comment).
   */
  private readWithoutBase(): JournaledRead<T> | LostBase | undefined {
    this.base = undefined;
    this.current = undefined;
    const witnessData = readStoreFile(this.witnessFile);
    const journalExists = entryExists(this.journalFile);
    // A first write renames its base into place before it writes the journal: a base there now was not lost.
    if (entryExists(this.file)) return this.readOnce();
    const witness = witnessData === undefined ? undefined : this.parseWitness(witnessData);
    if (witnessData === undefined ? !journalExists : firstWriteCut(witness, journalExists)) return undefined;
    const shown =
      witness !== undefined
        ? `${this.witnessFile} records a base written at generation ${witness.baseGen} and commits up to generation ${witness.gen}`
        : `${this.journalFile} is there, and is only ever written after ${this.file}`;
    return { damage: `${this.file} is missing: ${shown}, so everything stored in it is lost (the answer is that of a store where it was never written)` };
  }

  /**
   * The journal on disk read against a base checksum and the witness (see the module comment): the entries that
   * apply, the journal's state and its stat; undefined when the witness changed during the read (a writer's commit).
   */
  private readJournal(checksum: Buffer): { journal: JournalState; entries: E[]; journalStat: Stats | undefined } | undefined {
    const witnessBefore = readStoreFile(this.witnessFile);
    const journalStat = lstatEntry(this.journalFile);
    const data = journalStat === undefined ? undefined : readStoreFile(this.journalFile);
    const witnessAfter = readStoreFile(this.witnessFile);
    if (witnessBefore === undefined ? witnessAfter !== undefined : witnessAfter === undefined || !witnessBefore.equals(witnessAfter)) return undefined;
    const decoded: DecodedJournal<E> =
      data === undefined
        ? { entries: [], committed: 0, size: 0, missing: true, damage: `${this.journalFile} is missing: every change journaled since ${this.file} was last written is lost (the answer is that of ${this.file} alone)` }
        : this.decodeJournal(data);
    const { journal, entries } = this.reconcile(checksum, decoded, witnessBefore);
    return { journal, entries, journalStat: data === undefined ? undefined : journalStat };
  }

  /** Tells damage from a crash across base, journal and witness (see the module comment). */
  private reconcile(checksum: Buffer, decoded: DecodedJournal<E>, witnessData: Buffer | undefined): { journal: JournalState; entries: E[] } {
    const witness = witnessData === undefined ? undefined : this.parseWitness(witnessData);
    const extendsBase = decoded.epoch !== undefined && decoded.epoch.checksum.equals(checksum);
    const gen = decoded.epoch === undefined ? 0 : decoded.epoch.baseGen + decoded.entries.length;
    // An append continues the journal's own generations; a new journal, the witness's.
    const state = (damage: string | undefined, epoch = extendsBase ? decoded.epoch : undefined) => ({
      journal: { epoch, committed: decoded.committed, size: decoded.size, gen: epoch === undefined ? Math.max(gen, witness?.gen ?? 0) : gen, damage },
      entries: epoch === undefined ? [] : decoded.entries,
    });
    if (witness === undefined) {
      const what = witnessData === undefined ? 'is missing' : 'is damaged (neither of its slots is intact)';
      const lost = `${this.witnessFile} ${what}, so an older copy of ${this.file} or ${this.journalFile} put in place of the last one can no longer be told`;
      return state(decoded.damage === undefined ? lost : `${decoded.damage}; ${lost}`);
    }
    if (!checksum.equals(witness.checksum)) {
      // A base write interrupted after its witness, before its base: the journal on disk is the last one, intact.
      if (extendsBase && witness.gen === witness.baseGen && gen === witness.gen - 1) return state(decoded.damage);
      return state(
        `${this.file} is not the base of the last commit (${this.witnessFile} records generation ${witness.gen}, extending a base written at generation ${witness.baseGen}): it was replaced, e.g. by an older copy, so the changes written since it are lost (the answer is that of ${this.file}${extendsBase ? ` with ${this.journalFile}` : ' alone'})`,
      );
    }
    if (!extendsBase || decoded.epoch!.baseGen !== witness.baseGen) {
      // A base write interrupted (or, in another process, not yet done) before its empty journal replaced the last
      // one, or before the first one was written: the base holds everything.
      if (witness.gen === witness.baseGen && (decoded.damage === undefined || decoded.missing)) return state(undefined, undefined);
      if (decoded.damage !== undefined) return state(decoded.damage, undefined);
      return state(
        `${this.journalFile} does not extend ${this.file} as written at generation ${witness.baseGen} (it extends ${extendsBase ? `the same base as written at generation ${decoded.epoch!.baseGen}` : 'another base'}): it was replaced, e.g. by an older copy, so the ${witness.gen - witness.baseGen} changes journaled since ${this.file} was written are lost (the answer is that of ${this.file} alone)`,
        undefined,
      );
    }
    if (decoded.damage === undefined && gen < witness.gen) {
      return state(
        `${this.journalFile} is older than the last commit: its entries reach generation ${gen} and ${this.witnessFile} records ${witness.gen}, so it was replaced, e.g. by an older copy, and the last ${witness.gen - gen} acknowledged changes are lost`,
      );
    }
    return state(decoded.damage);
  }

  private header(epoch: Epoch): Buffer {
    const out = Buffer.alloc(COMMIT_OFFSET);
    out.write(this.codec.magic, 0, 8, 'latin1');
    out.writeUInt32BE(VERSION, 8);
    epoch.checksum.copy(out, 12);
    out.writeUIntBE(epoch.baseGen, 46, 6);
    this.backend.digest(out.subarray(0, 52)).copy(out, 52);
    return out;
  }

  /** The committed length and its check (the first 4 bytes of its BLAKE3), so that a damaged one is told. */
  private commitRecord(length: number): Buffer {
    const out = Buffer.alloc(8);
    out.writeUInt32BE(length, 0);
    this.backend.digest(out.subarray(0, 4)).copy(out, 4, 0, 4);
    return out;
  }

  private decodeJournal(data: Buffer): DecodedJournal<E> {
    const lost = (what: string, epoch: Epoch | undefined, entries: E[], committed: number): DecodedJournal<E> => ({
      epoch,
      entries,
      committed,
      size: data.length,
      damage: `${this.journalFile} is damaged: ${what}`,
    });
    const epoch = data.length < HEADER_BYTES ? undefined : { checksum: Buffer.from(data.subarray(12, 44)), baseGen: data.readUIntBE(46, 6) };
    if (epoch === undefined || data.readUInt16BE(44) !== 0 || !data.subarray(0, COMMIT_OFFSET).equals(this.header(epoch))) {
      return lost(`its header is not an intact format-${VERSION} ${this.codec.magic} header, so every change journaled since ${this.file} was last written is lost`, undefined, [], 0);
    }
    const commit = data.subarray(COMMIT_OFFSET, HEADER_BYTES);
    const committed = commit.readUInt32BE(0);
    const commitIntact = commit.equals(this.commitRecord(committed));
    // Entries are parsed up to the committed length, and never past the bytes read: a journal cut at an entry's
    // start (or read while an append that the commit record already counts was still landing) ends there.
    const end = Math.min(commitIntact ? committed : data.length, data.length);
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
      return lost(`its committed length (bytes ${COMMIT_OFFSET}-${HEADER_BYTES}) fails its check; the ${entries.length} intact entries up to byte ${o} are applied, and any committed after them are lost`, epoch, entries, o);
    }
    if (o < committed) {
      const missing = committed > data.length ? `, of which ${committed - data.length} are missing (the file was cut)` : '';
      return lost(`committed bytes ${o}-${committed} (${committed - o} bytes${missing}) fail their checksum, so the changes they held and any after them are lost; ${entries.length} intact entries before them are applied`, epoch, entries, o);
    }
    return { epoch, entries, committed, size: data.length };
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

  private witnessSlot(witness: Witness): Buffer {
    const out = Buffer.alloc(SLOT_BYTES);
    out.write(WITNESS_MAGIC, 0, 8, 'latin1');
    out.writeUIntBE(witness.gen, 8, 6);
    out.writeUIntBE(witness.baseGen, 14, 6);
    witness.checksum.copy(out, 20);
    this.backend.digest(out.subarray(0, 52)).copy(out, 52, 0, 16);
    return out;
  }

  /** The witness's intact slot of the higher generation; undefined when neither is intact. */
  private parseWitness(data: Buffer): Witness | undefined {
    let best: Witness | undefined;
    for (let o = 0; o + SLOT_BYTES <= data.length && o < 2 * SLOT_BYTES; o += SLOT_BYTES) {
      const slot = data.subarray(o, o + SLOT_BYTES);
      const witness = { gen: slot.readUIntBE(8, 6), baseGen: slot.readUIntBE(14, 6), checksum: Buffer.from(slot.subarray(20, 52)) };
      if (slot.equals(this.witnessSlot(witness)) && (best === undefined || witness.gen > best.gen)) best = witness;
    }
    return best;
  }

  private readWitness(): Witness | undefined {
    const data = readStoreFile(this.witnessFile);
    return data === undefined ? undefined : this.parseWitness(data);
  }

  /**
   * An append's write of the witness: the slot of its generation, in place and without fsync (see the module
   * comment: a witness that lags behind the journal is a crash, and the other slot survives a torn write).
   */
  private writeWitnessSlot(witness: Witness): void {
    const fd = openStoreFile(this.witnessFile, true);
    try {
      writeSync(fd, this.witnessSlot(witness), 0, SLOT_BYTES, (witness.gen % 2) * SLOT_BYTES);
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Whether a witness without a base is the first write's, cut before its base was renamed into place (see the module
 * comment): generation 1, a base write's first step, and no journal yet.
 */
function firstWriteCut(witness: Witness | undefined, journalExists: boolean): boolean {
  return witness !== undefined && witness.gen === 1 && witness.baseGen === 1 && !journalExists;
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
