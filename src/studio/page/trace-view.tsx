/** The trace of a run as a span tree: nodes nested by span with durations and actions, routes, retries, errors. */
import { useState } from 'preact/hooks';
import type { RunTrace } from './client.js';
import { formatMs } from './client.js';
import { Status } from './parts.js';

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
const SHOWN = 200;
const MORE = 1000;

function Items({ items, longest }: { items: Item[]; longest: number }) {
  const [limit, setLimit] = useState(SHOWN);
  const hidden = items.length - limit;
  return (
    <ul class="tree">
      {items.slice(0, limit).map((item) => (item.kind === 'node' ? <NodeItem node={item.node} longest={longest} /> : <Line item={item} />))}
      {hidden > 0 && (
        <li>
          <button type="button" class="more" onClick={() => setLimit((l) => l + MORE)}>
            Show {Math.min(MORE, hidden)} more ({hidden} not shown)
          </button>
        </li>
      )}
    </ul>
  );
}

function longestNode(items: Item[]): number {
  let max = 0;
  for (const item of items) {
    if (item.kind !== 'node') continue;
    max = Math.max(max, item.node.durationMs ?? 0, longestNode(item.node.items));
  }
  return max;
}

/** The whole trace. */
export function TraceView({ trace }: { trace: RunTrace }) {
  return (
    <section aria-label="trace">
      <p>
        <Status status={trace.status} /> {trace.flowNamespace || '(root flow)'} {formatMs(trace.durationMs)}
        {trace.action && <span class="action"> → {trace.action}</span>}
        {trace.starts > 1 && <span class="warn"> · resumed {trace.starts - 1}×</span>}
        {trace.error && <span class="bad"> · {trace.error}</span>}
      </p>
      <Items items={trace.items} longest={longestNode(trace.items)} />
    </section>
  );
}
