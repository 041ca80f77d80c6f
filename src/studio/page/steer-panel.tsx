/**
 * Steering a run from the page: the question of a waiting run with its answer form, a resume button for a stopped
 * or failed run, a fork button for a step, and what the studio's last resume or fork did. Each works when the
 * page holds the studio's token and the studio can build the run's flow; otherwise the page shows the CLI command.
 */
import { useState } from 'preact/hooks';
import { shellQuote } from '../shell.js';
import { postJson, runHash, runPath, type RunPage, type SteerJob } from './client.js';
import { Problem, Status } from './parts.js';
import { hasSecretField } from './schema-answer.js';
import { SchemaForm, type Schema, type SubmitOutcome } from './schema-form.js';

/** Why the page cannot do it itself, and the command that does. */
function Terminal({ why, command, note }: { why?: string; command: string; note?: string }) {
  return (
    <div class="terminal">
      {why && <p class="muted">{why}</p>}
      <pre aria-label="command">
        <code>{command}</code>
      </pre>
      {note && <p class="muted small">{note}</p>}
    </div>
  );
}

const SECRET_NOTE = 'The answer holds a secret: write it as JSON to answer.json (on a command line, ps and your shell’s history would keep it), and delete the file after.';

const NO_TOKEN = 'This page was opened without the studio’s token, so it can only read: open the URL the studio printed (with ?token=…) to steer runs here, or run:';

function blocked(detail: RunPage, canWrite: boolean): string | undefined {
  if (!canWrite) return NO_TOKEN;
  if (!detail.steer.buildable) return `The studio cannot build this run’s flow (${detail.steer.source}); from a terminal:`;
  return undefined;
}

/** Turns a write's reply into what the form shows, and tells the run view about the job. */
function outcome(reply: Awaited<ReturnType<typeof postJson>>, onJob: (job: SteerJob) => void): SubmitOutcome {
  if (reply.body.job) {
    onJob(reply.body.job);
    return {};
  }
  const command = reply.body.command ? ` Command: ${reply.body.command}` : '';
  return { problems: reply.body.problems, error: reply.body.problems ? undefined : `${reply.body.error ?? `HTTP ${reply.status}`}${command}` };
}

/** The question a waiting run asks, and the form that answers it. */
export function AnswerPanel({ detail, session, canWrite, onJob }: { detail: RunPage; session: string; canWrite: boolean; onJob: (job: SteerJob) => void }) {
  const interrupt = detail.meta.interrupt!;
  const payload = interrupt.payload as Record<string, unknown> | null;
  const question = payload && typeof payload === 'object' && typeof payload['question'] === 'string' ? (payload['question'] as string) : undefined;
  const rest = payload && typeof payload === 'object' ? Object.fromEntries(Object.entries(payload).filter(([k]) => k !== 'question')) : payload;
  const [answer, setAnswer] = useState<unknown>(undefined);
  const why = blocked(detail, canWrite);
  // An answer with a secret field is never written into the page, nor suggested on a command line (where `ps` and the
  // shell's history would keep it): the command reads it from a file.
  const secret = hasSecretField(interrupt.schema);
  // The answer names the pause it is to: if another person answered it meanwhile and the run asks something else, it is refused.
  const answering = interrupt.pause === undefined ? '' : ` --answering ${interrupt.pause}`;
  const command = secret ? `${detail.steer.resumeCommand}${answering} --input @answer.json` : `${detail.steer.resumeCommand}${answering} --input ${shellQuote(JSON.stringify(answer ?? {}))}`;
  return (
    <section class="answer-panel" aria-labelledby="question-title">
      <h2 id="question-title">
        Waiting for an answer: <span class="node">{interrupt.nodeId}</span> <span class="muted small">@ {interrupt.namespace}</span>
      </h2>
      {question && <p class="question">{question}</p>}
      {rest !== null && rest !== undefined && (typeof rest !== 'object' || Object.keys(rest).length > 0) && (
        <pre class="payload" aria-label="what the node shows">
          {JSON.stringify(rest, null, 2)}
        </pre>
      )}
      <SchemaForm
        schema={interrupt.schema as Schema | undefined}
        submitLabel="Answer and resume"
        disabled={why !== undefined}
        onAnswer={setAnswer}
        onSubmit={async (value) => outcome(await postJson(runPath(detail.meta.runId, 'resume'), { session }, { answer: value, pause: interrupt.pause }), onJob)}
      />
      {why ? (
        <Terminal why={why} command={command} note={secret ? SECRET_NOTE : undefined} />
      ) : (
        <details>
          <summary>Or from a terminal</summary>
          <Terminal command={command} note={secret ? SECRET_NOTE : undefined} />
        </details>
      )}
    </section>
  );
}

/** Resume a run that stopped or failed (from its last recorded step). */
export function ResumePanel({ detail, session, canWrite, onJob }: { detail: RunPage; session: string; canWrite: boolean; onJob: (job: SteerJob) => void }) {
  const [state, setState] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const why = blocked(detail, canWrite);
  return (
    <section class="resume-panel" aria-label="resume">
      <p>
        This run is <Status status={detail.meta.status} />: resume it from its last recorded step ({detail.steps.last}).{' '}
        <button
          type="button"
          class="primary"
          disabled={why !== undefined || state.busy}
          onClick={async () => {
            setState({ busy: true });
            const result = outcome(await postJson(runPath(detail.meta.runId, 'resume'), { session }, {}), onJob);
            setState({ busy: false, error: result.error });
          }}
        >
          {state.busy ? 'Resuming…' : 'Resume run'}
        </button>
      </p>
      {state.error && <Problem text={state.error} />}
      {why && <Terminal why={why} command={detail.steer.resumeCommand} />}
    </section>
  );
}

/** Starts a new run from `step`; goes to it. */
export function ForkButton({ detail, session, step, canWrite }: { detail: RunPage; session: string; step: number; canWrite: boolean }) {
  const [state, setState] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const why = blocked(detail, canWrite);
  return (
    <>
      <button
        type="button"
        disabled={state.busy}
        title={why ? `${why} ${detail.steer.forkCommand} --step ${step}` : `start a new run from step ${step} of this one`}
        onClick={async () => {
          if (why) {
            setState({ busy: false, error: `${why} ${detail.steer.forkCommand} --step ${step}` });
            return;
          }
          setState({ busy: true });
          const reply = await postJson(runPath(detail.meta.runId, 'fork'), { session }, { step });
          if (reply.body.job) location.hash = runHash(session, reply.body.job.runId);
          else setState({ busy: false, error: `${reply.body.error ?? `HTTP ${reply.status}`}${reply.body.command ? ` Command: ${reply.body.command}` : ''}` });
        }}
      >
        {state.busy ? 'Forking…' : `Fork from step ${step}`}
      </button>
      {state.error && <Problem text={state.error} />}
    </>
  );
}

/** What the studio's latest resume or fork of this run did. */
export function JobLine({ job }: { job: SteerJob }) {
  const verb = job.kind === 'fork' ? `Forked from ${job.from?.runId} at step ${job.from?.step}` : 'Resumed from the studio';
  return (
    <div class={`job job-${job.state}`} role="status" aria-live="polite">
      {verb}: <Status status={job.state} />
      {job.state === 'running' && <span class="muted"> (its events appear as they are written)</span>}
      {job.error && <pre class="job-error">{job.error}</pre>}
      <details>
        <summary class="small">command</summary>
        <code class="small">{job.command}</code>
      </details>
    </div>
  );
}
