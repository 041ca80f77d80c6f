/** The state at a step (a slider over the recorded steps) with the writer of every key, and the quarantined items. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { formatTime, getJson, runHash, runPath, type StateReport, type StepRange } from './client.js';
import { useLoad } from './hooks.js';
import { Head, Problem, Warnings, Toolbar, Writer } from './parts.js';

/** The Backpack of a run at `step`. */
export function StateView(props: {
  session: string;
  runId: string;
  steps: StepRange;
  step: number;
  onStep: (step: number) => void;
  /** Controls for the step shown (`ended`: the run had ended at it). */
  actions?: (step: number, ended: boolean) => ComponentChildren;
}) {
  const { session, runId, steps, step } = props;
  const state = useLoad((signal) => getJson<StateReport>(runPath(runId, 'state'), { session, step }, signal), [session, runId, step]);
  const report = state.data;
  return (
    <section aria-label="state at a step">
      <Toolbar>
        <label for="step-slider">Step</label>
        <input
          id="step-slider"
          type="range"
          min={steps.first}
          max={steps.last}
          step={1}
          value={step}
          onInput={(e) => props.onStep(Number(e.currentTarget.value))}
          aria-valuetext={`step ${step} of ${steps.last}`}
        />
        <output for="step-slider" class="step-number">
          step {step} / {steps.last}
        </output>
        {report && report.position.length > 0 && <span class="muted">next: {report.position.join(' › ')}</span>}
        {report && report.position.length === 0 && <span class="muted">the run had ended</span>}
        {state.loading && <span class="muted">loading…</span>}
        {report && report.step === step && props.actions?.(step, report.position.length === 0)}
      </Toolbar>
      {state.error && <Problem text={state.error} />}
      {report && <Warnings warnings={report.warnings} />}
      {report && (
        <>
          <table class="state" aria-label={`backpack at step ${report.step}`}>
            <Head cols={['Key', 'Value', 'Written by', '#Version', 'At', 'History']} />
            <tbody>
              {report.items.map((item) => (
                <tr key={item.key} data-key={item.key}>
                  <th scope="row">{item.key}</th>
                  <td>
                    <code>{item.summary}</code>
                  </td>
                  <td class="writer">
                    <Writer nodeId={item.provenance.nodeId} namespace={item.provenance.namespace} />
                  </td>
                  <td class="num">v{item.provenance.version}</td>
                  <td>{formatTime(item.provenance.timestamp)}</td>
                  <td>
                    <a href={runHash(session, runId, 'blame', { key: item.key })}>blame</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {report.items.length === 0 && <p class="muted">The backpack is empty at this step.</p>}
          <h2>Quarantined</h2>
          {report.quarantined.length === 0 ? (
            <p class="muted">Nothing quarantined at this step.</p>
          ) : (
            <table class="quarantined">
              <Head cols={['Key', 'Value', 'Reason', 'Quarantined by', 'Written by']} />
              <tbody>
                {report.quarantined.map((q) => (
                  <tr key={q.key} data-key={q.key}>
                    <th scope="row">{q.key}</th>
                    <td>
                      <code>{q.summary}</code>
                    </td>
                    <td>{q.quarantine.reason}</td>
                    <td>{q.quarantine.nodeId ?? ''}</td>
                    <td>
                      <Writer nodeId={q.provenance.nodeId} namespace={q.provenance.namespace} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
      <Denials session={session} runId={runId} />
    </section>
  );
}

interface DeniedEvent {
  line: number;
  event: { timestamp: number; nodeId?: string; namespace?: string; payload: { key?: string; operation?: string; rule?: string } };
}

/**
 * The run's access denials, loaded when opened: finding them reads the whole log (a type filter has no index), which
 * must not slow down showing the state.
 */
function Denials(props: { session: string; runId: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details class="denials-box" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        <h2>Access denials in this run</h2>
      </summary>
      {open && <DenialsTable {...props} />}
    </details>
  );
}

/** Which node was refused which key, and by which rule. */
function DenialsTable({ session, runId }: { session: string; runId: string }) {
  const denied = useLoad(
    (signal) => getJson<{ events: DeniedEvent[]; hasMore: boolean }>(runPath(runId, 'events'), { session, type: 'access.denied', pageSize: 500 }, signal),
    [session, runId],
  );
  const rows = denied.data?.events ?? [];
  return (
    <>
      {denied.error && <Problem text={denied.error} />}
      {denied.data && rows.length === 0 && <p class="muted">No access was denied.</p>}
      {rows.length > 0 && (
        <table class="denials">
          <Head cols={['Node', 'Operation', 'Key', 'Rule', 'At']} />
          <tbody>
            {rows.map(({ line, event }) => (
              <tr key={line} data-key={event.payload.key}>
                <td>
                  <Writer nodeId={event.nodeId ?? null} namespace={event.namespace ?? null} />
                </td>
                <td>{event.payload.operation}</td>
                <th scope="row">{event.payload.key}</th>
                <td>{event.payload.rule}</td>
                <td>{formatTime(event.timestamp)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {denied.data?.hasMore && <p class="muted">More denials in the Events tab (type access.denied).</p>}
    </>
  );
}
