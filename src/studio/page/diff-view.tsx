/** What changed in the Backpack between two steps, and who changed it. */
import { getJson, runPath, type DiffReport, type StepRange } from './client.js';
import { useLoad } from './hooks.js';
import { Head, Problem, Warnings, Writer } from './parts.js';

const MARK = { added: '+', modified: '~', deleted: '−', quarantined: '⊘' } as const;

/** The diff between steps `from` and `to`, chosen with two number fields. */
export function DiffView(props: { session: string; runId: string; steps: StepRange; from: number; to: number; onChange: (from: number, to: number) => void }) {
  const { session, runId, steps, from, to } = props;
  const diff = useLoad((signal) => getJson<DiffReport>(runPath(runId, 'diff'), { session, from, to }, signal), [session, runId, from, to]);
  const report = diff.data;
  return (
    <section aria-label="diff between steps">
      <form
        key={`${from}:${to}`}
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          const form = new FormData(e.currentTarget);
          props.onChange(Number(form.get('from')), Number(form.get('to')));
        }}
      >
        <label>
          From step <input name="from" type="number" min={steps.first} max={steps.last} defaultValue={String(from)} required />
        </label>
        <label>
          to step <input name="to" type="number" min={steps.first} max={steps.last} defaultValue={String(to)} required />
        </label>
        <button type="submit">Show diff</button>
      </form>
      {diff.error && <Problem text={diff.error} />}
      {report && <Warnings warnings={report.warnings} />}
      {report && (
        <>
          <p class="diff-counts" aria-live="polite">
            {report.counts.added} added, {report.counts.modified} modified, {report.counts.deleted} deleted, {report.counts.quarantined} quarantined (step {report.from} → {report.to})
          </p>
          <table class="diff">
            <Head cols={['Change', 'Key', 'Before', 'After', 'By']} />
            <tbody>
              {report.changes.map((c) => (
                <tr key={c.key} class={`change-${c.change}`} data-key={c.key}>
                  <td>
                    {MARK[c.change]} {c.change}
                  </td>
                  <th scope="row">{c.key}</th>
                  <td>
                    <code>{c.before ?? ''}</code>
                  </td>
                  <td>
                    <code>{c.after ?? ''}</code>
                    {c.quarantine && <div class="muted small">quarantined by {c.quarantine.nodeId ?? '?'}: {c.quarantine.reason}</div>}
                  </td>
                  <td>
                    <Writer nodeId={c.by.nodeId} namespace={c.by.namespace} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
