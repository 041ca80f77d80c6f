/**
 * One run: its header (status, duration, steps, fork origin), live events while it runs, and the tabs trace,
 * events, state (step slider), diff, blame and recorded flow. The tab and its parameters live in the location
 * hash, so every view can be linked to and the back button works.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { formatDuration, formatTime, getJson, runHash, runPath, streamUrl, type RunDetail, type RunPage, type RunTrace, type SteerJob, type StateReport, type TracePage } from './client.js';
import { BlameView } from './blame-view.js';
import { DiffView } from './diff-view.js';
import { EventsView, type EventFilters } from './events-view.js';
import { FlowView } from './flow-view.js';
import { replaceHash, useLoad } from './hooks.js';
import { Problem, Status } from './parts.js';
import { StateView } from './state-view.js';
import { AnswerPanel, ForkButton, JobLine, ResumePanel } from './steer-panel.js';
import { StartingRun } from './starting-run.js';
import { SHOWN, TraceView } from './trace-view.js';

const TABS = [
  ['trace', 'Trace'],
  ['events', 'Events'],
  ['state', 'State'],
  ['diff', 'Diff'],
  ['blame', 'Blame'],
  ['flow', 'Flow'],
] as const;

interface LiveEvent {
  seq: number;
  type: string;
  namespace?: string;
  nodeId?: string;
}

/**
 * While the run is running: its new events from the server's tail of the log. Returns how many arrived (views
 * reload on it), the latest few, and why the stream stopped when the server could not follow the run (`failure`:
 * the run was deleted or replaced by a new run of the same id, or its log could not be read).
 */
function useLive(session: string, runId: string, running: boolean, from: number, tokenRequired: boolean): { count: number; latest: LiveEvent[]; ended: boolean; failure?: string } {
  const [live, setLive] = useState<{ count: number; latest: LiveEvent[]; ended: boolean; failure?: string }>({ count: 0, latest: [], ended: false });
  useEffect(() => {
    if (!running) return;
    const source = new EventSource(streamUrl(runPath(runId, 'stream'), { session, from }, tokenRequired));
    source.addEventListener('event', (message) => {
      const event = JSON.parse((message as MessageEvent<string>).data) as LiveEvent;
      const ended = event.type === 'run.completed' || event.type === 'run.failed' || event.type === 'run.waiting';
      setLive((l) => ({ ...l, count: l.count + 1, latest: [event, ...l.latest].slice(0, 8), ended: l.ended || ended }));
      if (ended) source.close();
    });
    source.addEventListener('failure', (message) => {
      const { error } = JSON.parse((message as MessageEvent<string>).data) as { error: string };
      source.close();
      setLive((l) => ({ ...l, ended: true, failure: error }));
    });
    // A stream the server refused (the run is gone: a 404; a reconnection to a replaced run: a 409) is closed by the
    // browser without an event: said too, rather than a live view that waits for ever.
    source.addEventListener('error', () => {
      if (source.readyState !== EventSource.CLOSED) return;
      setLive((l) => (l.ended ? l : { ...l, ended: true, failure: `the server no longer streams run ${runId} (deleted, or replaced by a new run of the same id)` }));
    });
    return () => source.close();
  }, [session, runId, running, from, tokenRequired]);
  return live;
}

/** Arrow keys, Home and End move between the tabs (the WAI-ARIA tabs pattern); the new tab gets the focus. */
function moveTab(e: KeyboardEvent, tab: string, go: (tab: string) => void): void {
  const at = TABS.findIndex(([id]) => id === tab);
  const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: TABS.length - 1 }[e.key];
  if (to === undefined) return;
  e.preventDefault();
  const [id] = TABS[(to + TABS.length) % TABS.length]!;
  go(id);
  requestAnimationFrame(() => document.getElementById(`tab-${id}`)?.focus());
}

function intOf(params: URLSearchParams, name: string, fallback: number): number {
  const v = Number(params.get(name));
  return params.has(name) && Number.isInteger(v) ? v : fallback;
}

/** The run view. */
export function RunView(props: { session: string; runId: string; tab: string; params: URLSearchParams; eventTypes: string[]; canWrite: boolean; tokenRequired: boolean }) {
  const { session, runId, tab, params, canWrite, tokenRequired } = props;
  const [reload, setReload] = useState(0);
  const [job, setJob] = useState<SteerJob | undefined>();
  // While a resume the studio started runs, the run is polled: its child may not have written anything yet.
  const jobRunning = job?.state === 'running';
  const detail = useLoad((signal) => getJson<RunPage>(runPath(runId), { session }, signal), [session, runId, reload], jobRunning ? 1000 : undefined);
  const meta = detail.data?.meta;
  const latestJob = detail.data?.job ?? undefined;
  useEffect(() => {
    // A job seen running has ended: read the run again, as it ended (the answer that told may predate its last events).
    if (jobRunning && latestJob !== undefined && latestJob.state !== 'running') setReload((r) => r + 1);
    setJob(latestJob);
  }, [latestJob?.state, latestJob?.startedAt]);
  const live = useLive(session, runId, meta?.status === 'running' || jobRunning, meta?.eventCount ?? 0, tokenRequired);
  useEffect(() => {
    if (live.ended) setReload((r) => r + 1);
  }, [live.ended]);
  const onJob = (next: SteerJob): void => {
    setJob(next);
    setReload((r) => r + 1);
  };
  const go = (next: string, extra: Record<string, string | number> = {}): void => replaceHash(runHash(session, runId, next, extra));

  if (detail.error && !detail.data) {
    // No such run: perhaps one the studio is starting (a fork whose reply came before its child wrote anything).
    if (detail.status === 404) return <StartingRun session={session} runId={runId} notFound={detail.error} onFound={() => setReload((r) => r + 1)} />;
    return <Problem text={detail.error} />;
  }
  if (!detail.data || !meta) return <p class="muted">Loading run {runId}…</p>;
  const { steps } = detail.data;
  return (
    <section aria-labelledby="run-title">
      <p>
        <a href="#/">← All runs</a>
      </p>
      <h1 id="run-title">
        {runId} <Status status={meta.status} />
      </h1>
      <dl class="facts">
        <Fact label="Session">{session}</Fact>
        <Fact label="Started">{formatTime(meta.startedAt)}</Fact>
        <Fact label="Duration">{formatDuration(meta.durationMs, detail.data.durationLowerBound)}</Fact>
        <Fact label="Steps">
          {steps.first}..{steps.last}
        </Fact>
        <Fact label="Events">{meta.eventCount}</Fact>
        <Fact label="Errors">{meta.errorCount}</Fact>
        <Fact label="Tokens">{meta.tokenUsage.total}</Fact>
        {detail.data.forkedFrom && (
          <Fact label="Forked from">
            <a href={runHash(session, detail.data.forkedFrom.runId)}>{detail.data.forkedFrom.runId}</a> at step {detail.data.forkedFrom.step}
          </Fact>
        )}
      </dl>
      {meta.damaged && (
        <p class="warning-box" role="status">
          <b>Damaged:</b> {meta.damaged}
        </p>
      )}
      {meta.error && <Problem text={meta.error} />}
      {job && <JobLine job={job} />}
      {meta.status === 'waiting' && meta.interrupt && !jobRunning && <AnswerPanel key={`${meta.lastSeq}`} detail={detail.data} session={session} canWrite={canWrite} onJob={onJob} />}
      {(meta.status === 'stopped' || meta.status === 'failed') && !jobRunning && <ResumePanel detail={detail.data} session={session} canWrite={canWrite} onJob={onJob} />}
      {live.failure !== undefined && <Problem text={`The live view stopped: ${live.failure}`} />}
      {(meta.status === 'running' || live.count > 0) && (
        <aside class="live" aria-live="polite" aria-label="live events">
          <b>Live</b> · {live.count} new event{live.count === 1 ? '' : 's'}
          <ul>
            {live.latest.map((e) => (
              <li key={e.seq}>
                #{e.seq} {e.type} <span class="muted">{e.namespace ?? e.nodeId ?? ''}</span>
              </li>
            ))}
          </ul>
        </aside>
      )}
      <div role="tablist" aria-label="run views" class="tabs" onKeyDown={(e) => moveTab(e, tab, go)}>
        {TABS.map(([id, label]) => (
          <button
            type="button"
            role="tab"
            id={`tab-${id}`}
            aria-selected={tab === id}
            aria-controls="tab-panel"
            tabIndex={tab === id ? 0 : -1}
            onClick={() => go(id)}
          >
            {label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id="tab-panel" aria-labelledby={`tab-${tab}`}>
        {tab === 'trace' && <TraceTab session={session} runId={runId} version={live.count} />}
        {tab === 'events' && (
          <EventsView
            session={session}
            runId={runId}
            eventTypes={props.eventTypes}
            liveCount={live.count}
            filters={{ type: params.get('type') ?? '', namespace: params.get('namespace') ?? '', page: intOf(params, 'page', 1), pageSize: intOf(params, 'pageSize', 50) }}
            onChange={(f: EventFilters) => go('events', { ...(f.type ? { type: f.type } : {}), ...(f.namespace ? { namespace: f.namespace } : {}), page: f.page, pageSize: f.pageSize })}
          />
        )}
        {tab === 'state' && (
          <StateView
            session={session}
            runId={runId}
            steps={steps}
            step={intOf(params, 'step', steps.last)}
            onStep={(step) => go('state', { step })}
            actions={(step, ended) => (ended ? null : <ForkButton detail={detail.data!} session={session} step={step} canWrite={canWrite} />)}
          />
        )}
        {tab === 'diff' && (
          <DiffView
            session={session}
            runId={runId}
            steps={steps}
            from={intOf(params, 'from', steps.first)}
            to={intOf(params, 'to', steps.last)}
            onChange={(from, to) => go('diff', { from, to })}
          />
        )}
        {tab === 'blame' && <BlameTab session={session} runId={runId} keyName={params.get('key') ?? ''} onKey={(key) => go('blame', { key })} />}
        {tab === 'flow' && <FlowTab detail={detail.data} session={session} runId={runId} />}
      </div>
    </section>
  );
}

function Fact({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function TraceTab({ session, runId, version }: { session: string; runId: string; version: number }) {
  // The head of the log's trace is drawn at once; the whole trace's first page replaces it when it arrives.
  const head = useLoad((signal) => getJson<TracePage>(runPath(runId, 'trace'), { session, limit: SHOWN, head: 1 }, signal), [session, runId, version]);
  const trace = useLoad((signal) => getJson<TracePage>(runPath(runId, 'trace'), { session, limit: SHOWN }, signal), [session, runId, version]);
  if (trace.error) return <Problem text={trace.error} />;
  const more = (offset: number, limit: number): Promise<TracePage> => getJson<TracePage>(runPath(runId, 'trace'), { session, offset, limit });
  const shown = trace.data ?? head.data;
  return shown ? <TraceView key={`${version}:${shown.complete}`} page={shown} more={more} /> : <p class="muted">Loading trace…</p>;
}

function BlameTab(props: { session: string; runId: string; keyName: string; onKey: (key: string) => void }) {
  const last = useLoad((signal) => getJson<StateReport>(runPath(props.runId, 'state'), { session: props.session }, signal), [props.session, props.runId]);
  const keys = [...(last.data?.items.map((i) => i.key) ?? []), ...(last.data?.quarantined.map((q) => q.key) ?? [])];
  return <BlameView {...props} keys={keys} />;
}

function FlowTab({ detail, session, runId }: { detail: RunDetail; session: string; runId: string }) {
  const trace = useLoad((signal) => getJson<RunTrace>(runPath(runId, 'trace'), { session }, signal), [session, runId]);
  if (detail.flowError) return <Problem text={detail.flowError} />;
  if (detail.flow === null) return <p class="muted">No flow config was recorded with this run (runs started with `backpackflow run` record theirs).</p>;
  if (trace.error) return <Problem text={trace.error} />;
  return trace.data ? <FlowView flow={detail.flow} trace={trace.data} /> : <p class="muted">Loading the flow's visits…</p>;
}
