/**
 * The inverted index behind MemoryStore search, and its tokenizer.
 *
 * Tokenizing: lowercase, split on anything that is not a letter or digit (Unicode-aware), drop tokens shorter than
 * two characters and a short list of English stopwords. Item content and keywords are tokenized alike.
 *
 * Ranking: BM25 with k1 = 1.2 and b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)); query terms are deduplicated;
 * equal scores are ordered by id (ascending), so results are deterministic.
 */

/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;

const STOPWORDS = new Set(
  'a an and are as at be but by for from has have if in into is it its of on or so than that the their then there these this those to was were will with'.split(
    ' ',
  ),
);

/** Tokens of `text` as the index sees them (see the module comment). */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length >= 2 && !STOPWORDS.has(raw)) out.push(raw);
  }
  return out;
}

/** The persisted form (`keyword.json`): term → { id: term frequency }, document lengths, document count. */
export interface KeywordIndexFile {
  v: 1;
  N: number;
  totalLength: number;
  docs: Record<string, number>;
  terms: Record<string, Record<string, number>>;
}

/** One ranked hit. */
export interface ScoredId {
  id: string;
  score: number;
}

/** Documents containing a term: parallel arrays of document slots and term frequencies. */
interface Posting {
  slots: number[];
  tfs: number[];
}

/**
 * In-memory inverted index with integer document slots and postings as parallel arrays, so that scoring a query
 * walks arrays rather than maps keyed by id.
 */
export class KeywordIndex {
  private readonly postings = new Map<string, Posting>();
  private readonly slotOf = new Map<string, number>();
  private ids: string[] = [];
  private lengths: number[] = [];
  /** Distinct terms of each slot set since load; undefined for a slot loaded from a file (see `loaded`). */
  private termsOf: Array<string[] | undefined> = [];
  /** Terms of the slots loaded from a file, in compressed-row form (cheaper to build than 100k small arrays). */
  private loaded: { offsets: Int32Array; termIds: Int32Array; terms: string[] } | undefined;
  private readonly free: number[] = [];
  private totalLength = 0;
  private scores = new Float64Array(0);
  private touched = new Int32Array(0);
  private norms: Float64Array | undefined;

  /** Number of indexed documents. */
  get size(): number {
    return this.slotOf.size;
  }

  /** Whether `id` is indexed. */
  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Every indexed id. */
  idList(): string[] {
    return [...this.slotOf.keys()];
  }

  /** Indexes (or re-indexes) a document from its tokens. */
  set(id: string, tokens: string[]): void {
    this.delete(id);
    this.norms = undefined;
    const slot = this.free.pop() ?? this.ids.length;
    const tf = new Map<string, number>();
    for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
    this.ids[slot] = id;
    this.lengths[slot] = tokens.length;
    this.termsOf[slot] = [...tf.keys()];
    this.slotOf.set(id, slot);
    this.totalLength += tokens.length;
    for (const [term, count] of tf) {
      let posting = this.postings.get(term);
      if (posting === undefined) this.postings.set(term, (posting = { slots: [], tfs: [] }));
      posting.slots.push(slot);
      posting.tfs.push(count);
    }
  }

  /** Removes a document; returns whether it was indexed. */
  delete(id: string): boolean {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return false;
    this.norms = undefined;
    for (const term of this.termsOfSlot(slot)) {
      const posting = this.postings.get(term)!;
      const at = posting.slots.lastIndexOf(slot);
      const last = posting.slots.length - 1;
      posting.slots[at] = posting.slots[last]!;
      posting.tfs[at] = posting.tfs[last]!;
      posting.slots.pop();
      posting.tfs.pop();
      if (posting.slots.length === 0) this.postings.delete(term);
    }
    this.totalLength -= this.lengths[slot]!;
    this.slotOf.delete(id);
    this.ids[slot] = '';
    this.termsOf[slot] = [];
    this.lengths[slot] = 0;
    this.free.push(slot);
    return true;
  }

  private termsOfSlot(slot: number): string[] {
    const own = this.termsOf[slot];
    if (own !== undefined || this.loaded === undefined) return own ?? [];
    const { offsets, termIds, terms } = this.loaded;
    const out: string[] = [];
    for (let i = offsets[slot]!; i < offsets[slot + 1]!; i++) out.push(terms[termIds[i]!]!);
    return out;
  }

  /** The `topK` best documents for `query` by BM25, ties by id. Documents matching no query term are not returned. */
  search(query: string, topK: number): ScoredId[] {
    const n = this.slotOf.size;
    if (n === 0 || topK <= 0) return [];
    const terms = [...new Set(tokenize(query))];
    const slotCount = this.ids.length;
    if (this.scores.length < slotCount) {
      this.scores = new Float64Array(slotCount * 2);
      this.touched = new Int32Array(slotCount * 2);
    }
    const scores = this.scores;
    const touched = this.touched;
    const norms = this.lengthNorms();
    let touchedCount = 0;
    for (const term of terms) {
      const posting = this.postings.get(term);
      if (posting === undefined) continue;
      const { slots, tfs } = posting;
      const df = slots.length;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      const weight = idf * (BM25_K1 + 1);
      for (let i = 0; i < df; i++) {
        const slot = slots[i]!;
        const tf = tfs[i]!;
        if (scores[slot] === 0) touched[touchedCount++] = slot;
        scores[slot]! += (weight * tf) / (tf + norms[slot]!);
      }
    }
    const best: ScoredId[] = [];
    let floor = -Infinity;
    for (let t = 0; t < touchedCount; t++) {
      const slot = touched[t]!;
      const score = scores[slot]!;
      scores[slot] = 0;
      if (best.length === topK && score < floor) continue;
      const hit = { id: this.ids[slot]!, score };
      if (best.length === topK && !better(hit, best[best.length - 1]!)) continue;
      let i = best.length;
      while (i > 0 && better(hit, best[i - 1]!)) i--;
      best.splice(i, 0, hit);
      if (best.length > topK) best.pop();
      if (best.length === topK) floor = best[best.length - 1]!.score;
    }
    return best;
  }

  /** k1 * (1 - b + b * length / avgdl) per slot, cached until the next change. */
  private lengthNorms(): Float64Array {
    if (this.norms === undefined) {
      const avgdl = this.totalLength / this.slotOf.size || 1;
      const norms = new Float64Array(this.ids.length);
      for (let slot = 0; slot < norms.length; slot++) norms[slot] = BM25_K1 * (1 - BM25_B + (BM25_B * this.lengths[slot]!) / avgdl);
      this.norms = norms;
    }
    return this.norms;
  }

  /**
   * A 32-bit signature of each document's terms with their frequencies, by id: documents indexed from the same tokens
   * have equal signatures, so two indexes are compared document by document in one pass over their postings.
   */
  signatures(): Map<string, number> {
    const sums = new Uint32Array(this.ids.length);
    for (const [term, posting] of this.postings) {
      const h = fnv1a(term);
      for (let i = 0; i < posting.slots.length; i++) {
        const slot = posting.slots[i]!;
        sums[slot] = (sums[slot]! + Math.imul(h, 2 * posting.tfs[i]! + 1)) >>> 0;
      }
    }
    const out = new Map<string, number>();
    for (const [id, slot] of this.slotOf) out.set(id, sums[slot]!);
    return out;
  }

  /** The persisted form. */
  toJSON(): KeywordIndexFile {
    const docs: Record<string, number> = {};
    for (const [id, slot] of this.slotOf) docs[id] = this.lengths[slot]!;
    const terms: Record<string, Record<string, number>> = {};
    for (const [term, posting] of this.postings) {
      const entry: Record<string, number> = {};
      for (let i = 0; i < posting.slots.length; i++) entry[this.ids[posting.slots[i]!]!] = posting.tfs[i]!;
      terms[term] = entry;
    }
    return { v: 1, N: this.slotOf.size, totalLength: this.totalLength, docs, terms };
  }

  /** Loads the persisted form; throws an Error saying what is wrong when it is not a consistent index. */
  static fromJSON(file: unknown): KeywordIndex {
    const f = file as Partial<KeywordIndexFile> | null;
    if (f === null || typeof f !== 'object' || f.v !== 1) throw new Error('not a version 1 keyword index');
    if (typeof f.docs !== 'object' || f.docs === null || typeof f.terms !== 'object' || f.terms === null) throw new Error('docs or terms missing');
    const index = new KeywordIndex();
    for (const [id, length] of Object.entries(f.docs)) {
      if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) throw new Error(`bad length for ${id}`);
      index.slotOf.set(id, index.ids.length);
      index.ids.push(id);
      index.lengths.push(length);
      index.termsOf.push(undefined);
      index.totalLength += length;
    }
    const docCount = index.ids.length;
    // (slot, term) pairs: at most one per token, so totalLength bounds their number.
    const pairSlots = new Int32Array(index.totalLength);
    const pairTerms = new Int32Array(index.totalLength);
    const counted = new Float64Array(docCount);
    const terms: string[] = [];
    let pairs = 0;
    for (const [term, posting] of Object.entries(f.terms)) {
      if (typeof posting !== 'object' || posting === null) throw new Error(`bad posting for term ${term}`);
      const entry: Posting = { slots: [], tfs: [] };
      const record = posting as Record<string, unknown>;
      const ids = Object.keys(record);
      const termId = terms.length;
      terms.push(term);
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        const tf = record[id];
        const slot = index.slotOf.get(id);
        if (slot === undefined || typeof tf !== 'number' || !Number.isInteger(tf) || tf < 1) throw new Error(`bad posting ${term} → ${id}`);
        if (pairs === pairSlots.length) throw new Error('postings hold more tokens than the document lengths');
        entry.slots.push(slot);
        entry.tfs.push(tf);
        pairSlots[pairs] = slot;
        pairTerms[pairs++] = termId;
        counted[slot]! += tf;
      }
      if (entry.slots.length > 0) index.postings.set(term, entry);
    }
    for (let slot = 0; slot < docCount; slot++) {
      if (counted[slot] !== index.lengths[slot]) {
        throw new Error(`document ${index.ids[slot]}: length ${index.lengths[slot]} does not match its postings (${counted[slot]})`);
      }
    }
    if (f.N !== index.size || f.totalLength !== index.totalLength) throw new Error('N or totalLength does not match the documents');
    const offsets = new Int32Array(docCount + 1);
    for (let i = 0; i < pairs; i++) offsets[pairSlots[i]! + 1]!++;
    for (let slot = 0; slot < docCount; slot++) offsets[slot + 1]! += offsets[slot]!;
    const fill = offsets.slice(0, docCount);
    const termIds = new Int32Array(pairs);
    for (let i = 0; i < pairs; i++) termIds[fill[pairSlots[i]!]!++] = pairTerms[i]!;
    index.loaded = { offsets, termIds, terms };
    return index;
  }
}

function better(a: ScoredId, b: ScoredId): boolean {
  return a.score > b.score || (a.score === b.score && a.id < b.id);
}

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
