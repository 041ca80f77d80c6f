/** Every write of one key: step, node, namespace, version, value, and quarantines with their reasons. */
import { formatTime, getJson, runPath, type BlameReport } from './client.js';
import { useLoad } from './hooks.js';
import { Head, Problem, Warnings, Writer } from './parts.js';

/** The blame of `keyName` (asked for with a text field offering the keys of the last state). */
export function BlameView(props: { session: string; runId: string; keyName: string; keys: string[]; onKey: (key: string) => void }) {
  const { session, runId, keyName } = props;
  const blame = useLoad(
    (signal) => (keyName === '' ? Promise.resolve(undefined) : getJson<BlameReport>(runPath(runId, `blame/${encodeURIComponent(keyName)}`), { session }, signal)),
    [session, runId, keyName],
  );
  const report = blame.data;
  return (
    <section aria-label="blame of a key">
      <form
        key={keyName}
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          props.onKey(String(new FormData(e.currentTarget).get('key') ?? '').trim());
        }}
      >
        <label>
          Key <input name="key" list="known-keys" defaultValue={keyName} required autocomplete="off" />
        </label>
        <datalist id="known-keys">
          {props.keys.map((k) => (
            <option value={k} />
          ))}
        </datalist>
        <button type="submit">Blame</button>
      </form>
      {blame.error && <Problem text={blame.error} />}
      {report && <Warnings warnings={report.warnings} />}
      {report && report.writes.length === 0 && <p class="muted">No write of '{report.key}' in this run.</p>}
      {report && report.writes.length > 0 && (
        <table class="blame">
          <Head cols={['#Step', 'By', '#Version', 'Value', 'At']} />
          <tbody>
            {report.writes.map((w) => (
              <tr key={`${w.step}-${w.seq ?? w.action}`} class={w.action === 'quarantine' ? 'change-quarantined' : w.action === 'delete' ? 'change-removed' : ''}>
                <td class="num">{w.step}</td>
                <td>
                  <Writer nodeId={w.nodeId} namespace={w.namespace} />
                </td>
                <td class="num">{w.version === null ? '' : `v${w.version}`}</td>
                <td>
                  {w.action === 'quarantine' ? (
                    <span class="quarantine">⊘ quarantined: {w.reason}</span>
                  ) : w.action === 'delete' ? (
                    <span class="muted">✕ deleted</span>
                  ) : (
                    <code>{w.summary}</code>
                  )}
                </td>
                <td>{formatTime(w.timestamp)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
