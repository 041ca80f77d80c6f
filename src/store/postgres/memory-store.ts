/**
 * Long-term memory in PostgreSQL (DESIGN D17): the {@link Memory} of many workers sharing one database. Items are
 * stored as the file store writes them (validated, redacted), with their terms (tokenized by the file store's
 * tokenizer) in a term table kept in step with each write in one transaction. Search ranks by BM25 with the file
 * store's formula, constants and tie order: the server finds the postings of the query's terms and the corpus
 * statistics, and the score is summed here term by term in the query's order, as the file store's index sums it,
 * so the same corpus gives the same scores and the same order.
 *
 * Damage is never answered in silence (as the file store's items, see memory-store.ts). An item's body is sealed
 * with its BLAKE3 checksum as the file store seals an item file (`{"checksum": ..., "data": ...}`, hash/sealed.ts),
 * and must hold the id of its row. A body that fails either (edited, another item's copied into the row, not JSON)
 * is an error from {@link PostgresMemoryStore.get} naming the row, and skipped by search with a
 * `MemoryStoreCorruptItem` warning naming it. A body written before items were sealed (plain JSON) is still served,
 * with a `MemoryStoreUnsealedItem` warning that nothing proves it unchanged, and is sealed when the item is next
 * written. What is not checked: the term rows and the `length` column (which rank an item, and which an edit can
 * change without touching the body).
 *
 * Writers: {@link PostgresMemoryStore.writeMany} writes its items in id order (the last of each id), so that two
 * transactions writing overlapping items lock their rows in one order and do not deadlock; a transaction the server
 * still aborts (a deadlock with another statement, a serialization failure) is retried a few times.
 */
import { sharedHashBackend, type HashBackend } from '../../hash/blake3.js';
import { openSealed, sealText } from '../../hash/sealed.js';
import { redactorFor, type RedactionOptions, type Redactor } from '../../redact/index.js';
import { MemoryStoreError, describeIssues } from '../errors.js';
import { BM25_B, BM25_K1, tokenize } from '../keyword-index.js';
import { prepareMemoryItem, tokensOf, warnSkipped, type Memory, type MemoryItemInput, type MemorySearchOptions, type ScoredMemoryItem } from '../memory-store.js';
import { assertValidId } from '../paths.js';
import { MemoryItemSchema, type MemoryItem } from '../types.js';
import type postgres from 'postgres';
import type { PostgresRunStore } from './run-store.js';

/** How many times {@link PostgresMemoryStore.writeMany} runs its transaction when the server aborts it (see there). */
const WRITE_ATTEMPTS = 5;
/** SQLSTATE deadlock_detected. */
const DEADLOCK = '40P01';
/** SQLSTATE serialization_failure. */
const SERIALIZATION_FAILURE = '40001';

/** The ids of `items` for a message: all of them, or the first few and how many more. */
function describeIds(items: MemoryItem[]): string {
  const shown = items.slice(0, 5).map((item) => `'${item.id}'`).join(', ');
  return items.length > 5 ? `${shown} and ${items.length - 5} more` : shown;
}

/** A document containing a term: its term frequency and length (in tokens). */
interface Posting {
  term: string;
  id: string;
  tf: number;
  length: number;
}

/** See the module comment. Shares the pool (and the schema) of a {@link PostgresRunStore}. */
export class PostgresMemoryStore implements Memory {
  private readonly redactor: Redactor;

  constructor(
    private readonly store: PostgresRunStore,
    options: { redaction?: RedactionOptions } = {},
  ) {
    this.redactor = redactorFor(options.redaction);
  }

  /** Writes (or replaces) one item: {@link writeMany} of it. */
  async write(item: MemoryItemInput): Promise<void> {
    await this.writeMany([item]);
  }

  /**
   * Writes several items in one transaction (every item validated first; of items with one id, the last), sealed, in
   * id order (see the module comment). A transaction the server aborts as a deadlock or a serialization failure is
   * run again, up to {@link WRITE_ATTEMPTS} times in all; then a MemoryStoreError says so.
   */
  async writeMany(items: MemoryItemInput[]): Promise<void> {
    this.redactor.renewEnvironment();
    const byId = new Map<string, MemoryItem>();
    for (const item of items.map((input) => prepareMemoryItem(input, this.redactor))) {
      byId.delete(item.id);
      byId.set(item.id, item);
    }
    const prepared = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (prepared.length === 0) return;
    const backend = await sharedHashBackend();
    const rows = prepared.map((item) => ({ item, body: sealText(JSON.stringify(item), backend) }));
    const sql = await this.store.sql();
    for (let attempt = 1; ; attempt++) {
      try {
        await sql.begin((tx) => this.writeRows(tx, rows));
        return;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code !== DEADLOCK && code !== SERIALIZATION_FAILURE) throw error;
        if (attempt >= WRITE_ATTEMPTS) {
          throw new MemoryStoreError(
            `writing ${prepared.length} memory item${prepared.length === 1 ? '' : 's'} (${describeIds(prepared)}) to backpackflow.memory_items in ${this.store.location} failed ${attempt} times ` +
              `(${(error as Error).message}, SQLSTATE ${String(code)}): nothing of it was stored; write them again`,
            { cause: error },
          );
        }
        // Another transaction held what this one needed; it has ended or ends soon. A short, growing, jittered pause.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
      }
    }
  }

  /** The statements of {@link writeMany}'s transaction: each item's row and its terms, in the order given. */
  private async writeRows(tx: postgres.TransactionSql, rows: { item: MemoryItem; body: string }[]): Promise<void> {
    for (const { item, body } of rows) {
      const tokens = tokensOf(item);
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      await tx`insert into backpackflow.memory_items (id, body, length) values (${item.id}, ${body}, ${tokens.length})
        on conflict (id) do update set body = excluded.body, length = excluded.length`;
      await tx`delete from backpackflow.memory_terms where id = ${item.id}`;
      if (tf.size > 0) {
        await tx`insert into backpackflow.memory_terms (term, id, tf)
          select t.term, ${item.id}, t.tf from unnest(${tx.array([...tf.keys()])}::text[], ${tx.array([...tf.values()])}::int[]) as t(term, tf)`;
      }
    }
  }

  /**
   * The item with `id`, or null: verified against its seal (a damaged body is a MemoryStoreError naming its row; an
   * unsealed one is served with a warning, see the module comment).
   */
  async get(id: string): Promise<MemoryItem | null> {
    assertValidId(id, 'memory id');
    const sql = await this.store.sql();
    const [row] = await sql<{ body: string }[]>`select body from backpackflow.memory_items where id = ${id}`;
    return row === undefined ? null : this.parse(id, row.body, await sharedHashBackend());
  }

  /**
   * The item a row holds: its body's seal verified, the item validated, and its id the row's (else a
   * MemoryStoreError naming the row and what is wrong). A body written before seals is served with a
   * `MemoryStoreUnsealedItem` warning (to `onWarning` when given): see the module comment.
   */
  private parse(id: string, body: string, backend: HashBackend, onWarning?: (message: string) => void): MemoryItem {
    const where = `memory item '${id}' (its row in backpackflow.memory_items, ${this.store.location})`;
    const opened = openSealed(body, backend, true);
    if (!opened.ok) throw new MemoryStoreError(`corrupt ${where}: ${opened.problem === 'checksum mismatch' ? 'its body does not match its checksum (it was edited)' : opened.problem}`);
    const parsed = MemoryItemSchema.safeParse(opened.data);
    if (!parsed.success) throw new MemoryStoreError(`corrupt ${where}: ${describeIssues(parsed.error, '(item)')}`);
    if (parsed.data.id !== id) throw new MemoryStoreError(`corrupt ${where}: it holds item '${parsed.data.id}', not '${id}' (another item's body copied into its row?)`);
    if (!opened.sealed) {
      const message = `${where} is not sealed: it was written before memory items were sealed, or its seal was removed, so nothing proves it unchanged; it is sealed when it is next written`;
      if (onWarning) onWarning(message);
      else process.emitWarning(message, 'MemoryStoreUnsealedItem');
    }
    return parsed.data;
  }

  /** Deletes the item with `id` (its index terms go with it); resolves to whether it existed. */
  async delete(id: string): Promise<boolean> {
    assertValidId(id, 'memory id');
    const sql = await this.store.sql();
    const rows = await sql`delete from backpackflow.memory_items where id = ${id}`;
    return rows.count > 0;
  }

  /**
   * The `topK` items best matching `query` by BM25 (ties by id), with their scores; a damaged item is skipped with a
   * warning (to `options.onWarning`, else the process's `MemoryStoreCorruptItem`).
   */
  async searchScored(query: string, topK: number, options: MemorySearchOptions = {}): Promise<ScoredMemoryItem[]> {
    if (typeof query !== 'string') throw new MemoryStoreError(`search query must be a string, got ${typeof query}`);
    if (!Number.isInteger(topK) || topK < 0) throw new MemoryStoreError(`search topK must be a non-negative integer, got ${topK}`);
    const terms = [...new Set(tokenize(query))];
    if (topK === 0 || terms.length === 0) return [];
    const sql = await this.store.sql();
    const [stats] = await sql<{ n: string; total: string | null }[]>`select count(*) as n, sum(length) as total from backpackflow.memory_items`;
    const n = Number(stats!.n);
    if (n === 0) return [];
    const avgdl = Number(stats!.total ?? 0) / n || 1;
    const postings = await sql<Posting[]>`
      select t.term, t.id, t.tf, i.length
      from backpackflow.memory_terms t join backpackflow.memory_items i using (id)
      where t.term = any(${sql.array(terms)}::text[])`;
    const byTerm = new Map<string, Posting[]>();
    for (const p of postings) {
      let list = byTerm.get(p.term);
      if (list === undefined) byTerm.set(p.term, (list = []));
      list.push(p);
    }
    // Summed term by term in the query's order, as KeywordIndex.search does: the same floating-point sums.
    const scores = new Map<string, number>();
    for (const term of terms) {
      const list = byTerm.get(term);
      if (list === undefined) continue;
      const df = list.length;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      const weight = idf * (BM25_K1 + 1);
      for (const { id, tf, length } of list) {
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgdl);
        scores.set(id, (scores.get(id) ?? 0) + (weight * tf) / (tf + norm));
      }
    }
    const ranked = [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const out: ScoredMemoryItem[] = [];
    const backend = await sharedHashBackend();
    for (let i = 0; i < ranked.length && out.length < topK; i += topK) {
      const page = ranked.slice(i, i + topK);
      const rows = await sql<{ id: string; body: string }[]>`select id, body from backpackflow.memory_items where id = any(${sql.array(page.map((h) => h.id))}::text[])`;
      const bodies = new Map(rows.map((r) => [r.id, r.body]));
      for (const hit of page) {
        if (out.length >= topK) break;
        const body = bodies.get(hit.id);
        if (body === undefined) continue;
        try {
          out.push({ item: this.parse(hit.id, body, backend, options.onWarning), score: hit.score });
        } catch (error) {
          if (!(error instanceof MemoryStoreError)) throw error;
          warnSkipped(`skipped ${error.message}`, 'MemoryStoreCorruptItem', options.onWarning);
        }
      }
    }
    return out;
  }

  /** The `topK` items best matching `query`, best first: {@link searchScored} without the scores. */
  async search(query: string, topK: number): Promise<MemoryItem[]> {
    return (await this.searchScored(query, topK)).map((hit) => hit.item);
  }

  /** Nothing to wait for or release: writes are awaited by their callers, and the connections are the run store's. */
  async close(): Promise<void> {}
}
