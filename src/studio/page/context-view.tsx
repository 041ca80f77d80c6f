/**
 * The workspace's context store (`--workspace`): the tree a directory at a time, with each node's frames, its heads
 * and their stale markers; a frame's content on demand (as stored: redacted before it was written).
 */
import { useState } from 'preact/hooks';
import { getJson, type ContextNodeView, type ContextSummary } from './client.js';
import { useLoad } from './hooks.js';
import { Head, Problem } from './parts.js';

interface FrameDetail {
  frameId: string;
  path: string;
  type: string;
  agentId: string;
  content: string;
  metadata: Record<string, unknown>;
}

function contextHash(path: string): string {
  return path === '' ? '#/context' : `#/context?path=${encodeURIComponent(path)}`;
}

/** `a/b/c` as links to `a`, `a/b` and the root. */
function Crumbs({ path }: { path: string }) {
  const parts = path === '' ? [] : path.split('/');
  return (
    <nav aria-label="path" class="crumbs">
      <a href={contextHash('')}>(workspace)</a>
      {parts.map((name, i) => {
        const to = parts.slice(0, i + 1).join('/');
        return (
          <span>
            {' / '}
            {i === parts.length - 1 ? <span aria-current="page">{name}</span> : <a href={contextHash(to)}>{name}</a>}
          </span>
        );
      })}
    </nav>
  );
}

function Heads({ heads }: { heads: ContextNodeView['heads'] }) {
  if (heads.length === 0) return <span class="muted">—</span>;
  return (
    <span class="heads">
      {heads.map((h) => (
        <span class={`tag${h.stale ? ' stale' : ''}`} title={`head ${h.frameId}${h.stale ? ' (stale: made for an older version of the node, or marked stale)' : ''}`}>
          {h.type}
          {h.stale ? ' · stale' : ''}
        </span>
      ))}
    </span>
  );
}

/** The Context view at `path` (`''`: the workspace root). */
export function ContextView({ path }: { path: string }) {
  const summary = useLoad((signal) => getJson<ContextSummary>('/api/context', {}, signal), []);
  const node = useLoad((signal) => getJson<ContextNodeView>('/api/context/node', { path }, signal), [path]);
  const [shown, setShown] = useState<string | undefined>();
  const s = summary.data?.status;
  const view = node.data;
  return (
    <section aria-labelledby="context-title">
      <h1 id="context-title">Context</h1>
      {summary.error && <Problem text={summary.error} />}
      {summary.data && s && (
        <p class="muted">
          {summary.data.workspace} · {s.nodes} nodes · {s.frames} frames · {s.heads} heads
          {s.stale > 0 ? <span class="warn"> · {s.stale} stale</span> : ''} · {s.agents} agents
        </p>
      )}
      <Crumbs path={path} />
      {node.error && <Problem text={node.error} />}
      {view && (
        <>
          <p>
            <b>{view.node.path === '' ? '(workspace root)' : view.node.path}</b> <span class="muted small">
              {view.node.kind} · node {view.node.nodeId.slice(0, 12)}
            </span>
          </p>
          {view.node.kind === 'dir' && (
            <table class="context-children" aria-label="children">
              <Head cols={['Name', 'Kind', '#Size', '#Frames', 'Heads', '#Stale below']} />
              <tbody>
                {view.children.map((c) => (
                  <tr key={c.path} data-path={c.path} class={c.staleBelow > 0 ? 'has-stale' : undefined}>
                    <th scope="row">
                      <a href={contextHash(c.path)}>
                        {c.name}
                        {c.kind === 'dir' ? '/' : ''}
                      </a>
                    </th>
                    <td>{c.kind}</td>
                    <td class="num">{c.kind === 'dir' ? `${c.size} ${c.size === 1 ? 'entry' : 'entries'}` : `${c.size} B`}</td>
                    <td class="num">{c.frames || ''}</td>
                    <td>
                      <Heads heads={c.heads} />
                    </td>
                    <td class={`num${c.staleBelow > 0 ? ' warn' : ''}`}>{c.staleBelow || ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {view.moreChildren > 0 && <p class="muted">{view.moreChildren} more entries not listed.</p>}
          <h2>Heads</h2>
          <Heads heads={view.heads} />
          <h2>Frames</h2>
          {view.frames.length === 0 ? (
            <p class="muted">No frames on this node.</p>
          ) : (
            <table class="frames" aria-label="frames">
              <Head cols={['Type', 'Agent', '#Seq', 'Head', 'Frame', '']} />
              <tbody>
                {view.frames.map((f) => (
                  <tr key={f.frameId} data-frame={f.frameId}>
                    <td>{f.type}</td>
                    <td>{f.agentId}</td>
                    <td class="num">{f.seq}</td>
                    <td>{f.isHead ? (view.heads.find((h) => h.frameId === f.frameId)?.stale ? <span class="warn">head · stale</span> : 'head') : ''}</td>
                    <td>
                      <code>{f.frameId.slice(0, 16)}…</code>
                    </td>
                    <td>
                      <button type="button" aria-expanded={shown === f.frameId} onClick={() => setShown(shown === f.frameId ? undefined : f.frameId)}>
                        {shown === f.frameId ? 'Hide' : 'Show'}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {shown && <FrameContent frameId={shown} />}
        </>
      )}
    </section>
  );
}

function FrameContent({ frameId }: { frameId: string }) {
  const frame = useLoad((signal) => getJson<FrameDetail>(`/api/context/frames/${frameId}`, {}, signal), [frameId]);
  if (frame.error) return <Problem text={frame.error} />;
  if (!frame.data) return <p class="muted">Loading frame…</p>;
  const f = frame.data;
  return (
    <section aria-label={`frame ${f.frameId}`} class="frame-content">
      <h3>
        {f.type} by {f.agentId} <span class="muted small">{f.frameId}</span>
      </h3>
      <pre>{f.content}</pre>
      {Object.keys(f.metadata).length > 0 && <pre class="small">{JSON.stringify(f.metadata, null, 2)}</pre>}
    </section>
  );
}
