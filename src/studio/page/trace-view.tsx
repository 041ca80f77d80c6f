/** The trace of a run as a span tree: nodes nested by span with durations and actions, routes, retries, errors. */
import { useState } from 'preact/hooks';
import type { RunTrace, TracePage } from './client.js';
import { formatDuration, formatMs } from './client.js';
import { Status, Warnings } from './parts.js';

type Item = RunTrace['items'][number];
type Node = Extract<Item, { kind: 'node' }>['node'];

function Line({ item }: { item: Exclude<Item, { kind: 'node' }> }) {
  switch (item.kind) {
    case 'route':
      return <li class="route">→ route <b>{item.action}</b>: {item.from} → {item.to}</li>;
    case 'route-missing':
      return <li class="warn">⚠ no route for '{item.action}' from {item.from} (available: {item.available.join(', ') || 'none'})</li>;
    case 'retry':
      return <li class="warn">↻ attempt {item.attempt}/{item.maxRetries} failed: {item.error}</li>;
    case 'error':
      return <li class="bad">✗ error in {item.phase}: {item.error}</li>;
    case 'quarantine':
      return <li class="quarantine">⊘ quarantined <b>{item.key}</b>: {item.reason}</li>;
    case 'access-denied':
      return <li class="quarantine">⛔ access denied: {item.operation} <b>{item.key}</b> ({item.rule})</li>;
  }
}

function NodeItem({ node, longest }: { node: Node; longest: number }) {
  const width = node.durationMs === null || longest <= 0 ? 0 : Math.max(1, Math.round((node.durationMs / longest) * 100));
  const summary = (
    <span class="span-line">
      <Status status={node.status} /> <b>{node.nodeName ?? node.nodeId ?? '(node)'}</b> <span class="muted">{node.namespace}</span>{' '}
      <span class="duration">{formatMs(node.durationMs)}</span>
      {node.action !== null && <span class="action"> → {node.action}</span>}
      <meter class="bar" min={0} max={100} value={width} aria-label="share of the longest node" />
    </span>
  );
  if (node.items.length === 0) return <li class="span">{summary}</li>;
  return (
    <li class="span">
      <details open>
        <summary>{summary}</summary>
        <Items items={node.items} longest={longest} />
      </details>
    </li>
  );
}

/** Items drawn at first, and added per click: a 10,000-step run must open fast, and nobody reads 10,000 lines at once. */
export const SHOWN = 200;
const MORE = 1000;

function ItemList({ items, longest }: { items: Item[]; longest: number }) {
  return <>{items.map((item) => (item.kind === 'node' ? <NodeItem node={item.node} longest={longest} /> : <Line item={item} />))}</>;
}

function MoreButton({ hidden, onClick, busy }: { hidden: number; onClick: () => void; busy?: boolean }) {
  return (
    <li>
      <button type="button" class="more" onClick={onClick} disabled={busy}>
        {busy ? 'Loading…' : `Show ${Math.min(MORE, hidden)} more (${hidden} not shown)`}
      </button>
    </li>
  );
}

/** The lines nested under a node (all of them are at hand). */
function Items({ items, longest }: { items: Item[]; longest: number }) {
  const [limit, setLimit] = useState(SHOWN);
  const hidden = items.length - limit;
  return (
    <ul class="tree">
      <ItemList items={items.slice(0, limit)} longest={longest} />
      {hidden > 0 && <MoreButton hidden={hidden} onClick={() => setLimit((l) => l + MORE)} />}
    </ul>
  );
}

/**
 * The whole trace: its header and its first top-level lines as the server sent them (`page`), the following ones
 * asked for per click with `more(offset, limit)`. A page of the log's head only (`complete` false) says that the rest
 * of the log is being read, instead of the header that the rest may still change.
 */
export function TraceView({ page, more }: { page: TracePage; more: (offset: number, limit: number) => Promise<TracePage> }) {
  const [extra, setExtra] = useState<Item[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const shown = page.items.length + extra.length;
  const hidden = page.itemCount - page.offset - shown;
  const loadMore = (): void => {
    setBusy(true);
    more(page.offset + shown, MORE).then(
      (next) => {
        setExtra((items) => [...items, ...next.items]);
        setError(undefined);
        setBusy(false);
      },
      (e: Error) => {
        setError(e.message);
        setBusy(false);
      },
    );
  };
  return (
    <section aria-label="trace" data-complete={String(page.complete)}>
      {page.complete ? (
        <p>
          <Status status={page.status} /> {page.flowNamespace || '(root flow)'} {formatDuration(page.durationMs, page.durationLowerBound)}
          {page.action && <span class="action"> → {page.action}</span>}
          {page.starts > 1 && <span class="warn"> · resumed {page.starts - 1}×</span>}
          {page.error && <span class="bad"> · {page.error}</span>}
        </p>
      ) : (
        <p class="muted" role="status">
          {page.flowNamespace || '(root flow)'} · the first lines of the log; reading the rest…
        </p>
      )}
      <Warnings warnings={page.warnings} />
      <ul class="tree">
        <ItemList items={page.items} longest={page.longestMs} />
        <ItemList items={extra} longest={page.longestMs} />
        {page.complete && hidden > 0 && <MoreButton hidden={hidden} onClick={loadMore} busy={busy} />}
      </ul>
      {error && <p class="bad">{error}</p>}
    </section>
  );
}
