/**
 * Long-term memory in PostgreSQL (DESIGN D17): the {@link Memory} of many workers sharing one database. Items are
 * stored as the file store writes them (validated, redacted), with their terms (tokenized by the file store's
 * tokenizer) in a term table kept in step with each write in one transaction. Search ranks by BM25 with the file
 * store's formula, constants and tie order: the server finds the postings of the query's terms and the corpus
 * statistics, and the score is summed here term by term in the query's order, as the file store's index sums it,
 * so the same corpus gives the same scores and the same order.
 */
import { redactorFor, type RedactionOptions, type Redactor } from '../../redact/index.js';
import { MemoryStoreError, describeIssues } from '../errors.js';
import { BM25_B, BM25_K1, tokenize } from '../keyword-index.js';
import { prepareMemoryItem, tokensOf, warnSkipped, type Memory, type MemoryItemInput, type MemorySearchOptions, type ScoredMemoryItem } from '../memory-store.js';
import { assertValidId } from '../paths.js';
import { MemoryItemSchema, type MemoryItem } from '../types.js';
import type { PostgresRunStore } from './run-store.js';

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

  async write(item: MemoryItemInput): Promise<void> {
    await this.writeMany([item]);
  }

  /** Writes several items in one transaction (every item validated first). */
  async writeMany(items: MemoryItemInput[]): Promise<void> {
    const prepared = items.map((item) => prepareMemoryItem(item, this.redactor));
    const sql = await this.store.sql();
    await sql.begin(async (tx) => {
      for (const item of prepared) {
        const tokens = tokensOf(item);
        const tf = new Map<string, number>();
        for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
        await tx`insert into backpackflow.memory_items (id, body, length) values (${item.id}, ${JSON.stringify(item)}, ${tokens.length})
          on conflict (id) do update set body = excluded.body, length = excluded.length`;
        await tx`delete from backpackflow.memory_terms where id = ${item.id}`;
        if (tf.size > 0) {
          await tx`insert into backpackflow.memory_terms (term, id, tf)
            select t.term, ${item.id}, t.tf from unnest(${tx.array([...tf.keys()])}::text[], ${tx.array([...tf.values()])}::int[]) as t(term, tf)`;
        }
      }
    });
  }

  async get(id: string): Promise<MemoryItem | null> {
    assertValidId(id, 'memory id');
    const sql = await this.store.sql();
    const [row] = await sql<{ body: string }[]>`select body from backpackflow.memory_items where id = ${id}`;
    return row === undefined ? null : this.parse(id, row.body);
  }

  private parse(id: string, body: string): MemoryItem {
    const where = `memory item ${id} in ${this.store.location}`;
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch (error) {
      throw new MemoryStoreError(`corrupt ${where}: not JSON (${(error as Error).message})`);
    }
    const parsed = MemoryItemSchema.safeParse(json);
    if (!parsed.success) throw new MemoryStoreError(`corrupt ${where}: ${describeIssues(parsed.error, '(item)')}`);
    return parsed.data;
  }

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
    for (let i = 0; i < ranked.length && out.length < topK; i += topK) {
      const page = ranked.slice(i, i + topK);
      const rows = await sql<{ id: string; body: string }[]>`select id, body from backpackflow.memory_items where id = any(${sql.array(page.map((h) => h.id))}::text[])`;
      const bodies = new Map(rows.map((r) => [r.id, r.body]));
      for (const hit of page) {
        if (out.length >= topK) break;
        const body = bodies.get(hit.id);
        if (body === undefined) continue;
        try {
          out.push({ item: this.parse(hit.id, body), score: hit.score });
        } catch (error) {
          if (!(error instanceof MemoryStoreError)) throw error;
          warnSkipped(`skipped ${error.message}`, 'MemoryStoreCorruptItem', options.onWarning);
        }
      }
    }
    return out;
  }

  async search(query: string, topK: number): Promise<MemoryItem[]> {
    return (await this.searchScored(query, topK)).map((hit) => hit.item);
  }

  async close(): Promise<void> {}
}
