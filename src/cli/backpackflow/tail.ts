/**
 * `runs tail <runId>`: a run's events as they are stored, from the first, until the run completes or fails (a waiting
 * run is followed until it is answered and ends). On
 * Postgres each committed step of a tailed run is announced (the tail registers itself: PostgresRunStore.onCommits;
 * LISTEN/NOTIFY on `backpackflow_events`), so lines appear as soon as the
 * step commits; on files the log is read again every `--poll-ms`. A run not stored yet (queued, not started) is waited
 * for. Only what the log's chain vouches for is printed.
 *
 * A run deleted while it is followed, or deleted and started again under the same id, is not printed as one run: each
 * re-read starts at the line of the last event printed and checks that it still holds that event (studio/follow-log.ts,
 * the rule the studio's live stream follows too). When it does not, or the log is gone, the tail says so on stderr and
 * exits 1.
 */
import { Wakeup } from './wakeup.js';
import { StreamEventType, type StreamEvent } from '../../events/index.js';
import { PostgresRunStore, isValidId } from '../../store/index.js';
import { FollowedRunGoneError, readAfterMark, type FollowMark } from '../../studio/follow-log.js';
import { CliError } from './errors.js';
import { warn, type CommonOptions } from './output.js';
import { eventLine } from './render.js';
import { cliStore } from './run-store.js';

/** A waiting run goes on once answered: the tail waits with it. */
const ENDS: ReadonlySet<string> = new Set([StreamEventType.RUN_END, StreamEventType.RUN_ERROR]);

/** Tails run `options.runId`; see the module comment. */
export async function tailRun(options: CommonOptions & { runId: string; pollMs: number }): Promise<void> {
  if (!isValidId(options.runId)) throw new CliError(`invalid run id '${options.runId}': use letters, digits, '.', '_' and '-'`);
  const store = cliStore(options);
  const ref = { sessionKey: options.session, runId: options.runId };
  const wakeup = new Wakeup();
  // Set by an announcement that arrives while the log is being read, so that it is not lost before the next wait.
  let announced = false;
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const unlisten = store instanceof PostgresRunStore ? await store.onCommits(ref, () => {
    announced = true;
    wakeup.wake();
  }) : undefined;
  const print = (event: StreamEvent): void => void process.stdout.write(`${options.json ? JSON.stringify(event) : eventLine(event)}\n`);
  /** The last event printed and its line: each re-read starts there, to check that the log is still this run's. */
  let last: FollowMark | undefined;
  try {
    for (;;) {
      announced = false;
      let ended = false;
      try {
        for await (const { event, line } of readAfterMark(store, ref, last, { onWarning: warn })) {
          print(event);
          last = { id: event.id, line };
          // A resumed run starts again after run.failed or run.waiting: only the last line of the log ends the tail.
          ended = ENDS.has(event.type);
        }
      } catch (error) {
        if (error instanceof FollowedRunGoneError) throw new CliError(error.message);
        throw error;
      }
      if (ended || stop.signal.aborted) return;
      if (announced) continue;
      await wakeup.sleep(options.pollMs, stop.signal);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await unlisten?.();
  }
}
