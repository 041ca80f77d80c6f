import { existsSync, promises as fsp, statSync } from 'node:fs';
import { join } from 'node:path';
import { readTextIfExists, readTextIfExistsSync, writeJsonAtomic } from '../fs/index.js';
import { sharedHashBackend, type HashBackend } from '../hash/blake3.js';
import { openSealed } from '../hash/sealed.js';
import { LockError, MemoryStoreError, describeIssues } from './errors.js';
import { KeywordIndex, tokenize } from './keyword-index.js';
import type { FileLock } from '../fs/index.js';
import { acquireLock } from './lock.js';
import { assertValidId, isValidId, memoryItemPath, memoryPaths, type MemoryPaths } from './paths.js';
import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { MemoryItemSchema, durabilityOf, type Durability, type MemoryItem } from './types.js';
import { writeSealed } from './sealed-file.js';

/**
 * The stored form of a memory item (shared by the memory stores): `createdAt` filled when absent, validated (a
 * {@link MemoryStoreError} naming the field), the id checked, and everything but the id and times redacted.
 */
export function prepareMemoryItem(input: MemoryItemInput, redactor: Redactor): MemoryItem {
  const item = input !== null && typeof input === 'object' && input.createdAt === undefined ? { ...input, createdAt: Date.now() } : input;
  const parsed = MemoryItemSchema.safeParse(item);
  if (!parsed.success) throw new MemoryStoreError(`invalid memory item ${JSON.stringify(item?.id)}: ${describeIssues(parsed.error, '(item)')}`);
  const valid = parsed.data;
  assertValidId(valid.id, 'memory id');
  const { id, createdAt, updatedAt, ...rest } = valid;
  const { value } = redactor.redact(rest);
  const out: MemoryItem = { id, ...value, createdAt };
  if (updatedAt !== undefined) out.updatedAt = updatedAt;
  return out;
}

/** What the runtime, the CLI and the studio need from long-term memory: the file store and the Postgres one. */
export interface Memory {
  write(item: MemoryItemInput): Promise<void>;
  writeMany(items: MemoryItemInput[]): Promise<void>;
  get(id: string): Promise<MemoryItem | null>;
  delete(id: string): Promise<boolean>;
  searchScored(query: string, topK: number): Promise<ScoredMemoryItem[]>;
  search(query: string, topK: number): Promise<MemoryItem[]>;
  close(): Promise<void>;
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

/** The tokens an item is indexed under: its content's and its keywords'. */
export function tokensOf(item: MemoryItem): string[] {
  const tokens = tokenize(item.content);
  for (const keyword of item.keywords ?? []) tokens.push(...tokenize(keyword));
  return tokens;
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
 * store read it (compared by inode, size and mtime); searches reload it too. So several processes can share one
 * memory without losing each other's writes.
 *
 * Damage is never answered in silence. Item files and keyword.json are sealed with their BLAKE3 checksum
 * (`{"checksum": ..., "data": ...}`, see hash/sealed.ts), and an item must hold the id its file is named after. An item
 * that fails this is skipped by search and listings with a `MemoryStoreCorruptItem` warning naming its file (and is
 * an error from {@link get}); an item the index lists whose file is gone gets a `MemoryStoreMissingItem` warning; a
 * keyword.json that fails its checksum is rebuilt from the items, which are the truth, with a `MemoryStoreIndex`
 * warning. Files written before seals (plain JSON) still read: such an item is taken as it is and sealed at the
 * next operation that holds the memory lock; such an index is not trusted but rebuilt from the items, and each item
 * it disagrees with gets a `MemoryStoreMismatch` warning naming both files (one of the two was edited).
 */
export class MemoryStore implements Memory {
  readonly paths: MemoryPaths;
  private readonly fsync: boolean;
  private readonly lockTimeoutMs: number;
  private index: KeywordIndex | undefined;
  /** Identity of the keyword.json the in-memory index matches (inode, size, mtime). */
  private indexStamp: string | undefined;
  private loading: Promise<KeywordIndex> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly redactor: Redactor;
  /** Items read from files written before seals, by id, with the text read: sealed by the next {@link endChange}. */
  private readonly unsealed = new Map<string, { text: string; item: MemoryItem }>();

  /** Opens nothing yet: the index is loaded (or rebuilt) on first use. */
  constructor(options: MemoryStoreOptions) {
    this.paths = memoryPaths(options.dataDir);
    this.fsync = durabilityOf(options, 'MemoryStore') !== 'never';
    this.lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.redactor = redactorFor(options.redaction);
  }

  private stampOf(path: string): string | undefined {
    try {
      const stat = statSync(path);
      return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** The index, reloaded when keyword.json changed since it was read (another process wrote). */
  private currentIndex(locked: boolean): Promise<KeywordIndex> {
    if (this.index !== undefined && this.stampOf(this.paths.keywordIndex) === this.indexStamp) return Promise.resolve(this.index);
    this.loading ??= this.readOrRebuildIndex(locked).finally(() => (this.loading = undefined));
    return this.loading;
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
    const stamp = this.stampOf(this.paths.keywordIndex);
    const text = await readTextIfExists(this.paths.keywordIndex);
    const stored = text === undefined ? undefined : this.openIndex(text, backend);
    const pending = await this.readPending();
    this.indexStamp = stamp;
    let index = stored?.sealed ? stored.index : undefined;
    if (index !== undefined && pending === undefined) return (this.index = index);
    if (index !== undefined && pending !== undefined && pending !== 'corrupt') {
      // A crash interrupted an operation on these items: index them as they are on disk now.
      for (const id of pending) {
        const found = this.readItemOrSkip(id, backend);
        if (typeof found === 'object') index.set(id, tokensOf(found));
        else index.delete(id);
      }
    } else {
      index = new KeywordIndex();
      const unread = new Set<string>(Array.isArray(pending) ? pending : []);
      for (const file of await this.listItemFiles()) {
        const id = file.slice(0, -'.json'.length);
        const found = this.readItemOrSkip(id, backend);
        if (typeof found === 'object') index.set(id, tokensOf(found));
        else unread.add(id);
      }
      // An index written before seals is not trusted, but it tells which items were edited since (unless a crash
      // left a damaged record, when the items it was changing are unknown).
      if (stored !== undefined && !stored.sealed && pending !== 'corrupt') this.reportDisagreements(stored.index, index, unread);
    }
    this.index = index;
    if (text !== undefined || pending !== undefined || index.size > 0) await this.persistRepair(index, locked);
    return index;
  }

  /**
   * The index in keyword.json's text and whether it was sealed; undefined, with a `MemoryStoreIndex` warning, when
   * it fails its checksum or is not a consistent index.
   */
  private openIndex(text: string, backend: HashBackend): { index: KeywordIndex; sealed: boolean } | undefined {
    const opened = openSealed(text, backend, true);
    try {
      if (!opened.ok) throw new Error(opened.problem);
      return { index: KeywordIndex.fromJSON(opened.data), sealed: opened.sealed };
    } catch (error) {
      process.emitWarning(`rebuilding corrupt memory index ${this.paths.keywordIndex}: ${(error as Error).message}`, 'MemoryStoreIndex');
      return undefined;
    }
  }

  /**
   * Compares an index written before seals with the one rebuilt from the items, and warns about each item they
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
      `memory item ${memoryItemPath(this.paths, id)} does not match the memory index ${this.paths.keywordIndex} written before seals: one of them was edited; the index is rebuilt from the items`,
      'MemoryStoreMismatch',
    );
  }

  private lostMessage(id: string): string {
    return `memory item ${memoryItemPath(this.paths, id)} is missing, though the memory index ${this.paths.keywordIndex} lists it (deleted outside the store?); delete('${id}') drops it from the index`;
  }

  /** Warns that an item the index lists has no file, unless an operation of another process under way explains it. */
  private warnLost(id: string): void {
    if (this.stampOf(this.paths.keywordIndex) !== this.indexStamp || existsSync(this.pendingPath)) return;
    process.emitWarning(this.lostMessage(id), 'MemoryStoreMissingItem');
  }

  /** Ids of the operation a crash interrupted (from `index/pending.json`), undefined when none, 'corrupt'. */
  private async readPending(): Promise<string[] | undefined | 'corrupt'> {
    const text = await readTextIfExists(this.pendingPath);
    if (text === undefined) return undefined;
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

  /** Records the ids an operation is about to change, so that a crash before the index is rewritten is repaired. */
  private async beginChange(ids: string[]): Promise<void> {
    await writeJsonAtomic(this.pendingPath, { ids }, { fsync: this.fsync });
  }

  /** Seals the items read unsealed that are still as read, then persists the index and removes the record. */
  private async endChange(index: KeywordIndex): Promise<void> {
    for (const [id, { text, item }] of this.unsealed) {
      const path = memoryItemPath(this.paths, id);
      if (readTextIfExistsSync(path) === text) await writeSealed(path, item, this.fsync);
    }
    this.unsealed.clear();
    await this.persistIndex(index);
    await fsp.rm(this.pendingPath, { force: true });
  }

  /** Persists a repaired index, unless another process holds the memory lock (it persists its own index then). */
  private async persistRepair(index: KeywordIndex, locked: boolean): Promise<void> {
    let lock: FileLock | undefined;
    if (!locked) {
      try {
        await fsp.mkdir(this.paths.indexDir, { recursive: true });
        lock = acquireLock(this.lockPath, 'shared memory');
      } catch (error) {
        if (error instanceof LockError) return;
        throw error;
      }
    }
    try {
      await this.endChange(index);
    } finally {
      lock?.release();
    }
  }

  private get lockPath(): string {
    return `${this.paths.keywordIndex.slice(0, -'.json'.length)}.lock`;
  }

  private async persistIndex(index: KeywordIndex): Promise<void> {
    await writeSealed(this.paths.keywordIndex, index.toJSON(), this.fsync);
    this.indexStamp = this.stampOf(this.paths.keywordIndex);
  }

  /** Takes the memory lock, waiting while a live process holds it, up to `lockTimeoutMs`. */
  private async lockMemory(): Promise<FileLock> {
    await fsp.mkdir(this.paths.indexDir, { recursive: true });
    const deadline = Date.now() + this.lockTimeoutMs;
    for (;;) {
      try {
        return acquireLock(this.lockPath, 'shared memory');
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
    const prepared = items.map((item) => this.prepare(item));
    await this.exclusive(async (index) => {
      await this.beginChange(prepared.map((item) => item.id));
      for (const item of prepared) {
        await writeSealed(memoryItemPath(this.paths, item.id), item, this.fsync);
        index.set(item.id, tokensOf(item));
      }
      await this.endChange(index);
    });
  }

  /**
   * The item with `id`, or null. A file that is not a valid item (not JSON, failing its checksum, holding another
   * id) is a {@link MemoryStoreError} naming its path; an item the index lists whose file is gone is null with a
   * `MemoryStoreMissingItem` warning naming the file.
   */
  async get(id: string): Promise<MemoryItem | null> {
    const item = this.readItem(id, await sharedHashBackend());
    if (item === null && (await this.currentIndex(false)).has(id)) this.warnLost(id);
    return item;
  }

  /**
   * {@link readItem}, except that a damaged item file is skipped ('damaged') with a warning naming it: one damaged
   * item must not make every search, or the rebuild of the index, fail. 'missing' when there is no file.
   */
  private readItemOrSkip(id: string, backend: HashBackend): MemoryItem | 'missing' | 'damaged' {
    try {
      return this.readItem(id, backend) ?? 'missing';
    } catch (error) {
      if (!(error instanceof MemoryStoreError)) throw error;
      process.emitWarning(`skipped ${error.message}`, 'MemoryStoreCorruptItem');
      return 'damaged';
    }
  }

  /**
   * Reads one item file synchronously: item files are small, and a search reads its top K of them, where K thread-pool
   * round trips would cost more than the ranking itself. The seal is verified (a file written before seals is taken
   * as it is, and remembered for sealing), the item validated, and its id must be the one its file is named after.
   */
  private readItem(id: string, backend: HashBackend): MemoryItem | null {
    const path = memoryItemPath(this.paths, id);
    const text = readTextIfExistsSync(path);
    if (text === undefined) return null;
    const opened = openSealed(text, backend, true);
    if (!opened.ok) throw new MemoryStoreError(`corrupt memory item ${path}: ${opened.problem}`, { path });
    const parsed = MemoryItemSchema.safeParse(opened.data);
    if (!parsed.success) throw new MemoryStoreError(`corrupt memory item ${path}: ${describeIssues(parsed.error, '(item)')}`, { path });
    if (parsed.data.id !== id) {
      throw new MemoryStoreError(`corrupt memory item ${path}: it holds item '${parsed.data.id}', not '${id}' (another item's file copied over it?)`, { path });
    }
    if (!opened.sealed) this.unsealed.set(id, { text, item: parsed.data });
    return parsed.data;
  }

  /** Deletes an item; returns whether it existed. */
  async delete(id: string): Promise<boolean> {
    const path = memoryItemPath(this.paths, id);
    return this.exclusive(async (index) => {
      if (!index.has(id) && (await readTextIfExists(path)) === undefined) return false;
      await this.beginChange([id]);
      const existed = await fsp.unlink(path).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
          return false;
        },
      );
      index.delete(id);
      await this.endChange(index);
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
      const item = this.readItemOrSkip(ids[i]!, backend);
      if (typeof item === 'object') items.push(item);
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
        const item = this.readItemOrSkip(file.slice(0, -'.json'.length), backend);
        if (typeof item === 'object' && matches(item)) doomed.push(item.id);
      }
      if (options.dryRun || doomed.length === 0) return doomed;
      await this.beginChange(doomed);
      for (const id of doomed) {
        await fsp.rm(memoryItemPath(this.paths, id), { force: true });
        index.delete(id);
      }
      await this.endChange(index);
      return doomed;
    });
  }

  /**
   * The `topK` items best matching `query` by BM25 (ties by id), with their scores. A damaged item file is skipped
   * with a warning naming it (`MemoryStoreCorruptItem`), as is an item the index lists whose file is gone
   * (`MemoryStoreMissingItem`), and the next best item takes its place.
   */
  async searchScored(query: string, topK: number): Promise<ScoredMemoryItem[]> {
    if (typeof query !== 'string') throw new MemoryStoreError(`search query must be a string, got ${typeof query}`);
    if (!Number.isInteger(topK) || topK < 0) throw new MemoryStoreError(`search topK must be a non-negative integer, got ${topK}`);
    const index = await this.currentIndex(false);
    const backend = await sharedHashBackend();
    const out: ScoredMemoryItem[] = [];
    let seen = 0;
    for (let want = topK; out.length < topK; want += topK - out.length) {
      const hits = index.search(query, want);
      for (const hit of hits.slice(seen)) {
        const item = this.readItemOrSkip(hit.id, backend);
        if (typeof item === 'object') out.push({ item, score: hit.score });
        else if (item === 'missing') this.warnLost(hit.id);
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

/** The predicate of a {@link MemoryFilter}; an empty filter is refused (it would delete every item). */
function compileFilter(filter: MemoryFilter): (item: MemoryItem) => boolean {
  if (filter === null || typeof filter !== 'object') throw new MemoryStoreError(`deleteWhere takes a filter object or a predicate, got ${String(filter)}`);
  const { ids, createdBefore, metadata, keyword } = filter;
  if (ids === undefined && createdBefore === undefined && metadata === undefined && keyword === undefined) {
    throw new MemoryStoreError('deleteWhere needs at least one criterion (ids, createdBefore, metadata, keyword), so that no call deletes every item by accident');
  }
  const before = createdBefore instanceof Date ? createdBefore.getTime() : createdBefore;
  if (before !== undefined && !Number.isFinite(before)) throw new MemoryStoreError(`deleteWhere createdBefore must be a valid Date or ms since the epoch, got ${String(createdBefore)}`);
  const idSet = ids === undefined ? undefined : new Set(ids);
  const wanted = metadata === undefined ? undefined : Object.entries(metadata).map(([k, v]) => [k, JSON.stringify(v)] as const);
  return (item) =>
    (idSet === undefined || idSet.has(item.id)) &&
    (before === undefined || item.createdAt < before) &&
    (keyword === undefined || (item.keywords ?? []).includes(keyword)) &&
    (wanted === undefined || wanted.every(([k, v]) => item.metadata !== undefined && k in item.metadata && JSON.stringify(item.metadata[k]) === v));
}
