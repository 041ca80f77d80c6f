/**
 * The run queue of the Postgres store: runs waiting for a worker (DESIGN section 5: Postgres's own
 * `FOR UPDATE SKIP LOCKED`, see the README's "Scaling out" for why not graphile-worker).
 *
 * A job is one run: `start` (a new run and its input) or `resume` (a stopped run, or a waiting run with its answer).
 * A worker claims the oldest ready job with `FOR UPDATE SKIP LOCKED` (claims never block each other), holds it until
 * `claimed_until` (renewed while it runs the run), and marks it done with the outcome. A job whose worker died is
 * ready again once its claim runs out; the run's own writer lease and fencing token (run-store.ts) make sure that,
 * whatever the timing, only one worker writes the run.
 */
import { StoreError } from '../errors.js';
import { assertValidId } from '../paths.js';
import type { RunRef } from '../run-store.js';
import type { PostgresRunStore } from './run-store.js';

/** A claimed job. */
export interface QueuedRun extends RunRef {
  kind: 'start' | 'resume';
  /** `start`: `{ input }`; `resume`: `{ resume }` when it answers a waiting run, else `{}`. */
  payload: { input?: Record<string, unknown>; resume?: unknown };
  attempts: number;
}

/** A job's state, for `runs list`-like reports and tests. */
export interface QueueEntry extends RunRef {
  kind: 'start' | 'resume';
  state: 'queued' | 'claimed' | 'done';
  attempts: number;
  outcome: string | null;
}

/** The channel a new job is announced on (idle workers LISTEN to it instead of polling fast). */
export const QUEUE_CHANNEL = 'backpackflow_queue';
/** The channel every committed step is announced on, with `session/run` (runs tail). */
export const EVENTS_CHANNEL = 'backpackflow_events';

/** See the module comment. */
export class RunQueue {
  constructor(private readonly store: PostgresRunStore) {}

  /**
   * Queues run `ref`. A run that is already queued or being run is a StoreError (it is not queued twice); a run whose
   * earlier job is done can be queued again (a resume).
   */
  async enqueue(ref: RunRef, kind: 'start' | 'resume', payload: QueuedRun['payload']): Promise<void> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    const sql = await this.store.sql();
    await sql`insert into backpackflow.runs (session_key, run_id) values (${ref.sessionKey}, ${ref.runId}) on conflict do nothing`;
    const rows = await sql`
      insert into backpackflow.queue (session_key, run_id, kind, payload) values (${ref.sessionKey}, ${ref.runId}, ${kind}, ${JSON.stringify(payload)})
      on conflict (session_key, run_id) do update set kind = excluded.kind, payload = excluded.payload, state = 'queued',
        enqueued_at = clock_timestamp(), claimed_by = null, claimed_until = null, finished_at = null, outcome = null
      where backpackflow.queue.state = 'done'
      returning 1`;
    if (rows.count === 0) throw new StoreError(`run ${ref.sessionKey}/${ref.runId} is already queued or being run by a worker (${this.store.location})`);
    await sql`select pg_notify(${QUEUE_CHANNEL}, ${`${ref.sessionKey}/${ref.runId}`})`;
  }

  /** Claims the oldest ready job for `owner` for `claimMs`, or undefined when none is ready. */
  async claim(owner: string, claimMs: number): Promise<QueuedRun | undefined> {
    const sql = await this.store.sql();
    const [row] = await sql<{ session_key: string; run_id: string; kind: 'start' | 'resume'; payload: string | null; attempts: number }[]>`
      update backpackflow.queue q set state = 'claimed', claimed_by = ${owner}, claimed_until = now() + ${claimMs} * interval '1 millisecond', attempts = q.attempts + 1
      from (
        select session_key, run_id from backpackflow.queue
        where state = 'queued' or (state = 'claimed' and claimed_until < now())
        order by enqueued_at
        for update skip locked
        limit 1
      ) ready
      where q.session_key = ready.session_key and q.run_id = ready.run_id
      returning q.session_key, q.run_id, q.kind, q.payload, q.attempts`;
    if (row === undefined) return undefined;
    let payload: QueuedRun['payload'] = {};
    try {
      payload = row.payload === null ? {} : (JSON.parse(row.payload) as QueuedRun['payload']);
    } catch {
      // Not JSON: the job fails with that said (see the worker).
      payload = { input: undefined };
    }
    return { sessionKey: row.session_key, runId: row.run_id, kind: row.kind, payload, attempts: row.attempts };
  }

  /** Extends `owner`'s claim on the job; false when it is no longer `owner`'s. */
  async renew(job: RunRef, owner: string, claimMs: number): Promise<boolean> {
    const sql = await this.store.sql();
    const rows = await sql`
      update backpackflow.queue set claimed_until = now() + ${claimMs} * interval '1 millisecond'
      where session_key = ${job.sessionKey} and run_id = ${job.runId} and state = 'claimed' and claimed_by = ${owner}`;
    return rows.count > 0;
  }

  /** Marks `owner`'s job done with its outcome (`completed`, `waiting`, `failed: …`). */
  async finish(job: RunRef, owner: string, outcome: string): Promise<void> {
    const sql = await this.store.sql();
    await sql`
      update backpackflow.queue set state = 'done', finished_at = now(), outcome = ${outcome}, claimed_until = null
      where session_key = ${job.sessionKey} and run_id = ${job.runId} and state = 'claimed' and claimed_by = ${owner}`;
  }

  /** Gives `owner`'s job back to the queue (another writer still holds the run: it is tried again later). */
  async release(job: RunRef, owner: string): Promise<void> {
    const sql = await this.store.sql();
    await sql`
      update backpackflow.queue set state = 'queued', claimed_by = null, claimed_until = null
      where session_key = ${job.sessionKey} and run_id = ${job.runId} and state = 'claimed' and claimed_by = ${owner}`;
  }

  /** Every job, oldest first. */
  async entries(): Promise<QueueEntry[]> {
    const sql = await this.store.sql();
    const rows = await sql<{ session_key: string; run_id: string; kind: 'start' | 'resume'; state: QueueEntry['state']; attempts: number; outcome: string | null }[]>`
      select session_key, run_id, kind, state, attempts, outcome from backpackflow.queue order by enqueued_at`;
    return rows.map((r) => ({ sessionKey: r.session_key, runId: r.run_id, kind: r.kind, state: r.state, attempts: r.attempts, outcome: r.outcome }));
  }
}
