import { FileRunStore, RunStatusSchema, StoreError, listSessions, sweepDeletedRuns, assertValidId, type RunMeta } from '../store/index.js';
import { listRuns } from './durable.js';
import { locateStore, type RunLocation } from './location.js';
import { checkOptionNames, optionNames } from './option-names.js';

/** A run's status as listings report it. */
export type RunStatus = RunMeta['status'];

/** Options of {@link deleteRun}. */
export interface DeleteRunOptions extends RunLocation {
  /** The run to delete. */
  runId: string;
}

const DELETE_RUN_OPTIONS = optionNames<DeleteRunOptions>({ dataDir: true, sessionKey: true, redaction: true, store: true, runId: true });
const PRUNE_RUNS_OPTIONS = optionNames<PruneRunsOptions>({ dataDir: true, sessionKey: true, redaction: true, store: true, olderThan: true, status: true, keepLast: true, dryRun: true, now: true });

/**
 * Deletes a stored run: its event log, index, checkpoints and projection, all at once (crash-safe: the run is either
 * whole or gone, see `RunStore.deleteRun`), in the files of the data directory or in `options.store` (Postgres).
 * Resolves to false when the session has no such run. A run with a live writer is refused: a {@link RunInUseError}
 * (files) or a `LockError` naming the lease's owner (Postgres). Forks of the run keep working: a fork's log starts
 * with its whole state.
 */
export async function deleteRun(options: DeleteRunOptions): Promise<boolean> {
  checkOptionNames(options, DELETE_RUN_OPTIONS, 'deleteRun');
  const { store, sessionKey } = locateStore(options);
  assertValidId(options.runId, 'runId');
  return store.deleteRun({ sessionKey, runId: options.runId });
}

/** What {@link pruneRuns} deletes: runs matching every criterion given, except the newest `keepLast`. */
export interface PruneCriteria {
  /**
   * Only runs whose last activity (end, else last event) is older than this: a Date is the cutoff, a number an age
   * in milliseconds (`7 * 24 * 3600_000`: older than a week).
   */
  olderThan?: Date | number;
  /**
   * Only runs with this status (or one of these). A `running` run (a live writer) is never deleted, and a `waiting`
   * run (paused for a person's answer) only when this names `'waiting'`: `olderThan` or `keepLast` alone keep it.
   */
  status?: RunStatus | readonly RunStatus[];
  /** Keep the newest N runs of each session (by start time) whatever the other criteria say. */
  keepLast?: number;
}

/** Options of {@link pruneRuns}. Without `sessionKey`, every session is pruned (`keepLast` counts per session). */
export interface PruneRunsOptions extends RunLocation, PruneCriteria {
  /** Report what would be deleted, delete nothing. */
  dryRun?: boolean;
  /** Only for time comparisons (tests): the current time in ms. Default `Date.now()`. */
  now?: number;
}

/** A run {@link pruneRuns} deleted (or, in a dry run, would delete). */
export interface PrunedRun {
  sessionKey: string;
  runId: string;
  status: RunStatus;
  startedAt: number;
  /** The time the run was last active (its end, else its last event), in ms. */
  lastActiveAt: number;
}

/** What {@link pruneRuns} did. */
export interface PruneResult {
  dryRun: boolean;
  /** Runs deleted (in a dry run: that would be). */
  deleted: PrunedRun[];
  /**
   * Runs matching the criteria that were left alone, and why: a live writer; a damaged run, whose times are unknown;
   * a waiting run when `status` does not name `'waiting'`; a run that changed between the listing and its delete
   * (a resume, an answer).
   */
  skipped: Array<{ sessionKey: string; runId: string; reason: string }>;
  /** Runs kept (not matching, or among the newest `keepLast`). */
  kept: number;
  /** Directories of deletes killed mid-way that were removed (in a dry run: that would be), as `<session>/<name>`. */
  swept: string[];
}

/**
 * Deletes the runs matching `criteria` (every criterion given must hold), except the newest `keepLast` of each
 * session; at least one criterion is required, so that no call deletes everything by accident. A damaged run (its
 * log cannot be read, so its times are unknown), a run with a live writer, and a run waiting for a person unless
 * `status` names `'waiting'` are skipped and reported; delete one by id with {@link deleteRun}. Each run is deleted
 * only if it is still as listed, checked under its writer guarantee (its log ends at the same event): a run resumed
 * or answered since the listing is skipped and reported, never deleted on the strength of what it was. Leftovers of
 * deletes killed mid-way are swept first.
 */
export async function pruneRuns(options: PruneRunsOptions): Promise<PruneResult> {
  checkOptionNames(options, PRUNE_RUNS_OPTIONS, 'pruneRuns');
  const { olderThan, status, keepLast } = checkCriteria(options);
  const { store } = locateStore({ ...options, sessionKey: options.sessionKey ?? 'default' });
  const sessions =
    options.sessionKey !== undefined
      ? [locateStore(options).sessionKey]
      : store instanceof FileRunStore
        ? await listSessions(store.dataDir) // sessions holding only a killed delete's leftover included
        : [...new Set((await store.listRuns()).map((ref) => ref.sessionKey))].sort();
  const dryRun = options.dryRun === true;
  const swept: string[] = [];
  // Only the files store leaves something behind when a delete is killed (a renamed directory); Postgres deletes in
  // one transaction.
  if (store instanceof FileRunStore) {
    for (const session of sessions) for (const name of await sweepDeletedRuns(store.dataDir, session, { dryRun })) swept.push(`${session}/${name}`);
  }
  const result: PruneResult = { dryRun, deleted: [], skipped: [], kept: 0, swept };
  /** The seq each chosen run's log ended at in the listing (the delete checks it again). */
  const listedSeq = new Map<PrunedRun, number>();
  const cutoff = olderThan === undefined ? undefined : olderThan instanceof Date ? olderThan.getTime() : (options.now ?? Date.now()) - olderThan;
  for (const session of sessions) {
    const runs = (await listRuns({ store, sessionKey: session })).sort((a, b) => b.startedAt - a.startedAt || b.runId.localeCompare(a.runId));
    runs.forEach((meta, i) => {
      const lastActiveAt = meta.endedAt ?? meta.updatedAt;
      const matches = i >= (keepLast ?? 0) && (cutoff === undefined || lastActiveAt < cutoff) && (status === undefined || status.includes(meta.status));
      if (!matches) {
        result.kept++;
        return;
      }
      if (meta.damaged !== undefined) {
        result.skipped.push({ sessionKey: session, runId: meta.runId, reason: `damaged (${meta.damaged}): its times are unknown; delete it by id` });
      } else if (meta.status === 'running') {
        result.skipped.push({ sessionKey: session, runId: meta.runId, reason: 'running: a live process writes it' });
      } else if (meta.status === 'waiting' && !status?.includes('waiting')) {
        result.skipped.push({ sessionKey: session, runId: meta.runId, reason: "waiting for a person's answer: pruned only when the status filter names 'waiting'" });
      } else {
        const run: PrunedRun = { sessionKey: session, runId: meta.runId, status: meta.status, startedAt: meta.startedAt, lastActiveAt };
        listedSeq.set(run, meta.lastSeq);
        result.deleted.push(run);
      }
    });
  }
  if (dryRun) {
    for (const run of result.deleted) {
      if (await store.writerAlive(run)) result.skipped.push({ sessionKey: run.sessionKey, runId: run.runId, reason: 'running: a live process writes it' });
    }
    result.deleted = result.deleted.filter((run) => !result.skipped.some((s) => s.sessionKey === run.sessionKey && s.runId === run.runId));
    return result;
  }
  const deleted: PrunedRun[] = [];
  for (const run of result.deleted) {
    try {
      if (await store.deleteRun({ sessionKey: run.sessionKey, runId: run.runId }, { lastSeq: listedSeq.get(run)! })) deleted.push(run);
    } catch (error) {
      // A writer holds the run now (RunInUseError, LockError), it changed since the listing (RunChangedError: a resume
      // or an answer), or its log cannot be read now: it is left whole, and the others are still pruned.
      if (!(error instanceof StoreError)) throw error;
      result.skipped.push({ sessionKey: run.sessionKey, runId: run.runId, reason: error.message });
    }
  }
  result.deleted = deleted;
  return result;
}

function checkCriteria(options: PruneCriteria): { olderThan?: Date | number; status?: readonly RunStatus[]; keepLast?: number } {
  const { olderThan, keepLast } = options;
  if (olderThan === undefined && options.status === undefined && keepLast === undefined) {
    throw new StoreError('pruneRuns needs at least one criterion (olderThan, status or keepLast), so that no call deletes every run by accident');
  }
  if (olderThan !== undefined) {
    const ok = olderThan instanceof Date ? !Number.isNaN(olderThan.getTime()) : typeof olderThan === 'number' && Number.isFinite(olderThan) && olderThan >= 0;
    if (!ok) throw new TypeError(`pruneRuns: olderThan must be a valid Date or an age in milliseconds >= 0, got ${String(olderThan)}`);
  }
  if (keepLast !== undefined && (!Number.isInteger(keepLast) || keepLast < 0)) {
    throw new TypeError(`pruneRuns: keepLast must be an integer >= 0, got ${String(keepLast)}`);
  }
  let status: readonly RunStatus[] | undefined;
  if (options.status !== undefined) {
    status = typeof options.status === 'string' ? [options.status] : options.status;
    for (const s of status) {
      if (!RunStatusSchema.safeParse(s).success) throw new TypeError(`pruneRuns: unknown status '${String(s)}'; one of ${RunStatusSchema.options.join(', ')}`);
    }
  }
  return { olderThan, status, keepLast };
}
