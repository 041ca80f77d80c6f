/**
 * The run queue of the Postgres store: runs waiting for a worker (DESIGN section 5: Postgres's own
 * `FOR UPDATE SKIP LOCKED`, see the README's "Scaling out" for why not graphile-worker).
 *
 * A job is one run: `start` (a new run and its input) or `resume` (a stopped run, or a waiting run with its answer).
 * A worker claims the oldest ready job with `FOR UPDATE SKIP LOCKED` (claims never block each other), holds it until
 * `claimed_until` (renewed while it runs the run), and marks it done with the outcome. A job whose worker died is
 * ready again once its claim runs out; the run's own writer lease and fencing token (run-store.ts) make sure that,
 * whatever the timing, only one worker writes the run.
 *
 * Attempts: `attempts` counts a job's claims, `lapses` those that ran out (the worker holding it died or stalled
 * without finishing or giving it back; the claim that takes the job over counts it). A job whose claim ran out
 * `maxAttempts` times (a poisoned job: its node kills or crashes every worker that runs it) is not run again: the
 * claim that finds its last lapse returns it with `gaveUp` set, and that worker marks it done as failed
 * (`failed: gave up after N attempts: …`) instead of running it. A claim given back ({@link RunQueue.release}: another
 * writer holds the run, the worker stops or lost its connection, or cannot build the flow) is not a lapse. A job
 * queued again after it was done starts from 0 of each.
 *
 * Secrets: a job's payload (a start's input, a resume's answer) is stored as given while the job waits, since the
 * worker that claims it starts the run with it (and the run redacts it in everything it writes); once the job is
 * done its payload is replaced by its redacted form. Outcomes (`failed: <message>`) are stored redacted.
 */
import { redactorFor, type RedactionOptions, type Redactor } from '../../redact/index.js';
import { StoreError } from '../errors.js';
import { assertValidId } from '../paths.js';
import type { RunDocumentName, RunRef } from '../run-store.js';
import { asyncCommit } from './connection.js';
import { json, recordedRunExists, type PostgresRunStore } from './run-store.js';

/** A claimed job. */
export interface QueuedRun extends RunRef {
  kind: 'start' | 'resume';
  /**
   * `start`: `{ input }`; `resume`: `{ resume, answering }` when it answers a waiting run (`answering`: the pause the
   * answer was checked against, see ResumeRunOptions.answering), else `{}`.
   */
  payload: { input?: Record<string, unknown>; resume?: unknown; answering?: number };
  attempts: number;
  /**
   * Set when the job is given up rather than run: its claim ran out `maxAttempts` times, or its stored payload is
   * not a valid payload of its kind (not JSON, not an object, an input that is not an object: see
   * {@link damagedPayload}). The failure to mark it done with (`failed: gave up after N attempts: …`, `failed: the
   * payload of its start job (the row of run …) is damaged: …`, redacted as the queue stores outcomes).
   */
  gaveUp?: string;
  /**
   * The run's documents (see RunWriter.saveDocument) as stored when it was claimed, read by the claim itself, parsed
   * by {@link PostgresRunStore.checkDocument} when asked for: `undefined` for a document the run does not have.
   */
  documents: Partial<Record<RunDocumentName, string>>;
  /**
   * A stored payload that is JSON but not a valid payload of the job's kind (see {@link gaveUp}, which then says what
   * is wrong): kept, redacted, as the done job's payload, the evidence of what was stored. (One that is not JSON is
   * not kept: it cannot be redacted by its keys.)
   */
  damagedPayload?: unknown;
  /**
   * Whether the run had events when it was claimed (it was started before: its worker died, or it waits), or a
   * record of them (its projection or keyframes) whose events are gone.
   */
  hadEvents: boolean;
}

/** A claimed job as it ends: its run and the payload it was claimed with (kept redacted, see the module comment). */
export type FinishedJob = RunRef & Pick<QueuedRun, 'payload' | 'damagedPayload'>;

/** A job's state, for `runs list`-like reports and tests. */
export interface QueueEntry extends RunRef {
  kind: 'start' | 'resume';
  state: 'queued' | 'claimed' | 'done';
  /** Claims of the job (see the module comment). */
  attempts: number;
  /** Claims of the job that ran out (see the module comment). */
  lapses: number;
  /** The worker holding a claimed job, or the last one that held a job whose claim ran out. */
  claimedBy: string | null;
  /**
   * A done job's outcome (`completed`, `waiting`, `failed: …`); a queued job's note from the worker that last gave it
   * back, when that worker could not build its flow (see {@link RunQueue.release}); else null.
   */
  outcome: string | null;
}

/** The default of {@link RunQueueOptions.maxAttempts}. */
export const DEFAULT_MAX_ATTEMPTS = 5;

/** The channel a new job is announced on (idle workers LISTEN to it instead of polling fast). */
export const QUEUE_CHANNEL = 'backpackflow_queue';

/** Options of {@link RunQueue}. */
export interface RunQueueOptions {
  /** Secrets of your own to redact from finished jobs' payloads and outcomes, on top of the built-in catalogue. */
  redaction?: RedactionOptions;
  /**
   * How many times a job's claim may run out (its worker died or stalled without finishing it) before the job is
   * given up and marked failed (see the module comment); a positive integer, {@link DEFAULT_MAX_ATTEMPTS} by default.
   */
  maxAttempts?: number;
}

/** See the module comment. */
export class RunQueue {
  /** The redaction of what the queue stores of a finished job (its payload, its outcome). */
  readonly redactor: Redactor;
  /** See {@link RunQueueOptions.maxAttempts}. */
  readonly maxAttempts: number;

  constructor(
    private readonly store: PostgresRunStore,
    options: RunQueueOptions = {},
  ) {
    this.redactor = redactorFor(options.redaction);
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isSafeInteger(this.maxAttempts) || this.maxAttempts < 1) throw new StoreError(`RunQueue: maxAttempts must be a positive integer, got ${String(options.maxAttempts)}`);
  }

  /** What a finished job keeps: its payload and outcome, redacted (see the module comment). */
  private finished(job: FinishedJob, outcome: string): { payload: string; outcome: string } {
    // A damaged payload is kept as it was stored (see QueuedRun.damagedPayload), not replaced by the empty one the job
    // was given.
    const payload = job.damagedPayload !== undefined ? job.damagedPayload : job.payload;
    const redacted = this.redactor.redact({ payload, outcome }).value;
    return { payload: JSON.stringify(redacted.payload), outcome: redacted.outcome };
  }

  /**
   * Queues run `ref`. A run that is already queued or being run is a StoreError (it is not queued twice); a run whose
   * earlier job is done can be queued again (a resume). A `start` is also refused (a StoreError saying why) when the
   * run has events or a live writer holds it (another start of the id); its `documents` (its flow config, its recipe:
   * see RunWriter.saveDocument, redacted by the caller) are stored in the same transaction, only when the job is
   * queued, with the run's row locked, so that a start that is refused never records over another's.
   */
  async enqueue(ref: RunRef, kind: 'start' | 'resume', payload: QueuedRun['payload'], documents: Partial<Record<RunDocumentName, unknown>> = {}): Promise<void> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    const names = Object.keys(documents);
    if (kind !== 'start' && names.length > 0) throw new StoreError(`enqueue: only a start records documents with its run (${ref.sessionKey}/${ref.runId})`);
    const sql = await this.store.sql();
    const bodies = names.map((name) => JSON.stringify(documents[name as RunDocumentName]));
    const start = kind === 'start';
    const [row] = await sql.begin(async (tx) => {
      // A start first takes the run's row (made if missing) until it commits: a writer cannot take the lease between
      // the check below and the documents' write, and the check (a statement of its own, so reading anew) sees a
      // lease taken before.
      if (start) {
        await tx`insert into backpackflow.runs (session_key, run_id) values (${ref.sessionKey}, ${ref.runId}) on conflict do nothing`;
        await tx`select 1 from backpackflow.runs where session_key = ${ref.sessionKey} and run_id = ${ref.runId} for update`;
      }
      // The run's row, its job (unless one is queued or running; for a start, unless the run has events or a live
      // writer), its documents when the job was queued, and the wake-up of idle workers, which Postgres delivers
      // when the transaction commits.
      return await tx<{ queued: string; had_events: boolean; meta: string | null; keyframes: number; leased_by: string | null }[]>`
      with run as (
        insert into backpackflow.runs (session_key, run_id) values (${ref.sessionKey}, ${ref.runId}) on conflict do nothing
      ), blocked as (
        select exists (select 1 from backpackflow.event_batches where session_key = ${ref.sessionKey} and run_id = ${ref.runId}) as had_events,
          -- A run whose events are gone but whose projection or keyframes remain is a recorded run too (see
          -- PostgresRunStore.assertNewRun); a queued start's row has neither.
          (select meta from backpackflow.runs where session_key = ${ref.sessionKey} and run_id = ${ref.runId}) as meta,
          (select count(*)::int from backpackflow.keyframes where session_key = ${ref.sessionKey} and run_id = ${ref.runId}) as keyframes,
          (select lease_owner from backpackflow.runs where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and lease_owner is not null and lease_expires_at >= now()) as leased_by
      ), job as (
        insert into backpackflow.queue (session_key, run_id, kind, payload)
        select ${ref.sessionKey}, ${ref.runId}, ${kind}, ${JSON.stringify(payload)} from blocked
        where not ${start}::boolean or (not blocked.had_events and blocked.meta is null and blocked.keyframes = 0 and blocked.leased_by is null)
        on conflict (session_key, run_id) do update set kind = excluded.kind, payload = excluded.payload, state = 'queued',
          enqueued_at = clock_timestamp(), attempts = 0, lapses = 0, claimed_by = null, claimed_until = null, finished_at = null, outcome = null
        where backpackflow.queue.state = 'done'
        returning 1
      ), documents as (
        insert into backpackflow.run_documents (session_key, run_id, name, body)
        select ${ref.sessionKey}, ${ref.runId}, d.name, d.body
        from rows from (json_array_elements_text(${json(sql, names)}::json), json_array_elements_text(${json(sql, bodies)}::json)) as d(name, body)
        where exists (select 1 from job)
        on conflict (session_key, run_id, name) do update set body = excluded.body
      )
      select (select count(*) from job) as queued, blocked.had_events, blocked.meta, blocked.keyframes, blocked.leased_by,
        (select pg_notify(${QUEUE_CHANNEL}, ${`${ref.sessionKey}/${ref.runId}`}) where exists (select 1 from job)) as notified
      from blocked`;
    });
    if (Number(row!.queued) > 0) return;
    const run = `run ${ref.sessionKey}/${ref.runId}`;
    if (start && row!.had_events) throw new StoreError(`${run} already has a recorded run in ${this.store.location} (resume is the way to continue one)`);
    if (start && (row!.meta !== null || row!.keyframes > 0)) throw await recordedRunExists(this.store, ref, row!.meta, row!.keyframes);
    if (start && row!.leased_by !== null) throw new StoreError(`${run} is being started or run by ${row!.leased_by} in ${this.store.location}`);
    throw new StoreError(`${run} is already queued or being run by a worker (${this.store.location})`);
  }

  /**
   * Claims the oldest ready job for `owner` for `claimMs`, or undefined when none is ready: one statement, which also
   * reads the run's documents and whether it has events (what the worker needs to build and start it). The claim's
   * commit does not wait for the disk (see asyncCommit): a claim a server crash undoes is only claimed again, and the
   * run's writer lease keeps it to one writer either way. `finished`: `owner`'s job that just ended, marked done
   * with its outcome in the same statement (as {@link finish} does). `skip`: jobs not to claim (those `owner` found it
   * cannot build: another worker may). A job whose claim ran out {@link maxAttempts} times is returned with `gaveUp`
   * set (see the module comment): it is the caller's to mark done, not to run.
   */
  async claim(owner: string, claimMs: number, finished?: { job: FinishedJob; outcome: string }, skip: readonly RunRef[] = []): Promise<QueuedRun | undefined> {
    const sql = await this.store.sql();
    const done = finished === undefined ? undefined : { job: finished.job, ...this.finished(finished.job, finished.outcome) };
    const skipped = skip.map((ref) => `${ref.sessionKey}/${ref.runId}`);
    const [row] = await sql<{ session_key: string; run_id: string; kind: 'start' | 'resume'; payload: string | null; attempts: number; lapses: number; gave_up: boolean; last_owner: string | null; flow: string | null; recipe: string | null; had_events: boolean }[]>`
      with ${done === undefined ? sql`` : sql`finished as (
        update backpackflow.queue set state = 'done', finished_at = now(), payload = ${done.payload}, outcome = ${done.outcome}, claimed_until = null
        where session_key = ${done.job.sessionKey} and run_id = ${done.job.runId} and state = 'claimed' and claimed_by = ${owner}
      ), `}claimed as (
        update backpackflow.queue q set state = 'claimed', claimed_by = ${owner}, claimed_until = now() + ${claimMs} * interval '1 millisecond', outcome = null,
          attempts = q.attempts + (case when ready.gave_up then 0 else 1 end), lapses = q.lapses + (case when ready.lapsed then 1 else 0 end)
        from (
          -- A claimed job here is one whose claim ran out: with maxAttempts of them it is given up, not run.
          select session_key, run_id, claimed_by as last_owner, state = 'claimed' as lapsed, (state = 'claimed' and lapses + 1 >= ${this.maxAttempts}) as gave_up
          from backpackflow.queue
          where (state = 'queued' or (state = 'claimed' and claimed_until < now()))
            ${skipped.length === 0 ? sql`` : sql`and (session_key || '/' || run_id) not in (select json_array_elements_text(${json(sql, skipped)}::json))`}
            -- Never the job this statement marks done: both CTEs see the same snapshot, and one statement must not
            -- update a row twice.
            ${done === undefined ? sql`` : sql`and not (session_key = ${done.job.sessionKey} and run_id = ${done.job.runId})`}
          order by enqueued_at
          for update skip locked
          limit 1
        ) ready, ${asyncCommit(sql)}
        where q.session_key = ready.session_key and q.run_id = ready.run_id
        returning q.session_key, q.run_id, q.kind, q.payload, q.attempts, q.lapses, ready.gave_up, ready.last_owner
      )
      select c.session_key, c.run_id, c.kind, c.payload, c.attempts, c.lapses, c.gave_up, c.last_owner,
        (select body from backpackflow.run_documents d where d.session_key = c.session_key and d.run_id = c.run_id and d.name = 'flow') as flow,
        (select body from backpackflow.run_documents d where d.session_key = c.session_key and d.run_id = c.run_id and d.name = 'recipe') as recipe,
        -- A run whose events are gone but whose projection or keyframes remain counts as started: the worker does
        -- not start it again under its id (a fresh writer refuses it, and the job would be given back for ever) but
        -- resumes it, which fails naming what is lost.
        (exists (select 1 from backpackflow.event_batches e where e.session_key = c.session_key and e.run_id = c.run_id)
          or exists (select 1 from backpackflow.runs r where r.session_key = c.session_key and r.run_id = c.run_id and r.meta is not null)
          or exists (select 1 from backpackflow.keyframes k where k.session_key = c.session_key and k.run_id = c.run_id)) as had_events
      from claimed c`;
    if (row === undefined) return undefined;
    const read = readPayload(row.kind, row.payload);
    const documents: QueuedRun['documents'] = {};
    if (row.flow !== null) documents.flow = row.flow;
    if (row.recipe !== null) documents.recipe = row.recipe;
    const job: QueuedRun = { sessionKey: row.session_key, runId: row.run_id, kind: row.kind, payload: {}, attempts: row.attempts, documents, hadEvents: row.had_events };
    if (row.gave_up) {
      job.gaveUp = this.redactor.redactText(`failed: gave up after ${row.lapses} attempts: each worker holding it stopped without finishing (last: worker ${row.last_owner ?? 'unknown'})`);
    }
    if ('problem' in read) {
      // Never run with an input (or an answer) it was not given: failed, naming the row and what is wrong with it.
      if (read.value !== undefined) job.damagedPayload = read.value;
      job.gaveUp ??= this.redactor.redactText(
        `failed: the payload of its ${row.kind} job (the row of run ${row.session_key}/${row.run_id} in backpackflow.queue, ${this.store.location}) is damaged: ` +
          `${read.problem}; the job is not run (queue the run again)`,
      );
    } else job.payload = read.payload;
    return job;
  }

  /** Extends `owner`'s claim on the job; false when it is no longer `owner`'s. */
  async renew(job: RunRef, owner: string, claimMs: number): Promise<boolean> {
    const sql = await this.store.sql();
    const rows = await sql`
      update backpackflow.queue set claimed_until = now() + ${claimMs} * interval '1 millisecond'
      from ${asyncCommit(sql)}
      where session_key = ${job.sessionKey} and run_id = ${job.runId} and state = 'claimed' and claimed_by = ${owner}`;
    return rows.count > 0;
  }

  /**
   * Marks `owner`'s job done with its outcome (`completed`, `waiting`, `failed: …`), its payload and outcome redacted
   * (see the module comment). The commit does not wait for the disk: the run's own last commit did. A job a server
   * crash puts back is claimed again, as after a worker's death: a completed run is found completed, any other
   * resumes from its last recorded step.
   */
  async finish(job: FinishedJob, owner: string, outcome: string): Promise<void> {
    const sql = await this.store.sql();
    const done = this.finished(job, outcome);
    await sql`
      update backpackflow.queue set state = 'done', finished_at = now(), payload = ${done.payload}, outcome = ${done.outcome}, claimed_until = null
      from ${asyncCommit(sql)}
      where session_key = ${job.sessionKey} and run_id = ${job.runId} and state = 'claimed' and claimed_by = ${owner}`;
  }

  /**
   * Gives `owner`'s job back to the queue (another writer still holds the run, this worker is stopping or lost its
   * connection, or it cannot build the run's flow: it is tried again later). The claim is not a lapse (see the module
   * comment). `note`: why, kept (redacted) as the queued job's outcome until it is claimed again or
   * done, for a cause the user has to act on (no worker may be able to build the flow).
   */
  async release(job: RunRef, owner: string, note?: string): Promise<void> {
    const sql = await this.store.sql();
    const outcome = note === undefined ? null : this.redactor.redactText(note);
    await sql`
      update backpackflow.queue set state = 'queued', claimed_by = null, claimed_until = null, outcome = ${outcome}
      from ${asyncCommit(sql)}
      where session_key = ${job.sessionKey} and run_id = ${job.runId} and state = 'claimed' and claimed_by = ${owner}`;
  }

  /** Every job, oldest first; with `openOrFailed`, only those not done and those that failed (`worker --status`). */
  async entries(options: { openOrFailed?: boolean } = {}): Promise<QueueEntry[]> {
    const sql = await this.store.sql();
    const rows = await sql<{ session_key: string; run_id: string; kind: 'start' | 'resume'; state: QueueEntry['state']; attempts: number; lapses: number; claimed_by: string | null; outcome: string | null }[]>`
      select session_key, run_id, kind, state, attempts, lapses, claimed_by, outcome from backpackflow.queue
      ${options.openOrFailed ? sql`where state <> 'done' or outcome like 'failed:%'` : sql``}
      order by enqueued_at`;
    return rows.map((r) => ({ sessionKey: r.session_key, runId: r.run_id, kind: r.kind, state: r.state, attempts: r.attempts, lapses: r.lapses, claimedBy: r.claimed_by, outcome: r.outcome }));
  }
}

/**
 * A job's stored payload (null: none, an empty one), parsed and checked to be one {@link RunQueue.enqueue} stores for
 * `kind`: an object, with an `input` that is an object for a start, a `resume` for a resume, and nothing else; or
 * what is wrong with it (and the value, when it is JSON).
 */
function readPayload(kind: 'start' | 'resume', text: string | null): { payload: QueuedRun['payload'] } | { problem: string; value?: unknown } {
  if (text === null) return { payload: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `not JSON (${(error as Error).message})` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { value, problem: `not an object but ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}` };
  const allowed = kind === 'start' ? ['input'] : ['resume', 'answering'];
  const other = Object.keys(value).filter((key) => !allowed.includes(key));
  if (other.length > 0) return { value, problem: `it holds ${other.map((key) => JSON.stringify(key)).join(', ')}, which a ${kind} job's payload does not (only ${allowed.map((key) => `"${key}"`).join(', ')})` };
  const answering = (value as { answering?: unknown }).answering;
  if (answering !== undefined && !(Number.isSafeInteger(answering) && (answering as number) >= 0)) return { value, problem: 'its answering is not the seq of a pause' };
  const input = (value as { input?: unknown }).input;
  if (kind === 'start' && input !== undefined && (input === null || typeof input !== 'object' || Array.isArray(input))) {
    return { value, problem: `its input is ${input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input}, not an object` };
  }
  return { payload: value as QueuedRun['payload'] };
}
