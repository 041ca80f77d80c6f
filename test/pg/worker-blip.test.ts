/**
 * A worker whose database connections are lost for a moment (a loopback proxy in front of the server drops the
 * server's replies, then cuts every connection; or refuses connections for a while): the run it was running is not
 * failed but given back and resumed, and completes with each step recorded once. A node's own lost connection (its
 * exec fails with ECONNRESET) stays the run's failure.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWorker } from '../../src/cli/backpackflow/worker.js';
import { recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { documentCollector } from '../../src/cli/backpackflow/recipe.js';
import { loadRunPoint } from '../../src/runtime/index.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { RunQueue } from '../../src/store/postgres/queue.js';
import { DEFAULT_MAX_FLOW_BYTES } from '../../src/serialization/limits.js';
import { freshDatabase } from '../support/pg.js';

const MODULES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'worker-blip-nodes.ts');

/** A TCP proxy to the server: `drop` keeps the server's replies from the client, `cut` ends every connection, `down` refuses new ones. */
interface Proxy {
  port: number;
  drop: () => void;
  cut: () => void;
  down: (down: boolean) => void;
  close: () => Promise<void>;
}

async function startProxy(target: URL): Promise<Proxy> {
  const state = { dropping: false, down: false, pairs: new Set<[Socket, Socket]>() };
  const server: Server = createServer((client) => {
    if (state.down) return void client.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    state.pairs.add(pair);
    client.on('data', (d: Buffer) => upstream.write(d));
    upstream.on('data', (d: Buffer) => {
      if (!state.dropping) client.write(d);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      state.pairs.delete(pair);
    };
    for (const s of pair) s.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = (): void => {
    for (const [a, b] of state.pairs) {
      a.destroy();
      b.destroy();
    }
    state.pairs.clear();
    state.dropping = false;
  };
  return {
    port: (server.address() as { port: number }).port,
    drop: () => (state.dropping = true),
    cut,
    down: (down) => {
      state.down = down;
      if (down) cut();
    },
    close: () => new Promise((resolve) => (cut(), server.close(() => resolve()))),
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a worker that loses its database connections', () => {
  let url: string;
  let drop: () => Promise<void>;
  let store: PostgresRunStore;
  let admin: postgres.Sql;
  let proxy: Proxy;
  let viaProxy: string;

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    store = new PostgresRunStore({ url });
    admin = postgres(url, { max: 1, onnotice: () => undefined });
    proxy = await startProxy(new URL(url));
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    viaProxy = proxied.toString();
  });
  afterAll(async () => {
    await proxy.close();
    await store.close();
    await admin.end();
    await drop();
  });

  /** An in-process worker through the proxy, until the queue is empty. */
  function work(leaseMs: number): Promise<void> {
    return runWorker({ databaseUrl: viaProxy, modules: [MODULES], maxFlowBytes: DEFAULT_MAX_FLOW_BYTES, concurrency: 1, leaseMs, pollMs: 100, exitWhenIdle: true });
  }

  async function enqueue(runId: string, node: { type: string; params: Record<string, unknown> }): Promise<void> {
    const config = { version: '2.0.0', namespace: 'blip', nodes: [{ id: 'step', ...node }], edges: [{ from: 'step', to: 'step', condition: 'again' }] };
    const collected = documentCollector();
    await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [MODULES] }, config);
    await new RunQueue(store).enqueue({ sessionKey: 'default', runId }, 'start', {}, collected.documents);
  }

  async function job(runId: string): Promise<{ state: string; attempts: number; outcome: string | null }> {
    const [row] = await admin<{ state: string; attempts: number; outcome: string | null }[]>`select state, attempts, outcome from backpackflow.queue where run_id = ${runId}`;
    return row!;
  }

  async function checkpoints(runId: string): Promise<number> {
    const [row] = await admin<{ n: string }[]>`select count(*) as n from backpackflow.event_lines where run_id = ${runId} and body like '%"type":"checkpoint.saved"%'`;
    return Number(row!.n);
  }

  /** The run completed with its `steps` lines, each step's checkpoint recorded once, its log intact. */
  async function expectCompleted(runId: string, steps: number): Promise<void> {
    const ref = { sessionKey: 'default', runId };
    expect((await store.currentRunMeta(ref)).status).toBe('completed');
    expect((await store.verifyLog(ref)).ok).toBe(true);
    const recorded: number[] = [];
    for await (const { event } of store.readVerified(ref)) if (event.type === 'checkpoint.saved') recorded.push((event.payload as { step: number }).step);
    expect(recorded).toEqual(Array.from({ length: steps + 1 }, (_, i) => i));
    const point = await loadRunPoint({ store, runId });
    expect(point.state.items['lines']?.value).toEqual(Array.from({ length: steps }, (_, i) => `step ${i + 1}`));
  }

  it('replies lost, then the connections cut mid-run: the job is given back and the run resumed to completion', async () => {
    await enqueue('blip', { type: 'BlipStep', params: { steps: 12, delayMs: 30 } });
    const worker = work(1000);
    await until('a few steps recorded', async () => (await checkpoints('blip')) >= 3);
    // A step's commit reaches the server, its reply does not; then the connections go.
    proxy.drop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    proxy.cut();
    await worker;
    const ended = await job('blip');
    expect(ended.outcome).toBe('completed');
    expect(ended.attempts).toBeGreaterThanOrEqual(2);
    await expectCompleted('blip', 12);
  });

  it('the database refusing connections for longer than the lease: the worker does not take a failed claim for an idle queue; the run is resumed and completes', async () => {
    await enqueue('away', { type: 'BlipStep', params: { steps: 12, delayMs: 30 } });
    const worker = work(600);
    await until('a few steps recorded', async () => (await checkpoints('away')) >= 3);
    proxy.down(true);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    proxy.down(false);
    await worker;
    const ended = await job('away');
    expect(ended.outcome).toBe('completed');
    expect(ended.attempts).toBeGreaterThanOrEqual(2);
    await expectCompleted('away', 12);
  });

  it("a node's own lost connection (its exec fails with ECONNRESET) is the run's failure, not given back", async () => {
    await enqueue('node-reset', { type: 'BlipReset', params: {} });
    await work(1000);
    const ended = await job('node-reset');
    expect(ended).toMatchObject({ state: 'done', attempts: 1 });
    expect(ended.outcome).toMatch(/^failed: Node 'step' failed on attempt 1 of 1: read ECONNRESET/);
  });
});
