/** Small shared pieces of the page. */
import type { ComponentChildren } from 'preact';

/** A run or node status as a colored badge. */
export function Status({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

/** An error from the API, announced to screen readers. */
export function Problem({ text }: { text: string }) {
  return (
    <p class="problem" role="alert">
      {text}
    </p>
  );
}

/**
 * What a reader could not read or verify and how the answer was served despite it (a damaged keyframe, a log cut
 * short, a skipped corrupt line): shown above the answer, so that nothing damaged looks whole.
 */
export function Warnings({ warnings }: { warnings: readonly string[] | undefined }) {
  if (warnings === undefined || warnings.length === 0) return null;
  return (
    <ul class="problem warnings" role="alert" aria-label="warnings">
      {warnings.map((w) => (
        <li>{w}</li>
      ))}
    </ul>
  );
}

/** A node (or nothing, for the run's input) with its namespace. */
export function Writer({ nodeId, namespace }: { nodeId: string | null; namespace: string | null }) {
  if (nodeId === null) return <span class="muted">(input)</span>;
  return (
    <span>
      <span class="node">{nodeId}</span>
      {namespace && <span class="muted"> @ {namespace}</span>}
    </span>
  );
}

/** A labelled group of controls above a view. */
export function Toolbar({ children }: { children: ComponentChildren }) {
  return <div class="toolbar">{children}</div>;
}

/** A table's header row; a column named with a leading `#` is numeric (right-aligned). */
export function Head({ cols }: { cols: string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) =>
          c.startsWith('#') ? (
            <th scope="col" class="num">
              {c.slice(1)}
            </th>
          ) : (
            <th scope="col">{c}</th>
          ),
        )}
      </tr>
    </thead>
  );
}
