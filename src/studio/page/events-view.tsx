/** The events table: filters by type and namespace pattern, paged through the server (which seeks by the log's index). */
import { getJson, runPath, type EventsPageResult } from './client.js';
import { useLoad } from './hooks.js';
import { Head, Problem, Warnings } from './parts.js';

/** What the events view is asked to show (kept in the location hash). */
export interface EventFilters {
  type: string;
  namespace: string;
  page: number;
  pageSize: number;
}

function payloadText(payload: unknown): string {
  const text = JSON.stringify(payload);
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

/** One page of a run's events. */
export function EventsView(props: { session: string; runId: string; eventTypes: string[]; filters: EventFilters; onChange: (f: EventFilters) => void; liveCount: number }) {
  const { session, runId, filters, onChange } = props;
  const page = useLoad(
    (signal) => getJson<EventsPageResult>(runPath(runId, 'events'), { session, type: filters.type, namespace: filters.namespace, page: filters.page, pageSize: filters.pageSize }, signal),
    [session, runId, filters.type, filters.namespace, filters.page, filters.pageSize, props.liveCount],
  );
  const data = page.data;
  const pages = data?.total != null ? Math.max(1, Math.ceil(data.total / filters.pageSize)) : undefined;
  return (
    <section aria-label="events">
      <form
        key={`${filters.type}|${filters.namespace}`}
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          const form = new FormData(e.currentTarget);
          onChange({ ...filters, type: String(form.get('type') ?? ''), namespace: String(form.get('namespace') ?? '').trim(), page: 1 });
        }}
      >
        <label>
          Type{' '}
          <select name="type">
            <option value="" selected={filters.type === ''}>
              any
            </option>
            {props.eventTypes.map((t) => (
              <option value={t} selected={t === filters.type}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Namespace{' '}
          <input name="namespace" defaultValue={filters.namespace} placeholder="e.g. agent.** or *.chat" />
        </label>
        <button type="submit">Filter</button>
        <label>
          Per page{' '}
          <select value={String(filters.pageSize)} onChange={(e) => onChange({ ...filters, pageSize: Number(e.currentTarget.value), page: 1 })}>
            {[25, 50, 100, 250, 500].map((n) => (
              <option value={String(n)}>{n}</option>
            ))}
          </select>
        </label>
      </form>
      {page.error && <Problem text={page.error} />}
      {data && <Warnings warnings={data.warnings} />}
      {data && data.corrupt.length > 0 && <Problem text={`${data.corrupt.length} corrupt line(s) in the log: ${data.corrupt.map((c) => `line ${c.line}: ${c.error}`).join('; ')}`} />}
      <nav class="pager" aria-label="event pages">
        <button type="button" disabled={filters.page <= 1} onClick={() => onChange({ ...filters, page: filters.page - 1 })}>
          ← Previous
        </button>
        <span>
          page {filters.page}
          {pages !== undefined ? ` of ${pages}` : ''}
          {data?.total != null ? ` · ${data.total} events` : ''}
        </span>
        <button type="button" disabled={!data?.hasMore} onClick={() => onChange({ ...filters, page: filters.page + 1 })}>
          Next →
        </button>
      </nav>
      <table class="events">
        <Head cols={['#Line', '#Seq', 'Time', 'Type', 'Namespace', 'Node', 'Payload']} />
        <tbody>
          {data?.events.map(({ line, event }) => (
            <tr key={line} data-type={event.type}>
              <td class="num">{line}</td>
              <td class="num">{event.seq}</td>
              <td>{new Date(event.timestamp).toLocaleTimeString()}</td>
              <td>{event.type}</td>
              <td>{event.namespace ?? ''}</td>
              <td>{event.nodeId ?? ''}</td>
              <td>
                <details>
                  <summary>
                    <code>{payloadText(event.payload)}</code>
                  </summary>
                  <pre>{JSON.stringify(event, null, 2)}</pre>
                </details>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.events.length === 0 && <p class="muted">No events match.</p>}
    </section>
  );
}
