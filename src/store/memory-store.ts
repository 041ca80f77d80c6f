import { closeSync, existsSync, fstatSync, lstatSync, promises as fsp, readSync } from 'node:fs';
import { join } from 'node:path';
import { NotRegularFileError, openIfExists, valueKind, readTextIfExists, readTextIfExistsSync, removeDeadTemps, writeFileAtomic, writeJsonAtomic } from '../fs/index.js';
import { sharedHashBackend, type HashBackend } from '../hash/blake3.js';
import { openSealed, sealJson } from '../hash/sealed.js';
import { InvalidIdError, LockError, MemoryFolderError, MemoryStoreError, describeIssues } from './errors.js';
import { KeywordIndex, tokenize, type KeywordIndexFile } from './keyword-index.js';
import { itemsFingerprint } from './memory-fingerprint.js';
import type { FileLock } from '../fs/index.js';
import { acquireLock } from './lock.js';
import { assertValidId, isValidId, memoryDirProblem, memoryItemPath, memoryPaths, type MemoryPaths } from './paths.js';
import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { MemoryItemSchema, durabilityOf, type Durability, type MemoryItem } from './types.js';

/**
 * The stored form of a memory item (shared by the memory stores): `createdAt` filled when absent, validated (a
 * {@link MemoryStoreError} naming the field), the id checked (an InvalidIdError for one that is not an id, or that
 * looks like a secret), and everything but the id and times redacted.
 */
export function prepareMemoryItem(input: MemoryItemInput, redactor: Redactor): MemoryItem {
  const item = input !== null && typeof input === 'object' && input.createdAt === undefined ? { ...input, createdAt: Date.now() } : input;
  const parsed = MemoryItemSchema.safeParse(item);
  if (!parsed.success) throw new MemoryStoreError(`invalid memory item ${JSON.stringify(item?.id)}: ${describeIssues(parsed.error, '(item)')}`);
  const valid = parsed.data;
  assertValidId(valid.id, 'memory id');
  // The id names the item's file and is written in the index as it is (never redacted), as run ids are.
  if (redactor.holdsSecret(valid.id)) {
    throw new InvalidIdError('memory id', redactor.redactText(valid.id), 'it looks like a secret: a memory id names its file and is written in the index as it is, never redacted; choose another');
  }
  const { id, createdAt, updatedAt, ...rest } = valid;
  const { value } = redactor.redact(rest);
  const out: MemoryItem = { id, ...value, createdAt };
  if (updatedAt !== undefined) out.updatedAt = updatedAt;
  return out;
}

/** What the runtime, the CLI and the studio need from long-term memory: the file store and the Postgres one. */
export interface Memory {
  /**
   * Writes (or replaces) one item, redacted as everything stored is; `createdAt` is filled with the current time when
   * the item has none. An invalid item (or an id that looks like a secret) is refused before anything is written.
   */
  write(item: MemoryItemInput): Promise<void>;
  /** Writes several items at once; every item is validated before any is written. */
  writeMany(items: MemoryItemInput[]): Promise<void>;
  /** The item with `id` as stored (redacted), or null when there is none; a damaged item is an error naming it. */
  get(id: string): Promise<MemoryItem | null>;
  /** Deletes the item with `id`; resolves to whether it existed. */
  delete(id: string): Promise<boolean>;
  /**
   * The `topK` items best matching `query` (BM25 over their keywords and text), best first, ties by id, with their
   * scores. A damaged or missing item is skipped with a warning naming it (to `options.onWarning` when given), and
   * the next best takes its place.
   */
  searchScored(query: string, topK: number, options?: MemorySearchOptions): Promise<ScoredMemoryItem[]>;
  /** {@link searchScored}'s items without their scores (warnings go to the process). */
  search(query: string, topK: number): Promise<MemoryItem[]>;
  /**
   * Waits for the writes in progress. A Postgres memory's connections belong to the run store it was made from:
   * closing that store releases them.
   */
  close(): Promise<void>;
}

/** Options of a memory search. */
export interface MemorySearchOptions {
  /**
   * Hears what the search skipped (a damaged item, an item the index lists whose file is gone), each message naming
   * it, instead of a process warning (`MemoryStoreCorruptItem`, `MemoryStoreMissingItem`): for a caller that shows
   * them with the results (the Studio).
   */
  onWarning?: (message: string) => void;
}

/**
 * Reports what a search skipped: to the caller's `onWarning` when given (see {@link MemorySearchOptions}), else as a
 * process warning of `type`.
 */
export function warnSkipped(message: string, type: 'MemoryStoreCorruptItem' | 'MemoryStoreMissingItem', onWarning: ((message: string) => void) | undefined): void {
  if (onWarning) onWarning(message);
  else process.emitWarning(message, type);
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  dataDir: string;
  /** `'always'`/`'batch'` (default) fsync item and index files; `'never'` does not (writes stay atomic). */
  durability?: Durability;
  /** How long a write waits for another process holding the memory lock (default 10,000 ms). */
  lockTimeoutMs?: number;
  /** Secrets of your own to redact, on top of the built-in catalogue (see the README's Redaction section). */
  redaction?: RedactionOptions;
}

/** What {@link MemoryStore.write} takes: a memory item whose `createdAt` the store fills when absent. */
export type MemoryItemInput = Omit<MemoryItem, 'createdAt'> & { createdAt?: number };

/** One page of {@link MemoryStore.listAll}: items by id; `next` is the `after` of the next page (absent on the last). */
export interface MemoryPage {
  items: MemoryItem[];
  next?: string;
}

/**
 * Which items {@link MemoryStore.deleteWhere} deletes: those matching every criterion given (at least one).
 */
export interface MemoryFilter {
  /** Only items with one of these ids. */
  ids?: readonly string[];
  /** Only items created before this time (a Date, or ms since the epoch). */
  createdBefore?: Date | number;
  /** Only items whose metadata has each of these entries (compared as JSON). */
  metadata?: Record<string, unknown>;
  /** Only items with this keyword (exact). */
  keyword?: string;
}

/** A search hit with its BM25 score. */
export interface ScoredMemoryItem {
  item: MemoryItem;
  score: number;
}

/**
 * keyword.json's data: the index, the generation that wrote it, each item's checksum and the fingerprint of items/
 * when it was written (see {@link MemoryStore}; absent from an index of an earlier version).
 */
interface MemoryIndexFile extends KeywordIndexFile {
  gen: number;
  sums: Record<string, string>;
  items?: string;
}

/** An item read from its file, with its checksum (empty for a plain file) and generation. */
interface ReadItem {
  item: MemoryItem;
  sum: string;
  gen: number;
}

/**
 * The head of keyword.json that {@link MemoryStore} reads to tell one version from another: the seal's checksum and
 * the start of the data, where the generation comes first (an index written before that has none there).
 */
const INDEX_HEAD_BYTES = 128;
const GEN_AT_HEAD = /^\{"checksum":"[0-9a-f]{64}","data":\{"gen":(\d+)[,}]/;

/** Where the checksum's hex starts in a sealed file as written, and how much of it the index keeps. */
const SEAL_START = '{"checksum":"';
const SUM_AT = SEAL_START.length;
const SUM_LENGTH = 16;

/**
 * The checksum an index records for a sealed item file (the start of its seal's checksum: it tells versions of one
 * item apart, which 64 bits do).
 */
function sumOf(sealed: string): string {
  return sealed.slice(SUM_AT, SUM_AT + SUM_LENGTH);
}

/** The tokens an item is indexed under: its content's and its keywords'. */
export function tokensOf(item: MemoryItem): string[] {
  const tokens = tokenize(item.content);
  for (const keyword of item.keywords ?? []) tokens.push(...tokenize(keyword));
  return tokens;
}

/**
 * The text of one of the memory's own files (keyword.json, its witness, the pending record, an item being deleted):
 * undefined when it is missing, `{ notRegular }` (why) when something else than a regular file is in its place (a
 * link, a FIFO), which the callers take for a damaged file (the index is rebuilt from the items), never read through.
 */
async function indexFileText(path: string): Promise<string | undefined | { notRegular: string }> {
  try {
    return await readTextIfExists(path);
  } catch (error) {
    if (error instanceof NotRegularFileError) return { notRegular: error.message };
    throw error;
  }
}

/** {@link indexFileText}'s open, for a stamp: the descriptor, undefined when missing, or a stamp of its own for a non-regular file. */
function openedIndexFile(path: string): number | undefined | string {
  try {
    return openIfExists(path);
  } catch (error) {
    if (error instanceof NotRegularFileError) return `not a regular file: ${error.what}`;
    throw error;
  }
}

/**
 * Long-term memory shared by runs: items in `memory/shared/items/<id>.json`, an inverted index in
 * `memory/shared/index/keyword.json`, searched by BM25 (see keyword-index.ts).
 *
 * The index lives in memory after the first use and is rewritten atomically after each write or delete (one
 * rewrite per {@link writeMany}). Each operation first records the ids it changes in `index/pending.json` and
 * removes that record once the index is rewritten; on load, a record left by a crash gets those items re-indexed
 * as they are on disk. A missing or corrupt index (or record) is rebuilt from all the items.
 * Items are redacted (content, keywords, metadata) before they are written.
 * Every write or delete runs under the memory lock (`index/keyword.lock`, waiting up to `lockTimeoutMs` for
 * another process to finish), and first reloads the index if another process rewrote keyword.json since this
 * store read it (compared by the generation at the head of the file, with its inode, size and mtime), or if an
 * operation of another process was cut (`pending.json` is there: that process died, and this store took over its
 * lock); searches reload it too. So several processes can share one memory without losing each other's writes.
 *
 * Damage is never answered in silence. Item files and keyword.json are sealed with their BLAKE3 checksum
 * (`{"checksum": ..., "data": ...}`, see hash/sealed.ts), and an item must hold the id its file is named after. An item
 * that fails this is skipped by search and listings with a `MemoryStoreCorruptItem` warning naming its file (and is
 * an error from {@link get}); an item the index lists whose file is gone gets a `MemoryStoreMissingItem` warning; a
 * keyword.json that fails its checksum is rebuilt from the items, which are the truth, with a `MemoryStoreIndex`
 * warning.
 *
 * A file put back to an older sealed copy of itself is caught by generations. Every operation that writes takes the
 * next store-wide generation; each item file holds the generation that wrote it (a `gen` field beside the item's), and
 * keyword.json the generation that wrote it with each item's checksum. After keyword.json, `index/generation.json`
 * is written with the same generation, as a witness. So an item whose checksum is not the one keyword.json records
 * is an older copy when its generation is not above the index's (a `MemoryStoreCorruptItem` warning naming it, and
 * skipped, as is an item the index does not list, deleted since its generation); one above it was written after the
 * index (by an operation under way, or the index is the older copy). keyword.json with a generation below the
 * witness's is an older copy, rebuilt from the items with a `MemoryStoreIndex` warning; the items then keep their
 * judgement against it, which still holds (an item not rewritten since must be as it recorded). Both put back
 * together, the index's fingerprint of items/ tells (see memory-fingerprint.ts): keyword.json records the fingerprint
 * of the folder as the operation that wrote it left it, and a load (not a search of a loaded index) compares it with
 * the folder's (a listing of its names and a stat); when they differ and no operation under way explains it, the items
 * are read once and those written after the index (a generation above it) are indexed, with a `MemoryStoreIndex`
 * warning naming them (none when there are none: a folder copied elsewhere); the other items keep their judgement
 * when read (an older copy put back, a file gone). Failing that (an item rewritten in the same clock tick as the index
 * was written), the first item read newer than the index while no other operation is under way tells, and the index
 * is rebuilt. What cannot be told: an item and keyword.json (and the witness) all put back to copies of one time.
 *
 * Files written before seals (plain JSON) still read while keyword.json is plain too (and no witness exists): such
 * an item is taken as it is and sealed at the next operation that holds the memory lock; such an index is not
 * trusted but rebuilt from the items, and each item it disagrees with gets a `MemoryStoreMismatch` warning naming
 * both files (one of the two was edited). Once the memory is sealed, a plain item is damage. Sealed items and
 * indexes written before generations read as generation 0 and an index to rebuild, and are rewritten alike.
 */
export class MemoryStore implements Memory {
  readonly paths: MemoryPaths;
  private readonly fsync: boolean;
  private readonly lockTimeoutMs: number;
  private index: KeywordIndex | undefined;
  /** Identity of the keyword.json the in-memory index matches (see stampOf). */
  private indexStamp: string | undefined;
  private loading: Promise<KeywordIndex> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly redactor: Redactor;
  /** Items read from files in an earlier format, by id, with the text read: rewritten by the next {@link endChange}. */
  private readonly toSeal = new Map<string, { text: string; item: MemoryItem }>();
  /** The generation of the loaded index (see the class comment), and what it knows of each item: its checksum. */
  private gen = 0;
  private sums = new Map<string, string>();
  /** Whether the loaded index judges items (false for an index written before generations, being rebuilt). */
  private judging = false;
  /** Whether the memory predates seals (plain keyword.json, no witness): plain items are then taken as they are. */
  private legacy = false;
  /** Set when an item told that keyword.json is an older copy: the next load rebuilds it from the items. */
  private distrust = false;

  /** Opens nothing yet: the index is loaded (or rebuilt) on first use. */
  constructor(options: MemoryStoreOptions) {
    this.paths = memoryPaths(options.dataDir);
    this.fsync = durabilityOf(options, 'MemoryStore') !== 'never';
    this.lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.redactor = redactorFor(options.redaction);
  }

  /**
   * What tells one keyword.json from another: the generation that wrote it (read from the head of the file, where
   * {@link endChange} puts it; each write under the lock takes a new one) with its inode, size and mtime, all of one
   * open file. The stat alone could match a different file: a file system reuses an inode number, and two rewrites in
   * one clock tick of an index of one size have the same mtime and size. Undefined when there is no keyword.json.
   */
  private stampOf(path: string): string | undefined {
    const fd = openedIndexFile(path);
    if (typeof fd === 'string') return fd;
    if (fd === undefined) return undefined;
    try {
      const stat = fstatSync(fd);
      const head = Buffer.allocUnsafe(INDEX_HEAD_BYTES);
      const n = readSync(fd, head, 0, INDEX_HEAD_BYTES, 0);
      const gen = GEN_AT_HEAD.exec(head.toString('latin1', 0, n))?.[1] ?? '-';
      return `${stat.ino}:${stat.size}:${stat.mtimeMs}:${gen}`;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * The index, reloaded when keyword.json changed since it was read (another process wrote). With `locked` (the
   * memory lock is this store's), also when `index/pending.json` is there: an operation of another process was cut
   * (it died holding the lock, which this store then took over) after changing items, maybe before it rewrote
   * keyword.json, so the index in memory may not know what is on disk; the load re-indexes the ids it records.
   */
  private async currentIndex(locked: boolean): Promise<KeywordIndex> {
    this.assertFolders();
    for (;;) {
      if (this.index !== undefined && this.stampOf(this.paths.keywordIndex) === this.indexStamp && !(locked && existsSync(this.pendingPath))) return this.index;
      if (this.loading === undefined) {
        this.loading = this.readOrRebuildIndex(locked).finally(() => (this.loading = undefined));
        return this.loading;
      }
      // A load of this store under way (a search's) serves a search; a write checks again after it, since that load
      // may have begun before the cut operation's changes, or could not take the lock to persist its repair.
      const index = await this.loading;
      if (!locked) return index;
    }
  }

  /**
   * Throws a {@link MemoryFolderError} naming the entry unless every folder of the memory that exists is a real
   * directory (see memoryDirProblem): every operation checks before it reads, and a write before it creates or
   * locks anything, so that nothing is read, written or deleted outside the data directory through a planted link.
   */
  private assertFolders(): void {
    const problem = memoryDirProblem(this.paths);
    if (problem !== undefined) throw new MemoryFolderError(problem.path, problem.what);
  }

  private async listItemFiles(): Promise<string[]> {
    try {
      return (await fsp.readdir(this.paths.itemsDir)).filter((n) => n.endsWith('.json') && isValidId(n.slice(0, -'.json'.length)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  private async readOrRebuildIndex(locked: boolean): Promise<KeywordIndex> {
    const backend = await sharedHashBackend();
    // The witness first: written after keyword.json, it is never ahead of the keyword.json read next unless put back.
    const witness = await this.readWitness();
    const stamp = this.stampOf(this.paths.keywordIndex);
    const text = await indexFileText(this.paths.keywordIndex);
    if (typeof text === 'object') process.emitWarning(`rebuilding corrupt memory index ${this.paths.keywordIndex}: ${text.notRegular}`, 'MemoryStoreIndex');
    const stored = typeof text === 'string' ? this.openIndex(text, backend) : undefined;
    const pending = await this.readPending();
    this.indexStamp = stamp;
    this.legacy = witness === undefined && (text === undefined || (stored !== undefined && !stored.sealed));
    const known = stored?.known;
    let stale = this.distrust;
    this.distrust = false;
    if (witness === 'corrupt') {
      process.emitWarning(`rebuilding memory index ${this.paths.keywordIndex}: its witness ${this.witnessPath} is damaged`, 'MemoryStoreIndex');
      stale = true;
    } else if (witness !== undefined && known !== undefined && known.gen < witness) {
      process.emitWarning(
        `memory index ${this.paths.keywordIndex} is older than the memory (generation ${known.gen}, ${this.witnessPath} says ${witness}): an older copy put back? rebuilding it from the items`,
        'MemoryStoreIndex',
      );
      stale = true;
    }
    // Items are judged against what the index read knows, even when it is an older copy (see the class comment).
    this.gen = known?.gen ?? 0;
    this.sums = new Map(known?.sums ?? []);
    this.judging = known !== undefined;
    let newest = Math.max(this.gen, typeof witness === 'number' ? witness : 0);
    const record = (target: KeywordIndex, id: string, found: ReadItem): void => {
      target.set(id, tokensOf(found.item));
      this.sums.set(id, found.sum);
      newest = Math.max(newest, found.gen);
    };
    let index = known !== undefined && !stale ? stored!.index : undefined;
    if (index !== undefined && pending === undefined) {
      if (await this.knowsItems(known!.items, locked, backend)) return (this.index = index);
      // items/ is not as the index recorded it, and no operation under way explains it: the items written after the
      // index are indexed. The rest keeps its judgement when read (an item put back, one whose file is gone).
      const caughtUp: string[] = [];
      for (const file of await this.listItemFiles()) {
        const id = file.slice(0, -'.json'.length);
        let found: ReadItem | null;
        try {
          found = this.readItem(id, backend);
        } catch (error) {
          if (!(error instanceof MemoryStoreError)) throw error;
          continue; // damage, said when a search or a listing reads it, as before
        }
        if (found === null || this.sums.get(id) === found.sum) continue;
        record(index, id, found);
        caughtUp.push(id);
      }
      if (caughtUp.length > 0) this.warnCaughtUp(caughtUp);
    } else if (index !== undefined && pending !== undefined && pending !== 'corrupt') {
      // A crash interrupted an operation on these items: index them as they are on disk now.
      for (const id of pending) {
        const found = this.readItemOrSkip(id, backend);
        if (typeof found === 'object') record(index, id, found);
        else index.delete(id);
      }
    } else {
      const rebuilt = new KeywordIndex();
      const before = this.sums;
      this.sums = new Map();
      const unread = new Set<string>(Array.isArray(pending) ? pending : []);
      for (const file of await this.listItemFiles()) {
        const id = file.slice(0, -'.json'.length);
        const found = this.readItemOrSkip(id, backend, before);
        if (typeof found === 'object') record(rebuilt, id, found);
        else unread.add(id);
      }
      // An index written by an earlier version is not trusted, but it tells which items were edited since (unless a
      // crash left a damaged record, when the items it was changing are unknown).
      if (stored !== undefined && known === undefined && pending !== 'corrupt') this.reportDisagreements(stored.index, rebuilt, unread);
      index = rebuilt;
    }
    for (const id of this.sums.keys()) if (!index.has(id)) this.sums.delete(id);
    this.gen = newest;
    this.judging = true;
    this.index = index;
    if (text !== undefined || pending !== undefined || index.size > 0) await this.persistRepair(index, locked);
    return index;
  }

  /**
   * The index in keyword.json's text, whether it was sealed, and (from an index written with generations) its
   * generation and item checksums; undefined, with a `MemoryStoreIndex` warning, when it fails its checksum or is not
   * a consistent index.
   */
  private openIndex(text: string, backend: HashBackend): { index: KeywordIndex; sealed: boolean; known?: { gen: number; sums: Map<string, string>; items: string | undefined } } | undefined {
    const opened = openSealed(text, backend, true);
    try {
      if (!opened.ok) throw new Error(opened.problem);
      const index = KeywordIndex.fromJSON(opened.data);
      const { gen, sums, items } = opened.data as Partial<MemoryIndexFile>;
      if (!opened.sealed || gen === undefined) return { index, sealed: opened.sealed };
      if (!Number.isInteger(gen) || gen < 0 || typeof sums !== 'object' || sums === null) throw new Error('bad generation or checksums');
      const entries = Object.entries(sums);
      if (entries.length !== index.size || entries.some(([id, sum]) => !index.has(id) || typeof sum !== 'string')) throw new Error('the checksums do not match the documents');
      return { index, sealed: true, known: { gen, sums: new Map(entries), items: typeof items === 'string' ? items : undefined } };
    } catch (error) {
      process.emitWarning(`rebuilding corrupt memory index ${this.paths.keywordIndex}: ${(error as Error).message}`, 'MemoryStoreIndex');
      return undefined;
    }
  }

  /**
   * Whether items/ is as the loaded index recorded it (its fingerprint `recorded`), or differs only by what an
   * operation under way explains (another process writing: its index follows). With `locked`, this store holds the
   * memory lock (no one else writes).
   */
  private async knowsItems(recorded: string | undefined, locked: boolean, backend: HashBackend): Promise<boolean> {
    const now = itemsFingerprint(this.paths.itemsDir, await this.listItemFiles(), backend);
    return now === recorded || this.changedMeanwhile(locked);
  }

  /** Warns (`MemoryStoreIndex`) that the index did not know items written after it, `ids`, now indexed. */
  private warnCaughtUp(ids: string[]): void {
    const named = `${ids.slice(0, 10).join(', ')}${ids.length > 10 ? `, and ${ids.length - 10} more` : ''}`;
    process.emitWarning(
      `memory index ${this.paths.keywordIndex} is older than the items in ${this.paths.itemsDir}: it did not know ${ids.length} item(s) written after it (${named}), ` +
        'now indexed (an older copy of the index put back?)',
      'MemoryStoreIndex',
    );
  }

  /** The generation in `index/generation.json` (see the class comment); undefined when absent. */
  private async readWitness(): Promise<number | undefined | 'corrupt'> {
    const text = await indexFileText(this.witnessPath);
    if (text === undefined) return undefined;
    if (typeof text === 'object') return 'corrupt';
    try {
      const gen = (JSON.parse(text) as { gen?: unknown }).gen;
      if (typeof gen === 'number' && Number.isInteger(gen) && gen >= 0) return gen;
    } catch {
      // fall through
    }
    return 'corrupt';
  }

  private get witnessPath(): string {
    return join(this.paths.indexDir, 'generation.json');
  }

  /**
   * Compares an index written by an earlier version (before seals or generations) with the one rebuilt from the items, and warns about each item they
   * disagree on, except those in `skip` (damaged items, already warned about, and items a crash left pending).
   */
  private reportDisagreements(old: KeywordIndex, rebuilt: KeywordIndex, skip: ReadonlySet<string>): void {
    const before = old.signatures();
    const now = rebuilt.signatures();
    for (const [id, signature] of before) {
      if (skip.has(id) || now.get(id) === signature) continue;
      if (now.has(id)) this.warnMismatch(id);
      else process.emitWarning(this.lostMessage(id), 'MemoryStoreMissingItem');
    }
    for (const id of now.keys()) if (!before.has(id) && !skip.has(id)) this.warnMismatch(id);
  }

  private warnMismatch(id: string): void {
    process.emitWarning(
      `memory item ${memoryItemPath(this.paths, id)} does not match the memory index ${this.paths.keywordIndex} written by an earlier version: one of them was edited or put back; the index is rebuilt from the items`,
      'MemoryStoreMismatch',
    );
  }

  private lostMessage(id: string): string {
    return `memory item ${memoryItemPath(this.paths, id)} is missing, though the memory index ${this.paths.keywordIndex} lists it (deleted outside the store?); delete('${id}') drops it from the index`;
  }

  /** Warns that an item the index lists has no file, unless an operation of another process under way explains it. */
  private warnLost(id: string, onWarning?: (message: string) => void): void {
    if (!this.changedMeanwhile()) warnSkipped(this.lostMessage(id), 'MemoryStoreMissingItem', onWarning);
  }

  /**
   * Whether an operation (of another process) changed the memory since the index was read, or is under way. With
   * `locked`, the memory lock is this store's own: it tells nothing of others.
   */
  private changedMeanwhile(locked = false): boolean {
    return this.stampOf(this.paths.keywordIndex) !== this.indexStamp || existsSync(this.pendingPath) || (!locked && existsSync(this.lockPath));
  }

  /**
   * The item read, after noting whether it tells that the index is an older copy: an item written after the index
   * (a generation above it) while no operation explains it (see the class comment). The index is then rebuilt at
   * the next use, with a `MemoryStoreIndex` warning naming both files.
   */
  private served(id: string, found: ReadItem): MemoryItem {
    if (this.judging && found.gen > this.gen && this.sums.get(id) !== found.sum && !this.changedMeanwhile()) {
      process.emitWarning(
        `memory index ${this.paths.keywordIndex} is older than memory item ${memoryItemPath(this.paths, id)} (an older copy put back?); rebuilding it from the items`,
        'MemoryStoreIndex',
      );
      this.distrust = true;
      this.indexStamp = undefined;
    }
    return found.item;
  }

  /** Ids of the operation a crash interrupted (from `index/pending.json`), undefined when none, 'corrupt'. */
  private async readPending(): Promise<string[] | undefined | 'corrupt'> {
    const text = await indexFileText(this.pendingPath);
    if (text === undefined) return undefined;
    if (typeof text === 'object') return 'corrupt';
    try {
      const parsed = JSON.parse(text) as { ids?: unknown };
      if (Array.isArray(parsed.ids) && parsed.ids.every((id) => isValidId(id))) return parsed.ids as string[];
    } catch {
      // fall through
    }
    return 'corrupt';
  }

  private get pendingPath(): string {
    return join(this.paths.indexDir, 'pending.json');
  }

  /**
   * Records the ids an operation is about to change, so that a crash before the index is rewritten is repaired. A
   * record already there (an operation cut by a crash and not repaired yet: a load that could not take the lock to
   * persist its repair) is never dropped: its ids are kept with these, and a damaged one (which makes the next load
   * rebuild the index from every item) is left as it is.
   */
  private async beginChange(ids: string[]): Promise<void> {
    const left = await this.readPending();
    if (left === 'corrupt') return;
    await writeJsonAtomic(this.pendingPath, { ids: left === undefined ? ids : [...new Set([...left, ...ids])] }, { fsync: this.fsync });
  }

  /** Writes an item sealed, with the generation `gen`; resolves to its checksum as the index records it. */
  private async writeItem(item: MemoryItem, gen: number): Promise<string> {
    const bytes = sealJson(JSON.stringify({ ...item, gen }), await sharedHashBackend());
    await writeFileAtomic(memoryItemPath(this.paths, item.id), bytes, { fsync: this.fsync, syncDirectory: this.fsync });
    return sumOf(bytes.toString('latin1', 0, SUM_AT + SUM_LENGTH));
  }

  /**
   * Ends an operation of generation `gen`: rewrites the items read in an earlier format that are still as read, then
   * persists the index, then the witness, and removes the record.
   */
  private async endChange(index: KeywordIndex, gen: number): Promise<void> {
    for (const [id, { text, item }] of this.toSeal) {
      if (readTextIfExistsSync(memoryItemPath(this.paths, id)) === text) this.sums.set(id, await this.writeItem(item, gen));
    }
    this.toSeal.clear();
    this.gen = gen;
    const backend = await sharedHashBackend();
    // items/ as this operation leaves it (every item file written or removed by now): what loads compare it with.
    const items = itemsFingerprint(this.paths.itemsDir, await this.listItemFiles(), backend);
    // The generation first: stampOf reads it from the head of the file.
    const file: MemoryIndexFile = { gen, ...index.toJSON(), sums: Object.fromEntries(this.sums), items };
    await writeFileAtomic(this.paths.keywordIndex, sealJson(JSON.stringify(file), backend), { fsync: this.fsync, syncDirectory: this.fsync });
    this.indexStamp = this.stampOf(this.paths.keywordIndex);
    await writeJsonAtomic(this.witnessPath, { gen }, { fsync: this.fsync });
    this.legacy = false;
    await fsp.rm(this.pendingPath, { force: true });
  }

  /**
   * Persists a repaired index, unless another process holds the memory lock (it persists its own index then) or wrote
   * keyword.json since it was read (its index is newer than this repair).
   */
  private async persistRepair(index: KeywordIndex, locked: boolean): Promise<void> {
    let lock: FileLock | undefined;
    if (!locked) {
      try {
        this.assertFolders();
        await fsp.mkdir(this.paths.indexDir, { recursive: true });
        lock = acquireLock(this.lockPath, 'shared memory');
      } catch (error) {
        if (error instanceof LockError) return;
        throw error;
      }
    }
    try {
      if (locked || this.stampOf(this.paths.keywordIndex) === this.indexStamp) await this.endChange(index, this.gen + 1);
    } catch (error) {
      // A read storing the index it rebuilt is writing a cache: when that fails (a folder in keyword.json's place,
      // no permission, a full disk) the rebuilt index still answers, with a warning; a write fails (see exclusive).
      if (locked || !(error instanceof Error && 'code' in error)) throw error;
      process.emitWarning(`could not store the rebuilt memory index ${this.paths.keywordIndex}: ${error.message}; it is used from memory`, 'MemoryStoreIndex');
    } finally {
      lock?.release();
    }
  }

  /**
   * Throws a {@link MemoryStoreError} naming it when a folder stands where an index file of the memory goes
   * (keyword.json, its witness, the pending record): a change could not write its index over it. Checked under the
   * lock, before anything changes. A link or FIFO there is replaced by the write (never followed), so only a folder
   * is refused; it is not removed, since what is in it is not the store's.
   */
  private assertIndexFilesReplaceable(): void {
    for (const path of [this.paths.keywordIndex, this.witnessPath, this.pendingPath]) {
      if (lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true) {
        throw new MemoryStoreError(`${path} is a folder, where the memory's index file goes: nothing was changed (move the folder away; the index is rebuilt from the items)`, { path });
      }
    }
  }

  private get lockPath(): string {
    return `${this.paths.keywordIndex.slice(0, -'.json'.length)}.lock`;
  }

  /** Whether this store swept items/ of dead processes' temp files already (see lockMemory). */
  #itemsSwept = false;

  /** Takes the memory lock, waiting while a live process holds it, up to `lockTimeoutMs`. */
  private async lockMemory(): Promise<FileLock> {
    this.assertFolders();
    await fsp.mkdir(this.paths.indexDir, { recursive: true });
    const deadline = Date.now() + this.lockTimeoutMs;
    for (;;) {
      try {
        const lock = acquireLock(this.lockPath, 'shared memory');
        // A killed writer's temp files among the items (the lock clears those of its own folder, index/), swept at this
        // store's first write: a listing of items/ costs what the store holds, too much for every write. Housekeeping:
        // a folder it cannot clean does not cost the write.
        if (!this.#itemsSwept) {
          this.#itemsSwept = true;
          try {
            removeDeadTemps(this.paths.itemsDir);
          } catch {
            // left for a later store
          }
        }
        return lock;
      } catch (error) {
        if (!(error instanceof LockError) || error.holder === undefined || Date.now() >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
  }

  /** Runs write operations one at a time, each under the memory lock and on an up-to-date index. */
  private exclusive<T>(op: (index: KeywordIndex) => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      const lock = await this.lockMemory();
      try {
        this.assertIndexFilesReplaceable();
        return await op(await this.currentIndex(true));
      } finally {
        lock.release();
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private prepare(input: MemoryItemInput): MemoryItem {
    return prepareMemoryItem(input, this.redactor);
  }

  /**
   * Writes (or replaces) one item and updates the index. The store fills `createdAt` with the current time when the
   * item has none (a given one is kept); everything else is the caller's.
   */
  async write(item: MemoryItemInput): Promise<void> {
    await this.writeMany([item]);
  }

  /**
   * Writes several items and rewrites the index once. Every item is validated before anything is written;
   * `createdAt` is filled as in {@link write}.
   */
  async writeMany(items: MemoryItemInput[]): Promise<void> {
    this.redactor.renewEnvironment();
    const prepared = items.map((item) => this.prepare(item));
    await this.exclusive(async (index) => {
      await this.beginChange(prepared.map((item) => item.id));
      const gen = this.gen + 1;
      for (const item of prepared) {
        this.sums.set(item.id, await this.writeItem(item, gen));
        index.set(item.id, tokensOf(item));
      }
      await this.endChange(index, gen);
    });
  }

  /**
   * The item with `id`, or null. A file that is not a valid item (not JSON, failing its checksum, holding another
   * id, an older copy put back, plain JSON in a sealed memory) is a {@link MemoryStoreError} naming its path; an item
   * the index lists whose file is gone is null with a `MemoryStoreMissingItem` warning naming the file.
   */
  async get(id: string): Promise<MemoryItem | null> {
    const index = await this.currentIndex(false);
    const found = this.readItem(id, await sharedHashBackend());
    if (found !== null) return this.served(id, found);
    if (index.has(id)) this.warnLost(id);
    return null;
  }

  /**
   * {@link readItem}, except that a damaged item file is skipped ('damaged') with a warning naming it: one damaged
   * item must not make every search, or the rebuild of the index, fail. 'missing' when there is no file.
   */
  private readItemOrSkip(id: string, backend: HashBackend, sums = this.sums, onWarning?: (message: string) => void): ReadItem | 'missing' | 'damaged' {
    try {
      return this.readItem(id, backend, sums) ?? 'missing';
    } catch (error) {
      if (!(error instanceof MemoryStoreError)) throw error;
      warnSkipped(`skipped ${error.message}`, 'MemoryStoreCorruptItem', onWarning);
      return 'damaged';
    }
  }

  /**
   * Reads one item file synchronously: item files are small, and a search reads its top K of them, where K thread-pool
   * round trips would cost more than the ranking itself. The seal is verified (a plain file is taken as it is in a
   * memory written before seals, and damage otherwise), the item validated, its id must be the one its file is named
   * after, and, judged against the index's checksums `sums`, it must not be an older copy (see the class comment).
   * Items in an earlier format are remembered for rewriting.
   */
  private readItem(id: string, backend: HashBackend, sums = this.sums): ReadItem | null {
    const path = memoryItemPath(this.paths, id);
    const corrupt = (problem: string): MemoryStoreError => new MemoryStoreError(`corrupt memory item ${path}: ${problem}`, { path });
    let text: string | undefined;
    try {
      text = readTextIfExistsSync(path);
    } catch (error) {
      // A link, a FIFO or a folder in an item's place is a damaged item, skipped and reported like any other.
      if (error instanceof NotRegularFileError) throw corrupt(`it is ${error.what}, not a regular file, and is not read`);
      throw error;
    }
    if (text === undefined) return null;
    const opened = openSealed(text, backend, true);
    if (!opened.ok) throw corrupt(opened.problem);
    const parsed = MemoryItemSchema.safeParse(opened.data);
    if (!parsed.success) throw corrupt(describeIssues(parsed.error, '(item)'));
    if (parsed.data.id !== id) throw corrupt(`it holds item '${parsed.data.id}', not '${id}' (another item's file copied over it?)`);
    if (!opened.sealed && !this.legacy) throw corrupt('not sealed, though the memory is (plain JSON written over a sealed item?)');
    const current = opened.sealed && 'gen' in (opened.data as object);
    const gen = current ? (opened.data as { gen: unknown }).gen : 0;
    if (typeof gen !== 'number' || !Number.isInteger(gen) || gen < 0) throw corrupt(`bad generation ${JSON.stringify(gen)}`);
    // A sealed file as written starts with its checksum; one reformatted since (still valid) has it hashed again.
    const sum = !opened.sealed ? '' : text.startsWith(SEAL_START) ? sumOf(text) : sumOf(`${SEAL_START}${backend.digest(Buffer.from(JSON.stringify(opened.data))).toString('hex')}`);
    if (this.judging && sums.get(id) !== sum && gen <= this.gen) {
      throw new MemoryStoreError(`memory item ${path}: it is not the version the memory index ${this.paths.keywordIndex} records (an older copy put back?)`, { path });
    }
    if (!current) this.toSeal.set(id, { text, item: parsed.data });
    return { item: parsed.data, sum, gen };
  }

  /** Deletes an item; returns whether it existed. */
  async delete(id: string): Promise<boolean> {
    const path = memoryItemPath(this.paths, id);
    return this.exclusive(async (index) => {
      // Anything in the item's place (a planted link or FIFO too, which is removed, never read) is there to delete;
      // but a folder, which unlink cannot remove, is refused before anything changes, naming it.
      if (lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true) {
        throw new MemoryStoreError(`${path} is a folder, not a memory item: it is not removed (remove it by hand if nothing should be there)`, { path });
      }
      if (!index.has(id) && (await indexFileText(path)) === undefined) return false;
      await this.beginChange([id]);
      const existed = await fsp.unlink(path).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
          return false;
        },
      );
      index.delete(id);
      this.sums.delete(id);
      await this.endChange(index, this.gen + 1);
      return existed;
    });
  }

  /**
   * Every item, a page at a time, in id order: `limit` items (default 100) after the id `after` (exclusive). Paging
   * by id stays correct while others write: an item is never listed twice, and one written meanwhile appears on a
   * later page when its id sorts after the page. A damaged item file is skipped with a warning naming it
   * (`MemoryStoreCorruptItem`), as search does, and an item the index lists in the page's range whose file is gone
   * gets a `MemoryStoreMissingItem` warning.
   */
  async listAll(options: { limit?: number; after?: string } = {}): Promise<MemoryPage> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1) throw new MemoryStoreError(`listAll limit must be an integer >= 1, got ${limit}`);
    if (options.after !== undefined) assertValidId(options.after, 'memory id (after)');
    const index = await this.currentIndex(false);
    const backend = await sharedHashBackend();
    const ids = (await this.listItemFiles()).map((f) => f.slice(0, -'.json'.length)).sort();
    const start = options.after === undefined ? 0 : ids.findIndex((id) => id > options.after!);
    const items: MemoryItem[] = [];
    let i = start < 0 ? ids.length : start;
    for (; i < ids.length && items.length < limit; i++) {
      const found = this.readItemOrSkip(ids[i]!, backend);
      if (typeof found === 'object') items.push(this.served(ids[i]!, found));
    }
    const last = i < ids.length ? ids[i - 1] : undefined;
    const listed = new Set(ids);
    for (const id of index.idList()) {
      if (!listed.has(id) && (options.after === undefined || id > options.after) && (last === undefined || id <= last)) this.warnLost(id);
    }
    return last === undefined ? { items } : { items, next: last };
  }

  /**
   * Deletes every item matching `filter` (a {@link MemoryFilter}, every criterion given must hold, or a predicate) and
   * updates the index once; resolves to the ids deleted, sorted (with `dryRun`, the ids that would be, deleting
   * nothing). Crash-safe like {@link delete}: the ids are recorded before any file goes, so a crash mid-way leaves
   * an index that the next load repairs. A damaged item file cannot be matched and stays (delete it by id).
   */
  async deleteWhere(filter: MemoryFilter | ((item: MemoryItem) => boolean), options: { dryRun?: boolean } = {}): Promise<string[]> {
    const matches = typeof filter === 'function' ? filter : compileFilter(filter);
    return this.exclusive(async (index) => {
      const backend = await sharedHashBackend();
      const doomed: string[] = [];
      for (const file of (await this.listItemFiles()).sort()) {
        const found = this.readItemOrSkip(file.slice(0, -'.json'.length), backend);
        if (typeof found === 'object' && matches(found.item)) doomed.push(found.item.id);
      }
      if (options.dryRun || doomed.length === 0) return doomed;
      await this.beginChange(doomed);
      for (const id of doomed) {
        await fsp.rm(memoryItemPath(this.paths, id), { force: true });
        index.delete(id);
        this.sums.delete(id);
      }
      await this.endChange(index, this.gen + 1);
      return doomed;
    });
  }

  /**
   * The `topK` items best matching `query` by BM25 (ties by id), with their scores. A damaged item file is skipped
   * with a warning naming it (`MemoryStoreCorruptItem`), as is an item the index lists whose file is gone
   * (`MemoryStoreMissingItem`), and the next best item takes its place. `options.onWarning` hears those warnings
   * instead of the process.
   */
  async searchScored(query: string, topK: number, options: MemorySearchOptions = {}): Promise<ScoredMemoryItem[]> {
    if (typeof query !== 'string') throw new MemoryStoreError(`search query must be a string, got ${typeof query}`);
    if (!Number.isInteger(topK) || topK < 0) throw new MemoryStoreError(`search topK must be a non-negative integer, got ${topK}`);
    const index = await this.currentIndex(false);
    const backend = await sharedHashBackend();
    const out: ScoredMemoryItem[] = [];
    let seen = 0;
    for (let want = topK; out.length < topK; want += topK - out.length) {
      const hits = index.search(query, want);
      for (const hit of hits.slice(seen)) {
        const found = this.readItemOrSkip(hit.id, backend, this.sums, options.onWarning);
        if (typeof found === 'object') out.push({ item: this.served(hit.id, found), score: hit.score });
        else if (found === 'missing') this.warnLost(hit.id, options.onWarning);
      }
      if (hits.length < want) break;
      seen = hits.length;
    }
    return out;
  }

  /** The `topK` items best matching `query` by BM25, best first, ties by id. */
  async search(query: string, topK: number): Promise<MemoryItem[]> {
    return (await this.searchScored(query, topK)).map((hit) => hit.item);
  }

  /** Waits for pending writes (the lock is only held during an operation). */
  async close(): Promise<void> {
    await this.queue;
  }
}

/** The criteria a {@link MemoryFilter} may hold. */
const FILTER_FIELDS: ReadonlySet<string> = new Set(['ids', 'createdBefore', 'metadata', 'keyword']);

/**
 * The predicate of a {@link MemoryFilter}, checked first: a filter deletes, so one that is empty (it would delete
 * every item), names a field it does not know (a misspelt criterion would be ignored, deleting more than meant) or
 * holds a criterion of the wrong type (`ids: 'abc'` read as the ids 'a', 'b' and 'c') is a MemoryStoreError naming it.
 */
function compileFilter(filter: MemoryFilter): (item: MemoryItem) => boolean {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) throw new MemoryStoreError(`deleteWhere takes a filter object or a predicate, got ${valueKind(filter)}`);
  const unknown = Object.keys(filter).filter((field) => !FILTER_FIELDS.has(field));
  if (unknown.length > 0) throw new MemoryStoreError(`deleteWhere: unknown filter field(s) ${unknown.map((f) => JSON.stringify(f)).join(', ')} (the criteria are ids, createdBefore, metadata, keyword)`);
  const { ids, createdBefore, metadata, keyword } = filter;
  if (ids === undefined && createdBefore === undefined && metadata === undefined && keyword === undefined) {
    throw new MemoryStoreError('deleteWhere needs at least one criterion (ids, createdBefore, metadata, keyword), so that no call deletes every item by accident');
  }
  if (ids !== undefined) {
    if (!Array.isArray(ids)) throw new MemoryStoreError(`deleteWhere ids must be an array of memory ids, got ${valueKind(ids)}`);
    ids.forEach((id, i) => {
      if (typeof id !== 'string') throw new MemoryStoreError(`deleteWhere ids[${i}] must be a memory id (a string), got ${valueKind(id)}`);
    });
  }
  const before = createdBefore instanceof Date ? createdBefore.getTime() : createdBefore;
  if (before !== undefined && (typeof before !== 'number' || !Number.isFinite(before))) {
    throw new MemoryStoreError(`deleteWhere createdBefore must be a valid Date or ms since the epoch, got ${valueKind(createdBefore)}`);
  }
  if (keyword !== undefined && typeof keyword !== 'string') throw new MemoryStoreError(`deleteWhere keyword must be a string, got ${valueKind(keyword)}`);
  if (metadata !== undefined && (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))) {
    throw new MemoryStoreError(`deleteWhere metadata must be an object of entries to match, got ${valueKind(metadata)}`);
  }
  const wanted = metadata === undefined ? undefined : Object.entries(metadata).map(([k, v]) => [k, JSON.stringify(v)] as const);
  const undefinedEntry = wanted?.find(([, v]) => v === undefined);
  if (undefinedEntry) throw new MemoryStoreError(`deleteWhere metadata.${undefinedEntry[0]} has no JSON value (undefined, a function): it could match nothing stored`);
  const idSet = ids === undefined ? undefined : new Set(ids);
  return (item) =>
    (idSet === undefined || idSet.has(item.id)) &&
    (before === undefined || item.createdAt < before) &&
    (keyword === undefined || (item.keywords ?? []).includes(keyword)) &&
    (wanted === undefined || wanted.every(([k, v]) => item.metadata !== undefined && Object.hasOwn(item.metadata, k) && JSON.stringify(item.metadata[k]) === v));
}
