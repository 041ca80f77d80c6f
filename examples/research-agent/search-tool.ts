import { z } from 'zod';
import { defineTool } from '../../src/nodes/llm/index.js';
import { corpus, type CorpusDocument } from './corpus.js';

/** One search hit. */
export interface SearchHit {
  id: string;
  title: string;
  text: string;
  score: number;
}

const tokenize = (text: string): string[] => text.toLowerCase().match(/[a-z0-9-]+/g) ?? [];

/** Ranks the documents by how many distinct query terms (of 3+ letters) they contain; best first, ties by id. */
export function searchCorpus(query: string, limit = 3, documents: readonly CorpusDocument[] = corpus): SearchHit[] {
  const terms = new Set(tokenize(query).filter((t) => t.length >= 3));
  const hits: SearchHit[] = [];
  for (const doc of documents) {
    const words = new Set(tokenize(`${doc.title} ${doc.text}`));
    let score = 0;
    for (const term of terms) if (words.has(term)) score++;
    if (score > 0) hits.push({ id: doc.id, title: doc.title, text: doc.text, score });
  }
  return hits.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)).slice(0, limit);
}

/** The local search tool the research agent's search step calls. */
export const searchTool = defineTool({
  description: 'Searches a local corpus of short articles about energy storage. Returns the best matching articles.',
  inputSchema: z.object({ query: z.string().min(1).describe('keywords to search for'), limit: z.number().int().min(1).max(5).optional() }),
  execute: ({ query, limit }) => searchCorpus(query, limit ?? 3),
});
