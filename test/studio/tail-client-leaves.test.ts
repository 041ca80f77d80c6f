/**
 * A live stream whose client goes away while tailEvents still awaits its first store reads (markAt / markHolds; on
 * PostgreSQL each is a network round trip) is stopped: no poll, heartbeat or watcher is left running for it (the
 * studio's stream count, released when the client left, would not bound such leftovers). Review s22b, M1.
 */
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunStore } from '../../src/store/index.js';
import { tailEvents } from '../../src/studio/tail.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A run store whose reads take `delayMs` (as a remote database's do); the log holds one event. */
function slowStore(delayMs: number): RunStore {
  return {
    describeLog: () => '/nonexistent/events.jsonl',
    async *readVerified(_ref: unknown, options: { from?: number } = {}) {
      await sleep(delayMs);
      if ((options.from ?? 0) === 0) yield { line: 0, event: { id: 'e0', seq: 0, type: 'run.started', payload: {} } };
    },
  } as unknown as RunStore;
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

describe('live stream and a client that leaves early', () => {
  it('stops the tail (no interval left running) when the client disconnected before the first read returned', async () => {
    const stops: Array<() => void> = [];
    let intervalsCreated = 0;
    let intervalsCleared = 0;
    const realSet = globalThis.setInterval;
    const realClear = globalThis.clearInterval;
    const ours = new Set<unknown>();
    server = createServer((req, res) => {
      // Count the intervals tailEvents creates for this stream, and those it clears.
      globalThis.setInterval = ((fn: () => void, ms: number) => {
        const t = realSet(fn, ms);
        ours.add(t);
        intervalsCreated++;
        return t;
      }) as typeof setInterval;
      globalThis.clearInterval = ((t: NodeJS.Timeout) => {
        if (ours.delete(t)) intervalsCleared++;
        realClear(t);
      }) as typeof clearInterval;
      void tailEvents(req, res, slowStore(150), { sessionKey: 'default', runId: 'r' }, { from: 1 }, { pollMs: 20, heartbeatMs: 20 })
        .then((stop) => stops.push(stop))
        .catch(() => undefined);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      // The client asks for the stream, then leaves while the first read (150 ms) is under way.
      const socket = connect(port, '127.0.0.1', () => socket.write(`GET /stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
      await sleep(50);
      socket.destroy();
      await sleep(600);
    } finally {
      globalThis.setInterval = realSet;
      globalThis.clearInterval = realClear;
    }
    const leaked = [...ours];
    for (const t of leaked) realClear(t as NodeJS.Timeout);
    for (const stop of stops) stop();
    // Secure behaviour: whatever the stream started, it stopped once its client was gone.
    expect({ created: intervalsCreated, stillRunning: leaked.length }).toEqual({ created: intervalsCreated, stillRunning: 0 });
    expect(intervalsCleared).toBe(intervalsCreated);
  });
});
