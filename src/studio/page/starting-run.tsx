/**
 * A run that is not in the store (yet): the view of a fork the studio started whose child has not written its run
 * when the fork's reply came (the reply waits a few seconds, a loaded machine's CLI takes longer to start). The page
 * asks the studio for the job writing the run, and while it runs shows the run as starting and looks again every
 * second, until the run exists (then the run view takes over), the job ends without it (its error is shown), or a
 * generous bound passes (then what to do from a terminal). A run the studio has no job for is a plain "no run".
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, getJson, runHash, runPath, type SteerJob } from './client.js';
import { Problem, Status } from './parts.js';
import { JobLine } from './steer-panel.js';

/** How long after one look (the job, then the run) the next is taken while the job runs. */
const POLL_MS = 1000;
/** How long the page waits for a running job's run before it says what to do from a terminal. */
const PATIENCE_MS = 60_000;

/** What the last look found: the studio's job for the run (null: none), or why the look failed. */
interface Look {
  job: SteerJob | null;
  error?: string;
  /** The job still runs, the run is still missing, and the page has waited {@link PATIENCE_MS}. */
  overdue?: boolean;
}

/** Whether the run exists now, as the run view asks (a 404 is no; any other failure is thrown). */
async function runExists(session: string, runId: string, signal: AbortSignal): Promise<boolean> {
  try {
    await getJson(runPath(runId), { session }, signal);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw error;
  }
}

/**
 * The view of run `runId` while the API says it does not exist (`notFound`, its message); calls `onFound` once it
 * does. Polls only while mounted: leaving the view (or the run appearing) stops it.
 */
export function StartingRun({ session, runId, notFound, onFound }: { session: string; runId: string; notFound: string; onFound: () => void }) {
  const [look, setLook] = useState<Look | undefined>();
  /** When this wait began (again, after "Check again"). */
  const [since, setSince] = useState(() => Date.now());
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const once = async (): Promise<void> => {
      try {
        // The job first, then the run: a job seen ended has written all it will, so a run missing after is missing for good.
        const { job } = await getJson<{ job: SteerJob | null }>(runPath(runId, 'job'), { session }, controller.signal);
        if (job !== null && (await runExists(session, runId, controller.signal))) return onFound();
        const waiting = job?.state === 'running';
        const overdue = waiting && Date.now() - since >= PATIENCE_MS;
        setLook({ job, overdue });
        if (waiting && !overdue) timer = setTimeout(() => void once(), POLL_MS);
      } catch (error) {
        if (!controller.signal.aborted) setLook((l) => ({ job: l?.job ?? null, error: (error as Error).message }));
      }
    };
    void once();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [session, runId, since]);

  if (look === undefined) return <p class="muted">Loading run {runId}…</p>;
  const { job } = look;
  if (job === null) return <Problem text={look.error ? `${notFound} (${look.error})` : notFound} />;
  const what = job.kind === 'fork' ? 'fork' : 'resume';
  return (
    <section aria-labelledby="run-title">
      <p>
        <a href="#/">← All runs</a>
      </p>
      <h1 id="run-title">
        {runId} {job.state === 'running' && <Status status="starting" />}
      </h1>
      {job.state === 'running' && !look.overdue && (
        <p class="starting" role="status" aria-live="polite">
          Starting… the studio’s {what}
          {job.from && (
            <>
              {' '}
              of <a href={runHash(session, job.from.runId)}>{job.from.runId}</a> at step {job.from.step}
            </>
          )}{' '}
          is still running: this run opens here as soon as its first events are written.
        </p>
      )}
      {look.overdue && (
        <div class="warning-box" role="alert">
          <p>
            Run {runId} has not appeared in {PATIENCE_MS / 1000} s, though the studio’s {what} is still running. If it stays stuck, stop the studio
            (its {what} stops with it) and run the command from a terminal, where its output shows:
          </p>
          <pre aria-label="command">
            <code>{job.command}</code>
          </pre>
          <button type="button" onClick={() => setSince(Date.now())}>
            Check again
          </button>
        </div>
      )}
      {job.state !== 'running' && <Problem text={job.state === 'failed' ? `The studio’s ${what} failed before writing run ${runId}:` : notFound} />}
      {look.error && <Problem text={look.error} />}
      <JobLine job={job} />
    </section>
  );
}
