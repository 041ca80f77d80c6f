/**
 * A step's commit whose database connection is lost (a loopback proxy in front of the server forwards the commit
 * and keeps its reply from the client, or never forwards it): the runtime finds out whether the batch was stored,
 * says so, records no run.failed (a lost connection stops the run, it is not its failure), and leaves no seq gap;
 * the run resumes from its last recorded step. Not a mock of the driver: the connection is really cut.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, StoreError, StreamEventType, listRuns, resumeRun, runFlow } from '../../src/index.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { freshDatabase } from '../support/pg.js';

/**
 * A TCP proxy to the server. Armed, it acts on the client's next write: 'reply' forwards it and keeps the server's
 * reply from the client, then cuts the connection (the statement ran; its outcome never reaches the client);
 * 'request' cuts the connection without forwarding it. `down` stops listening (new connections are refused:
 * ECONNREFUSED, which the driver reports at once; a connection accepted and then reset is retried until its timeout).
 */
interface Proxy {
  port: number;
  arm: (mode: 'reply' | 'request') => void;
  down: (down: boolean) => Promise<void>;
  close: () => Promise<void>;
}

async function startProxy(target: URL): Promise<Proxy> {
  const state: { armed: 'reply' | 'request' | undefined; down: boolean; pairs: Set<[Socket, Socket]> } = { armed: undefined, down: false, pairs: new Set() };
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    state.pairs.add(pair);
    let swallowing = false;
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      state.pairs.delete(pair);
    };
    client.on('data', (d: Buffer) => {
      const armed = state.armed;
      state.armed = undefined;
      if (armed === 'request') return end();
      upstream.write(d);
      if (armed === 'reply') {
        swallowing = true;
        // Time for the server to run the statement and commit; its reply is dropped, then the connection cut.
        setTimeout(end, 300);
      }
    });
    upstream.on('data', (d: Buffer) => {
      if (!swallowing) client.write(d);
    });
    for (const s of pair) s.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    arm: (mode) => (state.armed = mode),
    down: async (down) => {
      if (down === state.down) return;
      state.down = down;
      await new Promise<void>((resolve) => (down ? server.close(() => resolve()) : server.listen(port, '127.0.0.1', resolve)));
    },
    close: () =>
      new Promise((resolve) => {
        for (const pair of state.pairs) for (const socket of pair) socket.destroy();
        if (state.down) return resolve();
        server.close(() => resolve());
      }),
  };
}

/** How many times each node's exec ran, per run (`run:node`; the run named by the test in `currentRun`). */
const execs = new Map<string, number>();
let currentRun = '';
/** Called in the exec of node 'b' (then cleared): arms the proxy for that step's commit. */
let onB: (() => void) | undefined;

class Step extends BackpackNode {
  override exec(): string {
    const key = `${currentRun}:${this.id}`;
    execs.set(key, (execs.get(key) ?? 0) + 1);
    if (this.id === 'b' && onB) {
      const arm = onB;
      onB = undefined;
      arm();
    }
    return 'ok';
  }
}

function chain(): Flow {
  const flow = new Flow();
  const a = flow.addNode(Step, { id: 'a' });
  const b = flow.addNode(Step, { id: 'b' });
  const c = flow.addNode(Step, { id: 'c' });
  a.next(b);
  b.next(c);
  return flow;
}

describe('a commit whose database connection is lost', () => {
  let url: string;
  let drop: () => Promise<void>;
  let proxy: Proxy;
  let direct: PostgresRunStore;
  let admin: postgres.Sql;
  let viaProxy: string;

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    direct = new PostgresRunStore({ url });
    admin = postgres(url, { max: 1, onnotice: () => undefined });
    proxy = await startProxy(new URL(url));
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    viaProxy = proxied.toString();
  });
  afterAll(async () => {
    await proxy.close();
    await direct.close();
    await admin.end();
    await drop();
  });

  /** The run's stored events (seq, type, step of a checkpoint), read and verified through the direct store. */
  async function logOf(runId: string): Promise<{ seq: number; type: string; step?: number }[]> {
    const out: { seq: number; type: string; step?: number }[] = [];
    for await (const { event } of direct.readVerified({ sessionKey: 'default', runId })) {
      out.push({ seq: event.seq, type: event.type, ...(event.type === StreamEventType.CHECKPOINT_SAVED ? { step: (event.payload as { step: number }).step } : {}) });
    }
    return out;
  }

  /** Runs the chain through the proxy, arming it (`mode`) for the commit of node b's step; the error it stopped with. */
  async function lose(runId: string, mode: 'reply' | 'request', during?: () => void): Promise<StoreError> {
    currentRun = runId;
    const store = new PostgresRunStore({ url: viaProxy, maxConnections: 1 });
    try {
      onB = () => {
        proxy.arm(mode);
        during?.();
      };
      const error = await runFlow(chain(), { store, runId }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreError);
      return error as StoreError;
    } finally {
      onB = undefined;
      await proxy.down(false);
      await store.close();
    }
  }

  /** The log has no seq gap and no run.failed; the run is listed stopped, and its resume completes it. */
  async function expectStoppedThenResumed(runId: string, lastStep: number): Promise<void> {
    const log = await logOf(runId);
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(log.map((e) => e.type)).not.toContain(StreamEventType.RUN_ERROR);
    expect(log.at(-1)).toMatchObject({ type: StreamEventType.CHECKPOINT_SAVED, step: lastStep });
    const listed = (await listRuns({ store: direct })).find((r) => r.runId === runId);
    expect(listed).toMatchObject({ status: 'stopped', errorCount: 0 });
    await expect(resumeRun(chain(), { store: direct, runId })).resolves.toMatchObject({ status: 'completed' });
    const after = await logOf(runId);
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i + 1));
    expect(after.at(-1)!.type).toBe(StreamEventType.RUN_END);
    expect((await direct.verifyLog({ sessionKey: 'default', runId })).ok).toBe(true);
  }

  it('stored though its reply was lost: says the events were stored, records no failure, and the run resumes after that step', async () => {
    const error = await lose('landed', 'reply');
    expect(error.message).toMatch(/^run default\/landed stopped: the connection to its store was lost while committing the run's last events \(seq \d+-\d+: .*checkpoint\.saved\) \(.*\); they were stored \(only the reply to the commit was lost\)\. The run is stopped, not failed/);
    expect(error.message).not.toMatch(/could not be stored|may not/);
    expect((error.cause as { code?: string }).code).toBeTruthy();
    await expectStoppedThenResumed('landed', 2);
    // b's step was stored: the resume ran c only.
    expect(execs.get('landed:b')).toBe(1);
    expect(execs.get('landed:c')).toBe(1);
  });

  it('not stored: says so, records no failure, and the run resumes at that step', async () => {
    const error = await lose('unsent', 'request');
    expect(error.message).toMatch(/stopped: the connection to its store was lost while committing the run's last events \(seq \d+-\d+: .*\); they were not stored\. /);
    await expectStoppedThenResumed('unsent', 1);
    expect(execs.get('unsent:b')).toBe(2);
  });

  it('when the log cannot be read again: says they may not have been stored', async () => {
    const error = await lose('unknown', 'request', () => void proxy.down(true));
    expect(error.message).toMatch(/; they may not have been stored \(reading the log again failed too: .*\)\. /);
    // Nothing more was written: the lease runs out or was given up, and the run resumes.
    const [row] = await admin<{ lease: boolean }[]>`select lease_owner is not null and lease_expires_at > now() as lease from backpackflow.runs where run_id = 'unknown'`;
    if (row!.lease) await admin`update backpackflow.runs set lease_expires_at = now() where run_id = 'unknown'`;
    await expectStoppedThenResumed('unknown', 1);
  });

  it("the run's end stored though its reply was lost: the run completed", async () => {
    currentRun = 'ended';
    const store = new PostgresRunStore({ url: viaProxy, maxConnections: 1 });
    try {
      const flow = chain();
      flow.eventStreamer.on(StreamEventType.RUN_END, () => proxy.arm('reply'));
      await expect(runFlow(flow, { store, runId: 'ended' })).resolves.toMatchObject({ status: 'completed', steps: 3 });
    } finally {
      await store.close();
    }
    const log = await logOf('ended');
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(log.filter((e) => e.type === StreamEventType.RUN_END)).toHaveLength(1);
    expect((await listRuns({ store: direct })).find((r) => r.runId === 'ended')).toMatchObject({ status: 'completed' });
  });
});
