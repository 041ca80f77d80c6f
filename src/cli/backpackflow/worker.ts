/**
 * `backpackflow worker --database-url URL --modules M [--concurrency N]`: runs the queued runs of a database (see
 * `run --enqueue` and `runs resume --enqueue`), N at a time, until stopped (SIGINT/SIGTERM: the runs in hand are
 * stopped at their next step and given back to the queue) or, with `--exit-when-idle`, until the queue is empty.
 *
 * Each run is built as recorded with it (its flow config or flow module; node classes from `--modules`, else the
 * recorded ones) and executed by the durable runtime on the Postgres store: a new run starts, a run that already has
 * events (its worker died) resumes from its last recorded step, a waiting run resumes with its answer. The run's writer
 * lease and fencing token keep it to one writer whatever the timing; a worker killed mid-run leaves its claim and its
 * lease to run out, and another worker takes the run over. A run stopped because the database connection was lost
 * (not by a node's failure) is given back, and its next claim resumes it.
 *
 * A run whose flow this worker cannot build (its config names node types none of the worker's modules register, or a
 * module it was recorded with is not on this machine) is given back, not counted as a lapse (see queue.ts), with a line
 * naming what is missing, and this worker does not claim it again: a worker that has those classes runs it; while
 * none does, it stays queued, with that note, in `worker --status`. A run whose claim ran out `--max-attempts` times
 * (each worker holding it died or stalled) is marked failed by the worker that finds it, not run again.
 * `worker --status` lists the jobs not done and those that failed, and exits.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Wakeup } from './wakeup.js';
import { Command, Option } from 'commander';
import { NodeExecutionError } from '../../flow/index.js';
import { wasReported } from '../../nodes/backpack-node.js';
import { openNewRun, resumeRun, runFlow } from '../../runtime/index.js';
import { FencedError, LockError, PostgresRunStore, RunExistsError, type RunDocumentName } from '../../store/index.js';
import { lostConnection } from '../../store/errors.js';
import { DEFAULT_MAX_ATTEMPTS, QUEUE_CHANNEL, RunQueue, type QueuedRun } from '../../store/postgres/queue.js';
import type { RunRef } from '../../store/run-store.js';
import { positiveInteger } from './arguments.js';
import { UsageError } from './errors.js';
import { maxFlowBytesOption, modulesOption, type FlowFileOptions } from './flow-options.js';
import { colors as c, print, table } from './output.js';
import { readRecipe, type RecordedDocuments } from './recipe.js';
import { terminalText as t } from '../../events/terminal-text.js';

interface WorkerOptions extends FlowFileOptions {
  databaseUrl?: string;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  exitWhenIdle?: boolean;
  maxAttempts?: number;
  status?: boolean;
  json?: boolean;
  /** The store to work with (closed when the worker stops), instead of one opened on `databaseUrl`: for tests. */
  store?: PostgresRunStore;
}

/** The `worker` command. */
export function workerCommand(): Command {
  return new Command('worker')
    .description('run the queued runs of a database (see run --enqueue)')
    .addOption(new Option('--database-url <url>', 'the database whose queue to work on').env('BACKPACKFLOW_DATABASE_URL'))
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .option('--concurrency <n>', 'runs executed at once', positiveInteger('--concurrency'), 1)
    .option('--lease-ms <n>', "how long a run stays this worker's without renewal (renewed every third of it); a killed worker's runs are taken over after it", positiveInteger('--lease-ms'), 30_000)
    .option('--poll-ms <n>', 'how often an idle worker looks at the queue (a new run also wakes it at once)', positiveInteger('--poll-ms'), 1000)
    .option('--exit-when-idle', 'stop once the queue has nothing ready and no run is in hand')
    .option('--max-attempts <n>', "how many times a run's claim may run out (each worker holding it died or stalled) before the run is marked failed instead of run again", positiveInteger('--max-attempts'), DEFAULT_MAX_ATTEMPTS)
    .option('--status', "list the queue's jobs not done and those that failed (state, claims, lapsed claims, outcome or note), and exit")
    .option('--json', 'with --status: as JSON')
    .action(async (options: WorkerOptions) => {
      if (!options.databaseUrl) throw new UsageError('worker needs a database: pass --database-url <url> or set BACKPACKFLOW_DATABASE_URL');
      if (options.status) await printStatus(options);
      else await runWorker(options);
    });
}

/** `worker --status`: the jobs not done and those that failed, oldest first. */
async function printStatus(options: WorkerOptions): Promise<void> {
  const store = new PostgresRunStore({ url: options.databaseUrl!, maxConnections: 1 });
  try {
    const jobs = await new RunQueue(store).entries({ openOrFailed: true });
    print(options, jobs, () =>
      jobs.length === 0
        ? 'no queued, running or failed jobs'
        : table(
            ['RUN', 'KIND', 'STATE', 'ATTEMPTS', 'LAPSED', 'WORKER', 'OUTCOME'],
            jobs.map((j) => [`${j.sessionKey}/${j.runId}`, j.kind, j.state, String(j.attempts), String(j.lapses), j.state === 'claimed' ? (j.claimedBy ?? '') : '', j.outcome ?? '']),
          ),
    );
  } finally {
    await store.close();
  }
}

/** A run's flow this worker cannot build: what it lacks (see {@link missingToBuild}). */
class CannotBuildError extends Error {
  override name = 'CannotBuildError';
}

/** The value at JSON pointer `pointer` in `value`, or undefined. */
function valueAt(value: unknown, pointer: string): unknown {
  let current = value;
  for (const part of pointer.split('/').slice(1)) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return current;
}

/**
 * Why this worker cannot build run `ref`'s recorded flow, asked once building it failed: a module file it was recorded
 * with (node modules, flow module) that is not on this machine, or node types its config names that no module of this
 * worker registers. Undefined when neither is why (the failure is then the run's own: any worker would fail it).
 */
async function missingToBuild(documents: RecordedDocuments, ref: RunRef, modules: readonly string[]): Promise<string | undefined> {
  const { loaderWith } = await import('./flows.js');
  try {
    const recipe = await readRecipe(documents, ref);
    const used = modules.length > 0 || recipe === undefined ? modules : recipe.modules;
    const files = recipe?.flow.kind === 'module' ? [...used, recipe.flow.module] : used;
    const absent = files.filter((file) => !existsSync(resolve(file)));
    if (absent.length > 0) return `${absent.map((file) => `'${file}'`).join(', ')} ${absent.length === 1 ? 'is' : 'are'} not on this machine`;
    if (recipe?.flow.kind === 'module') return undefined;
    const config = await documents.loadDocument(ref, 'flow');
    const loader = await loaderWith(used);
    const types = new Set<string>();
    for (const problem of loader.validateConfig(config).errors) {
      const type = problem.path.endsWith('/type') ? valueAt(config, problem.path) : undefined;
      if (typeof type === 'string' && !loader.isRegistered(type)) types.add(type);
    }
    if (types.size === 0) return undefined;
    const named = [...types].map((type) => `'${type}'`).join(', ');
    return `node type${types.size === 1 ? '' : 's'} ${named} ${types.size === 1 ? 'is' : 'are'} not registered by its modules (${used.length > 0 ? used.join(', ') : 'none'})`;
  } catch {
    // The recipe, the config or this worker's own modules cannot be read: not a missing piece, the failure stands.
    return undefined;
  }
}

/** One claimed run, executed: how it ended (`completed`, `waiting`, `failed: …`), or 'released' when it was given back. */
async function execute(store: PostgresRunStore, options: WorkerOptions, job: QueuedRun, signal: AbortSignal): Promise<string> {
  const { openRecordedFlow } = await import('./flows.js');
  const ref = { sessionKey: job.sessionKey, runId: job.runId };
  // The run's documents as the claim read them (no statement of their own).
  const documents = { location: store.location, loadDocument: (_ref: unknown, name: RunDocumentName) => store.checkDocument(ref, name, job.documents[name]) };
  let opened: Awaited<ReturnType<typeof openRecordedFlow>>;
  try {
    opened = await openRecordedFlow({ modules: options.modules, maxFlowBytes: options.maxFlowBytes }, documents, ref);
  } catch (error) {
    const missing = await missingToBuild(documents, ref, options.modules);
    if (missing !== undefined) throw new CannotBuildError(missing, { cause: error });
    throw error;
  }
  try {
    const location = { store, sessionKey: ref.sessionKey, runId: ref.runId, signal };
    if (job.kind === 'start' && !job.hadEvents) {
      try {
        // Its documents are stored again through its own writer, as the claim read them (the flow was built from
        // those): so its start record holds their digests, which readers of them check (store/run-documents.ts).
        const newRun = await openNewRun({ store, sessionKey: ref.sessionKey, runId: ref.runId });
        try {
          for (const [name, body] of Object.entries(job.documents)) await newRun.saveDocument(name as RunDocumentName, JSON.parse(body) as unknown);
        } catch (error) {
          await newRun.release();
          throw error;
        }
        return (await runFlow(opened.flow, { newRun, signal, input: job.payload.input })).status;
      } catch (error) {
        // Events appeared since the claim read the run (a worker whose claim ran out was still starting it): the job
        // goes back to the queue, and its next claim resumes the run once that writer is gone.
        if (error instanceof RunExistsError) return 'released';
        throw error;
      }
    }
    const meta = await store.currentRunMeta(ref);
    if (meta.status === 'completed') return 'completed';
    if (meta.status === 'waiting' && job.payload.resume === undefined) return 'waiting';
    const answer = job.payload.resume === undefined ? {} : { resume: job.payload.resume, ...(job.payload.answering === undefined ? {} : { answering: job.payload.answering }) };
    return (await resumeRun(opened.flow, { ...location, ...answer })).status;
  } finally {
    await opened.close();
  }
}

/** Whether `error` or one of its causes is a `type`. */
function causedBy(error: unknown, type: new (...args: never[]) => Error): boolean {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 10; depth++) {
    if (current instanceof type) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * 'completed' when the run of a job given up on is recorded completed, so that the job says so; undefined otherwise
 * (or when its record cannot be read now: the job is then failed as given up).
 */
async function recordedEnd(store: PostgresRunStore, ref: RunRef): Promise<'completed' | undefined> {
  try {
    return (await store.currentRunMeta(ref, () => undefined)).status === 'completed' ? 'completed' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a run ended with `error` because the store lost its database connection (see `lostConnection`), not
 * because a node failed: an error a node reported as its own (its prep or post threw it, or its exec's last attempt
 * did, wrapped in a NodeExecutionError) is the node's failure whatever its code.
 */
function connectionLost(error: unknown): boolean {
  if (wasReported(error)) return false;
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 10; depth++) {
    if (current instanceof NodeExecutionError) return false;
    if (lostConnection(current) === current) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Whether `error`, thrown where nothing could catch it, is the `postgres` driver's own TypeError on a connection closed
 * under it: `nextWrite` in the driver's connection.js writes to the socket its close had already dropped (porsager/postgres
 * #1154 and #1208, not fixed in a release up to 3.4.9). A lost connection, not a bug of this worker: only a TypeError
 * thrown by that module (its top frame) is one.
 */
export function driverLostConnection(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  const frame = error.stack?.split('\n').find((line) => line.trimStart().startsWith('at '));
  return frame !== undefined && /[\\/]node_modules[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js:/.test(frame);
}

/** Runs the worker until it is stopped (see the module comment). */
export async function runWorker(options: WorkerOptions): Promise<void> {
  const store = options.store ?? new PostgresRunStore({ url: options.databaseUrl!, leaseMs: options.leaseMs, maxConnections: options.concurrency + 2 });
  const queue = new RunQueue(store, { maxAttempts: options.maxAttempts });
  const owner = store.owner;
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const wakeup = new Wakeup();
  const sql = await store.sql();
  const listener = await sql.listen(QUEUE_CHANNEL, () => wakeup.wake());
  const idle = new Set<number>();
  /** The stop of each run in hand, by slot: a driver failure on a lost connection stops them all (see below). */
  const inHand = new Map<number, AbortController>();
  /**
   * The driver's TypeError on a lost connection (see {@link driverLostConnection}) escapes every await: instead of
   * dying with it, the worker takes it for what it is, a lost connection, and stops the runs in hand, which are given
   * back (their next claim resumes them). Any other uncaught error is not this worker's to hide: unless another listener
   * takes it, it is thrown again with this listener gone, so the process dies of it as it would have.
   */
  const onUncaught = (error: Error): void => {
    if (!driverLostConnection(error)) {
      if (process.listenerCount('uncaughtException') > 1) return;
      process.off('uncaughtException', onUncaught);
      setImmediate(() => {
        throw error;
      });
      return;
    }
    process.stderr.write(`worker ${owner}: the database driver failed on a lost connection (${t(error.message)}): the runs in hand are stopped and given back\n`);
    const reason = Object.assign(new Error(`the database connection was lost (the driver failed on it: ${error.message})`, { cause: error }), { code: 'CONNECTION_DESTROYED' });
    for (const controller of inHand.values()) controller.abort(reason);
  };
  process.on('uncaughtException', onUncaught);
  /** The jobs this worker found it cannot build: it does not claim them again (another worker may build them). */
  const unbuildable = new Map<string, RunRef>();
  process.stdout.write(`worker ${owner}: working on ${store.location} (${options.concurrency} at a time)\n`);

  const slot = async (index: number): Promise<void> => {
    /** The job this slot just ended, marked done by its next claim (one statement for both). */
    let finished: { job: QueuedRun; outcome: string } | undefined;
    const recordEnd = (): void => {
      if (finished === undefined) return;
      const { job, outcome } = finished;
      process.stdout.write(`worker ${owner}: ${job.sessionKey}/${job.runId} ${outcome === 'completed' ? c.green(outcome) : t(outcome)}\n`);
      finished = undefined;
    };
    while (!stop.signal.aborted) {
      let job: QueuedRun | undefined;
      try {
        job = await queue.claim(owner, options.leaseMs, finished, [...unbuildable.values()]);
        recordEnd();
      } catch (error) {
        if (finished !== undefined) {
          process.stderr.write(`worker ${owner}: could not record how ${finished.job.sessionKey}/${finished.job.runId} ended (${t(finished.outcome)}): ${t((error as Error).message)}\n`);
          finished = undefined;
        }
        process.stderr.write(`worker ${owner}: could not claim a run: ${t((error as Error).message)}\n`);
        // Not idle: the queue may hold runs (this worker's own, given back or not), it could not be read.
        await wakeup.sleep(options.pollMs, stop.signal);
        continue;
      }
      if (job === undefined) {
        idle.add(index);
        if (options.exitWhenIdle && idle.size === options.concurrency) return;
        await wakeup.sleep(options.pollMs, stop.signal);
        continue;
      }
      idle.delete(index);
      if (job.gaveUp !== undefined) {
        // Poisoned: every worker that held it died or stalled. Marked done as failed by the next claim, unless the run
        // is recorded completed (its last worker died after the run's end, before its next claim marked the job done).
        finished = { job, outcome: (await recordedEnd(store, job)) ?? job.gaveUp };
        continue;
      }
      const claimed = job;
      const renewal = setInterval(() => void queue.renew(claimed, owner, options.leaseMs).catch(() => undefined), Math.max(50, Math.floor(options.leaseMs / 3)));
      let outcome: string;
      /** Why the job is given back, when it is. */
      let why = 'another writer holds it, or this worker is stopping';
      /** What the queue keeps of why, when the user has to act on it. */
      let note: string | undefined;
      const own = new AbortController();
      inHand.set(index, own);
      try {
        outcome = await execute(store, options, claimed, AbortSignal.any([stop.signal, own.signal]));
      } catch (error) {
        if (error instanceof CannotBuildError) {
          // Not the run's failure: this worker lacks its classes. It is not claimed here again; another worker may.
          outcome = 'released';
          why = `this worker cannot build its flow: ${error.message}; it is left to a worker that can`;
          note = `worker ${owner} cannot build its flow: ${error.message}`;
          unbuildable.set(`${claimed.sessionKey}/${claimed.runId}`, { sessionKey: claimed.sessionKey, runId: claimed.runId });
        } else if (causedBy(error, FencedError)) outcome = 'lost';
        else if (causedBy(error, LockError) || stop.signal.aborted) outcome = 'released';
        else if (connectionLost(error)) {
          // The run is only stopped (what was committed stays): its next claim resumes it from its last recorded
          // step. A release the database is still away for fails; the job's claim and the run's lease then run out.
          outcome = 'released';
          why = `the database connection was lost: ${(error as Error).message}`;
        }
        // Redacted as the queue stores it: a failure's message may quote a secret (an input, a header).
        else outcome = queue.redactor.redactText(`failed: ${(error as Error).message}`);
      } finally {
        clearInterval(renewal);
        inHand.delete(index);
      }
      const name = `${claimed.sessionKey}/${claimed.runId}`;
      try {
        if (outcome === 'lost') {
          // This worker stalled past its lease and another took the run over: its writes were refused, the run and
          // its job are the other worker's now.
          process.stdout.write(`worker ${owner}: ${name} ${c.yellow('lost')} to another worker (its lease ran out; its writes were refused)\n`);
        } else if (outcome === 'released') {
          await queue.release(claimed, owner, note);
          process.stdout.write(`worker ${owner}: ${name} ${c.yellow('given back')} (${t(queue.redactor.redactText(why))})\n`);
          // A job this worker cannot build is not claimed again here: no need to wait before the next claim.
          if (!stop.signal.aborted && note === undefined) await new Promise((resolve) => setTimeout(resolve, options.pollMs));
        } else {
          // Marked done by the next claim, in the same statement (or on its own if the worker stops first).
          finished = { job: claimed, outcome };
        }
      } catch (error) {
        const then = outcome === 'released' ? `; it is claimed again once its claim runs out (${options.leaseMs} ms)` : '';
        process.stderr.write(`worker ${owner}: could not record how ${name} ended (${t(outcome === 'released' ? `given back: ${why}` : outcome)}): ${t((error as Error).message)}${then}\n`);
      }
    }
    // Stopped before the next claim: the job that just ended is marked done on its own.
    if (finished !== undefined) {
      const { job, outcome } = finished;
      await queue.finish(job, owner, outcome).then(recordEnd, (error: unknown) => {
        process.stderr.write(`worker ${owner}: could not record how ${job.sessionKey}/${job.runId} ended (${t(outcome)}): ${t((error as Error).message)}\n`);
      });
    }
  };

  try {
    await Promise.all(Array.from({ length: options.concurrency }, (_, i) => slot(i)));
    if (unbuildable.size > 0) {
      const names = [...unbuildable.keys()];
      process.stderr.write(`worker ${owner}: left queued ${names.length} run${names.length === 1 ? '' : 's'} this worker cannot build (${t(names.join(', '))}); see worker --status\n`);
    }
  } finally {
    process.off('uncaughtException', onUncaught);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await listener.unlisten().catch(() => undefined);
    await store.close();
  }
}
