/** The runs table: status, start, duration, node runs, errors, tokens and fork origin; filters; refreshed live. */
import { useState } from 'preact/hooks';
import { formatDuration, formatTime, getJson, runHash, type RunSummary } from './client.js';
import { useLoad } from './hooks.js';
import { Head, Problem, Status } from './parts.js';

const REFRESH_MS = 2000;

function matches(run: RunSummary, text: string): boolean {
  if (text === '') return true;
  const hay = [run.runId, run.sessionKey, run.status, run.error ?? '', run.lastNodeId ?? '', ...run.nodeIds, run.forkedFrom?.runId ?? ''].join(' ').toLowerCase();
  return text
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => hay.includes(word));
}

/** The runs of the data directory, newest first. */
export function RunsView({ session }: { session: string | null }) {
  const runs = useLoad((signal) => getJson<{ runs: RunSummary[] }>('/api/runs', { session: session ?? undefined }, signal), [session], REFRESH_MS);
  const [status, setStatus] = useState('');
  const [text, setText] = useState('');
  const all = [...(runs.data?.runs ?? [])].reverse();
  const statuses = [...new Set(['running', 'waiting', 'stopped', 'completed', 'failed', ...all.map((r) => r.status)])];
  const shown = all.filter((r) => (status === '' || r.status === status) && matches(r, text));
  return (
    <section aria-labelledby="runs-title">
      <div class="toolbar">
        <h1 id="runs-title">Runs</h1>
        <label>
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)} aria-label="filter by status">
            <option value="">all</option>
            {statuses.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Search{' '}
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="run id, node, error…" aria-label="filter runs by text" />
        </label>
        <span class="muted" aria-live="polite">
          {shown.length} of {all.length} runs{runs.loading ? ' · refreshing' : ''}
        </span>
      </div>
      {runs.error && <Problem text={runs.error} />}
      <table class="runs">
        <Head cols={['Run', 'Session', 'Status', 'Started', '#Duration', '#Node runs', '#Errors', '#Tokens', 'Forked from']} />
        <tbody>
          {shown.map((run) => (
            <tr key={`${run.sessionKey}/${run.runId}`} data-run={run.runId}>
              <td>
                <a href={runHash(run.sessionKey, run.runId)}>{run.runId}</a>
              </td>
              <td>{run.sessionKey}</td>
              <td>
                <Status status={run.status} />
                {run.error && <div class="muted small">{run.error}</div>}
                {run.damaged && <div class="warn small">damaged: {run.damaged}</div>}
              </td>
              <td>{formatTime(run.startedAt)}</td>
              <td class="num">{formatDuration(run.durationMs, run.durationLowerBound)}</td>
              <td class="num">{run.stepCount}</td>
              <td class="num">{run.errorCount}</td>
              <td class="num">{run.tokenUsage.total}</td>
              <td>{run.forkedFrom && <a href={runHash(run.sessionKey, run.forkedFrom.runId)}>{`${run.forkedFrom.runId} @ step ${run.forkedFrom.step}`}</a>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {!runs.loading && all.length === 0 && !runs.error && <p class="muted">No runs recorded in this data directory yet.</p>}
    </section>
  );
}
