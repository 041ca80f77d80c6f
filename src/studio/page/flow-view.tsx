/**
 * The recorded flow config as a graph: each node with its type, namespace, how many times it ran, and its routes
 * (condition → target); composites expand into their internal flow; the last node that ran is marked.
 */
import type { RunTrace } from './client.js';

/** The parts of a recorded flow config the graph reads (the file is shown as recorded; fields may be missing). */
interface FlowJson {
  namespace?: string;
  entry?: string;
  nodes?: NodeJson[];
  edges?: Array<{ from: string; to: string; condition?: string }>;
}

interface NodeJson {
  type: string;
  id: string;
  namespaceSegment?: string;
  internalFlow?: FlowJson;
}

type Item = RunTrace['items'][number];

/** Runs per namespace, and the namespace of the last node that started. */
export function visits(trace: RunTrace): { counts: Map<string, number>; last: string | null } {
  const counts = new Map<string, number>();
  let last: string | null = null;
  const walk = (items: Item[]): void => {
    for (const item of items) {
      if (item.kind !== 'node') continue;
      const ns = item.node.namespace ?? item.node.nodeId ?? '';
      counts.set(ns, (counts.get(ns) ?? 0) + 1);
      last = ns;
      walk(item.node.items);
    }
  };
  walk(trace.items);
  return { counts, last };
}

function join(parent: string, segment: string): string {
  return parent ? `${parent}.${segment}` : segment;
}

function Graph({ flow, namespace, counts, last }: { flow: FlowJson; namespace: string; counts: Map<string, number>; last: string | null }) {
  const nodes = flow.nodes ?? [];
  const entry = flow.entry ?? nodes[0]?.id;
  return (
    <ol class="graph">
      {nodes.map((node) => {
        const ns = join(namespace, node.namespaceSegment ?? node.id);
        const runs = counts.get(ns) ?? 0;
        const routes = (flow.edges ?? []).filter((e) => e.from === node.id);
        return (
          <li key={node.id} data-node={ns} class={ns === last ? 'last-node' : runs === 0 ? 'unvisited' : ''}>
            <div>
              <b>{node.id}</b> <span class="muted">{node.type}</span> <span class="muted">{ns}</span> <span class="visits">×{runs}</span>
              {node.id === entry && <span class="tag">entry</span>}
              {ns === last && <span class="tag">last</span>}
            </div>
            {routes.length > 0 && (
              <ul class="routes">
                {routes.map((r) => (
                  <li>
                    <span class="action">{r.condition ?? 'default'}</span> → {r.to}
                  </li>
                ))}
              </ul>
            )}
            {node.internalFlow && (
              <details open>
                <summary>internal flow</summary>
                <Graph flow={node.internalFlow} namespace={ns} counts={counts} last={last} />
              </details>
            )}
          </li>
        );
      })}
    </ol>
  );
}

/** The graph of a recorded flow config, with the visits of `trace`. */
export function FlowView({ flow, trace }: { flow: unknown; trace: RunTrace }) {
  const config = flow as FlowJson;
  const { counts, last } = visits(trace);
  return (
    <section aria-label="flow graph">
      <Graph flow={config} namespace={config.namespace ?? ''} counts={counts} last={last} />
      <details>
        <summary>Recorded flow config (JSON)</summary>
        <pre class="flow">{JSON.stringify(flow, null, 2)}</pre>
      </details>
    </section>
  );
}
