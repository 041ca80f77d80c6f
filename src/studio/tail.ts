/**
 * Server-sent events tailing a run's log: every event from line `from` on, then each new one as the writer appends
 * it. Each wake-up reads from the next unread line through the log's index (`EventStore.readStream({ from })`),
 * never the whole file again; readers see only committed batches, so half a step is never sent.
 *
 * Messages: `event: event` with the stored event as data and `id:` the number of lines read so far (a reconnecting
 * EventSource sends it back as Last-Event-ID and continues there); `event: corrupt` for a line that is not a valid
 * event; a comment line every `heartbeatMs` to keep proxies from closing an idle stream.
 */
import { watch, statSync, type FSWatcher } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EventStore } from '../store/index.js';
import { BASE_HEADERS } from './http.js';

/** Timings of a tail (defaults suit people; tests may shorten them). */
export interface TailOptions {
  /** How often the log's size is checked in case a file-change notification was missed (default 500 ms). */
  pollMs?: number;
  /** How often an idle stream gets a comment line (default 15 s). */
  heartbeatMs?: number;
}

/** Streams `store` from line `from` to `res` until the client goes away; returns a function that ends the stream. */
export function tailEvents(req: IncomingMessage, res: ServerResponse, store: EventStore, from: number, options: TailOptions = {}): () => void {
  res.writeHead(200, {
    ...BASE_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write('retry: 2000\n\n');
  let next = from;
  let closed = false;
  let reading = false;
  let again = false;
  let lastSize = -1;

  const send = async (text: string): Promise<void> => {
    if (closed) return;
    if (!res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
  };
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
        for await (const event of store.readStream({
          from: next,
          onCorrupt: (c) => {
            next = c.line;
            corrupt.push(`id: ${next}\nevent: corrupt\ndata: ${JSON.stringify(c)}\n\n`);
          },
        })) {
          for (const line of corrupt.splice(0)) await send(line);
          next++;
          await send(`id: ${next}\nevent: event\ndata: ${JSON.stringify(event)}\n\n`);
          if (closed) return;
        }
        for (const line of corrupt.splice(0)) await send(line);
      } while (again && !closed);
    } catch (error) {
      await send(`event: failure\ndata: ${JSON.stringify({ error: (error as Error).message })}\n\n`);
    } finally {
      reading = false;
    }
  };
  const poke = (): void => {
    if (closed) return;
    let size: number;
    try {
      size = statSync(store.paths.events).size;
    } catch {
      return;
    }
    if (size === lastSize) return;
    lastSize = size;
    void pump();
  };

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(store.paths.events, { persistent: false }, poke);
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined; // polling alone still tails the log
  }
  const poll = setInterval(poke, options.pollMs ?? 500);
  const heartbeat = setInterval(() => void send(': keep-alive\n\n'), options.heartbeatMs ?? 15_000);
  const stop = (): void => {
    if (closed) return;
    closed = true;
    watcher?.close();
    clearInterval(poll);
    clearInterval(heartbeat);
    res.end();
  };
  req.on('close', stop);
  res.on('close', stop);
  poke();
  return stop;
}
