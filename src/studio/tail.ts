/**
 * Server-sent events tailing a run's log: every event from line `from` on, then each new one as the writer stores
 * it. Each wake-up reads from the next unread line (`RunStore.readVerified({ from })`, through the log's index on
 * files), never the whole log again; readers see only committed batches, so half a step is never sent. What wakes
 * the tail: on files, a change notification of the log file (and a check of its size every `pollMs`, in case one was
 * missed); on PostgreSQL, the announcement of each committed step (LISTEN/NOTIFY on the channel `runs tail` listens
 * to), and a read every `pollMs` in case one was missed.
 *
 * Messages: `event: event` with the stored event as data and `id:` the number of lines read so far, then the line and
 * id of the last event sent, `<lines>:<line>:<event id, URI-encoded>` (a reconnecting EventSource sends it back as
 * Last-Event-ID and continues there); `event: corrupt` for a line that is not a valid event; `event: warning` (data
 * `{ message }`, once per stream) for what the log does not serve, naming the file and lines (a batch that fails its
 * chain hash, lines after the last one); a comment line every `heartbeatMs` to keep proxies from closing an idle stream.
 *
 * A run deleted while it is streamed, or deleted and started again under the same id, is never streamed as one run
 * (the rule of `runs tail`, in follow-log.ts): each re-read starts at the line of the last event sent and checks that
 * it still holds that event. When it does not, the stream sends `event: failure` (data `{ error, gone: true }`, the
 * error saying what was found, naming the log) and ends; the EventSource's reconnection, whose Last-Event-ID carries
 * that event, is then answered 409 with the same check (404 when the run is gone), which ends its retries.
 */
import { watch, statSync, type FSWatcher } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PostgresRunStore, type RunRef, type RunStore } from '../store/index.js';
import { FollowedRunGoneError, markAt, markHolds, readAfterMark, type FollowMark } from './follow-log.js';
import { BASE_HEADERS, HttpError } from './http.js';

/** Timings of a tail (defaults suit people; tests may shorten them). */
export interface TailOptions {
  /** How often the log is checked in case a change notification was missed (default 500 ms). */
  pollMs?: number;
  /** How often an idle stream gets a comment line (default 15 s). */
  heartbeatMs?: number;
  /**
   * How many live streams the studio serves at once (default {@link DEFAULT_MAX_STREAMS}); one more is a 503 until one
   * closes. Each holds a connection, a watcher of its run's log and a timer.
   */
  maxStreams?: number;
}

/** The default of {@link TailOptions.maxStreams}: far more than the tabs a person keeps open. */
export const DEFAULT_MAX_STREAMS = 64;

/** Calls `poke` now and whenever the log of `ref` may have grown; resolves to the function that stops it. */
async function watchLog(store: RunStore, ref: RunRef, poke: () => void, pollMs: number): Promise<() => void> {
  if (store instanceof PostgresRunStore) {
    const unlisten = await store.onCommits(ref, poke);
    const poll = setInterval(poke, pollMs);
    poke(); // after LISTEN: a step committed from here on is announced
    return () => {
      clearInterval(poll);
      void unlisten();
    };
  }
  // Files: the log is read again when the watcher says it was written, and on each poll when its size or its time of
  // last change moved. Not by size alone: a step is written into the space the writer reserved after the last line
  // (see log-writer.ts), which leaves the size as it was. A change within the last second is read again at each poll,
  // as a second write in the same tick of the filesystem's clock leaves the time as it was too.
  const path = store.describeLog(ref);
  let last = '';
  const check = (): void => {
    let seen: string;
    let recent = false;
    try {
      const stat = statSync(path, { bigint: true });
      seen = `${stat.size}:${stat.mtimeNs}`;
      recent = BigInt(Date.now()) * 1_000_000n - stat.mtimeNs < 1_000_000_000n;
    } catch {
      seen = 'gone'; // deleted: read once more, which tells the stream
    }
    if (seen === last && !recent) return;
    last = seen;
    poke();
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(path, { persistent: false }, poke);
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined; // polling alone still tails the log
  }
  const poll = setInterval(check, pollMs);
  check();
  return () => {
    watcher?.close();
    clearInterval(poll);
  };
}

/** Where a stream starts: the number of lines already sent, and the last event sent (a reconnection), if known. */
export interface StreamStart {
  from: number;
  mark?: FollowMark;
}

/** Longest event id a stream's `id:` carries (URI-encoded): a longer one (not one backpackflow writes) is left out. */
const MAX_MARK_ID = 200;

/** The `id:` of a message sent after `next` lines, the last event sent being `mark` (see the module comment). */
function streamId(next: number, mark: FollowMark | undefined): string {
  const id = mark === undefined ? undefined : encodeURIComponent(mark.id);
  return id === undefined || id.length > MAX_MARK_ID ? String(next) : `${next}:${mark!.line}:${id}`;
}

/** Ends the response of a client that left before its stream started; the stream's stop function (nothing to stop). */
function ended(res: ServerResponse): () => void {
  if (!res.writableEnded) res.end();
  return () => undefined;
}

/** The start a Last-Event-ID asks for (see {@link streamId}), or undefined when it is not one. */
export function parseLastEventId(value: string): StreamStart | undefined {
  const match = /^(\d+)(?::(\d+):([^:]+))?$/.exec(value);
  if (match === null) return undefined;
  const from = Number(match[1]);
  if (!Number.isSafeInteger(from)) return undefined;
  if (match[2] === undefined) return { from };
  const line = Number(match[2]);
  let id: string;
  try {
    id = decodeURIComponent(match[3]!);
  } catch {
    return { from };
  }
  return Number.isSafeInteger(line) && line < from ? { from, mark: { line, id } } : { from };
}

/**
 * Streams the log of `ref` from `start` to `res` until the client goes away; resolves to a function that ends the
 * stream. A reconnection whose last event the log no longer holds is a 409 (an HttpError, nothing streamed).
 */
export async function tailEvents(req: IncomingMessage, res: ServerResponse, store: RunStore, ref: RunRef, start: StreamStart, options: TailOptions = {}): Promise<() => void> {
  // The client may leave while the reads below are under way (on a database, each is a round trip): its close is
  // heard from the start, and nothing is set up for a client that is gone.
  let left = false;
  /** The stream's stop function, once it has one (see below). */
  const stopping: { stop?: () => void } = {};
  const leave = (): void => {
    left = true;
    stopping.stop?.();
  };
  req.once('close', leave);
  res.once('close', leave);
  const gone = (): boolean => left || res.destroyed || req.socket.destroyed;
  // A stream that starts after events the page has (from its event count) takes the last of them as its mark.
  let mark = start.mark ?? (start.from > 0 ? await markAt(store, ref, start.from - 1) : undefined);
  if (gone()) return ended(res);
  if (start.mark !== undefined && !(await markHolds(store, ref, start.mark))) {
    throw new HttpError(
      409,
      `run ${ref.runId} was deleted (or replaced by a new run of the same id) since this stream sent its event ${start.mark.id}: line ${start.mark.line + 1} of ${store.describeLog(ref)} no longer holds it. Open the run again`,
      'last-event-id',
    );
  }
  if (gone()) return ended(res);
  res.writeHead(200, {
    ...BASE_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write('retry: 2000\n\n');
  if (start.mark === undefined && start.from > 0 && mark === undefined) {
    // The events the page has are no longer all in the log: the run was deleted (or replaced, or cut) before this
    // stream started. Said at once, as a deletion noticed later is: following what is there would splice two runs.
    const error = new FollowedRunGoneError(ref.runId, `${store.describeLog(ref)} no longer holds event ${start.from} (line ${start.from}), which the page has`);
    res.write(`event: failure\ndata: ${JSON.stringify({ error: error.message, gone: true })}\n\n`);
    res.end();
    return () => undefined;
  }
  /** The first line not sent yet; `mark`: the last event sent, and its line. */
  let next = start.from;
  let closed = false;
  let reading = false;
  let again = false;

  const send = async (text: string): Promise<void> => {
    if (closed) return;
    if (!res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
  };
  /** The warnings this stream has sent (each is sent once: the log is read again at every wake-up). */
  const warned = new Set<string>();
  const pump = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        const corrupt: string[] = [];
        for await (const { event, line } of readAfterMark(store, ref, mark, {
          from: next,
          onCorrupt: (c) => {
            // (1-based: a line at or before `next` was sent already, read again from the mark)
            if (c.line <= next) return;
            next = c.line;
            corrupt.push(`id: ${streamId(next, mark)}\nevent: corrupt\ndata: ${JSON.stringify(c)}\n\n`);
          },
          // What the log does not serve (lines that fail their chain hash, lines after the last one) is said once
          // per stream, as the JSON views say it in their warnings: the `id:` numbers alone would just skip.
          onWarning: (message) => {
            if (warned.has(message)) return;
            warned.add(message);
            corrupt.push(`event: warning\ndata: ${JSON.stringify({ message })}\n\n`);
          },
        })) {
          for (const message of corrupt.splice(0)) await send(message);
          if (line < next) continue; // sent already (a line after the mark)
          next = line + 1;
          mark = { line, id: event.id };
          await send(`id: ${streamId(next, mark)}\nevent: event\ndata: ${JSON.stringify(event)}\n\n`);
          if (closed) return;
        }
        for (const message of corrupt.splice(0)) await send(message);
      } while (again && !closed);
    } catch (error) {
      const gone = error instanceof FollowedRunGoneError;
      await send(`event: failure\ndata: ${JSON.stringify({ error: (error as Error).message, ...(gone ? { gone: true } : {}) })}\n\n`);
      // Nothing more of this run will come: the stream ends (its reconnection is refused, see tailEvents).
      if (gone) stop();
    } finally {
      reading = false;
    }
  };
  const poke = (): void => {
    if (!closed) void pump();
  };

  let unwatch: (() => void) | undefined;
  const heartbeat = setInterval(() => void send(': keep-alive\n\n'), options.heartbeatMs ?? 15_000);
  const stop = (): void => {
    if (closed) return;
    closed = true;
    unwatch?.();
    clearInterval(heartbeat);
    res.end();
  };
  stopping.stop = stop;
  if (gone()) {
    stop();
    return stop;
  }
  try {
    unwatch = await watchLog(store, ref, poke, options.pollMs ?? 500);
  } catch (error) {
    await send(`event: failure\ndata: ${JSON.stringify({ error: `cannot follow the log: ${(error as Error).message}` })}\n\n`);
    stop();
    return stop;
  }
  if (closed) unwatch();
  return stop;
}
