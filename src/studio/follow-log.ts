/**
 * Following a run's log as it grows, the one rule `backpackflow runs tail` and the studio's live stream share: a run
 * deleted while it is followed, or deleted and started again under the same id, is never passed on as one run. Each
 * re-read starts at the line of the last event passed on (the mark) and checks that the line still holds that event
 * (event ids are unique across processes): when it does not, when the log is gone or shorter, or when a read fails and
 * the event is no longer there, the re-read ends with a {@link FollowedRunGoneError} saying which. That costs one line
 * more per re-read, read through the log's index.
 *
 * (Here, not in cli/, because the studio may not import the CLI; the CLI imports the studio already.)
 */
import type { VerifiedEvent } from '../store/event-store.js';
import type { ReadOptions, RunRef, RunStore } from '../store/index.js';

/** The last event a follower passed on, and its line (0-based). */
export interface FollowMark {
  line: number;
  id: string;
}

/** The followed log no longer holds the mark: its run was deleted, or deleted and started again under its id. */
export class FollowedRunGoneError extends Error {
  override name = 'FollowedRunGoneError';
  constructor(
    readonly runId: string,
    /** What was found instead, naming the log. */
    readonly why: string,
  ) {
    super(`run ${runId} was deleted (or replaced by a new run of the same id) while it was followed: ${why}`);
  }
}

/**
 * One re-read of a followed log: the events after `mark` (the mark's own line is read and checked, not yielded), or,
 * with no mark yet, from `options.from` (default the first line). A {@link FollowedRunGoneError} when the log no
 * longer holds the mark (see the module comment).
 */
export async function* readAfterMark(store: RunStore, ref: RunRef, mark: FollowMark | undefined, options: ReadOptions = {}): AsyncGenerator<VerifiedEvent> {
  const log = store.describeLog(ref);
  let checked = mark === undefined;
  try {
    for await (const read of store.readVerified(ref, { ...options, from: mark?.line ?? options.from ?? 0 })) {
      if (!checked) {
        checked = true;
        if (read.line !== mark!.line || read.event.id !== mark!.id) throw new FollowedRunGoneError(ref.runId, `line ${mark!.line + 1} of ${log} no longer holds event ${mark!.id}`);
        continue;
      }
      yield read;
    }
  } catch (error) {
    // A log deleted while it was being read can fail in any way: said as what it is when the event is gone.
    if (error instanceof FollowedRunGoneError || mark === undefined || (await markHolds(store, ref, mark))) throw error;
    throw new FollowedRunGoneError(ref.runId, `${log} no longer holds event ${mark.id}`);
  }
  if (!checked) throw new FollowedRunGoneError(ref.runId, `${log} is gone or holds fewer than ${mark!.line + 1} events`);
}

/** Whether the log of `ref` still holds event `mark.id` at line `mark.line` (false when it cannot be read). */
export async function markHolds(store: RunStore, ref: RunRef, mark: FollowMark): Promise<boolean> {
  try {
    for await (const { event, line } of store.readVerified(ref, { from: mark.line, onWarning: () => undefined })) return line === mark.line && event.id === mark.id;
    return false;
  } catch {
    return false;
  }
}

/**
 * The mark of the event at `line` of the log of `ref` (0-based), or undefined when the log does not hold one there:
 * where a follower that starts after events it has from elsewhere (the studio's page, from the run's event count)
 * takes its mark from, so that a run deleted or replaced before its first new event is noticed too.
 */
export async function markAt(store: RunStore, ref: RunRef, line: number): Promise<FollowMark | undefined> {
  try {
    for await (const read of store.readVerified(ref, { from: line, onWarning: () => undefined })) return read.line === line ? { line, id: read.event.id } : undefined;
  } catch {
    // Not readable now: the follower starts without a mark, as one that starts at the first line does.
  }
  return undefined;
}
