/** A search box over long-term memory (BM25, best first). */
import { getJson, type MemoryHit } from './client.js';
import { replaceHash, useLoad } from './hooks.js';
import { Problem, Warnings } from './parts.js';

/** Memory search; the query lives in the hash. */
export function MemoryView({ q }: { q: string }) {
  const hits = useLoad((signal) => (q === '' ? Promise.resolve({ hits: [] as MemoryHit[], warnings: [] as string[] }) : getJson<{ hits: MemoryHit[]; warnings: string[] }>('/api/memory', { q, k: 20 }, signal)), [q]);
  return (
    <section aria-labelledby="memory-title">
      <h1 id="memory-title">Memory</h1>
      <form
        key={q}
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          replaceHash(`#/memory?q=${encodeURIComponent(String(new FormData(e.currentTarget).get('q') ?? ''))}`);
        }}
      >
        <input name="q" type="search" defaultValue={q} placeholder="search long-term memory" aria-label="memory query" />
        <button type="submit">Search</button>
      </form>
      {hits.error && <Problem text={hits.error} />}
      {hits.data && <Warnings warnings={hits.data.warnings} />}
      {q !== '' && hits.data && hits.data.hits.length === 0 && <p class="muted">No memory matches '{q}'.</p>}
      <ol class="hits">
        {hits.data?.hits.map((h) => (
          <li key={h.id}>
            <p>{h.content}</p>
            <p class="muted small">
              {h.id} · score {h.score.toFixed(3)}
              {h.keywords.length > 0 && ` · ${h.keywords.join(', ')}`}
            </p>
          </li>
        ))}
      </ol>
    </section>
  );
}
