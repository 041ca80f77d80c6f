/**
 * `npm run bench:pg` (issue 17), against a local server (BACKPACKFLOW_DATABASE_URL, else a throwaway cluster started
 * with scripts/pg-test-cluster.sh):
 *
 * 1. Per-step overhead of a durable run on Postgres, side by side with LangGraph.js `PostgresSaver` on the same server
 *    and workload: a chain of N steps each appending 200 bytes to a list (N = 50, 200, 1,000). Overhead per step =
 *    (time with the store − time of the same flow in memory) / N, rows interleaved in rounds, medians. Statements per
 *    step counted on the client (every statement each driver sends). Target: at most 0.5x PostgresSaver's.
 * 2. Throughput of 1, 2 and 4 worker processes (`backpackflow worker`, concurrency 1) on 200 queued short runs of
 *    I/O-bound nodes (3 steps waiting 20 ms each), from the first run's start to the last run's end. Target: 4 workers
 *    at least 3x one.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { createRequire } from 'node:module';
import postgres from 'postgres';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../src/index.js';
import { recordRunFlow, readFlowFile } from '../src/cli/backpackflow/flows.js';
import { PostgresRunStore } from '../src/store/index.js';
import { RunQueue } from '../src/store/postgres/queue.js';
import { median, printTable } from './harness.js';

const root = join(import.meta.dirname, '..');
/** PostgresSaver's driver (pg, its dependency), to count the statements its clients send. */
type Query = (...args: unknown[]) => unknown;
const pg = createRequire(import.meta.url)('pg') as { Client: { prototype: { query: Query } } };
const LINE = 'x'.repeat(200);

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The server: the given one, or a throwaway cluster (stopped at the end). */
async function server(): Promise<{ url: string; stop: () => void }> {
  const given = process.env['BACKPACKFLOW_DATABASE_URL'];
  if (given) return { url: given, stop: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), 'bpf-bench-pg-'));
  chmodSync(dir, 0o755);
  const script = join(root, 'scripts', 'pg-test-cluster.sh');
  const url = execFileSync('bash', [script, 'start', join(dir, 'cluster'), String(await freePort())], { encoding: 'utf8' }).trim();
  return {
    url,
    stop: () => {
      execFileSync('bash', [script, 'stop', join(dir, 'cluster')]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh database on the server, for one measurement. */
async function database(serverUrl: string, name: string): Promise<string> {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

// --- backpackflow: a chain of N steps, each appending 200 bytes to `lines` ---------------------------------------

class Append extends BackpackNode<number, string> {
  override prep(backpack: BackpackHandle): number {
    return ((backpack.unpack('lines') as string[] | undefined) ?? []).length;
  }
  override exec(): string {
    return LINE;
  }
  override post(backpack: BackpackHandle, count: number, line: string): string {
    backpack.pack('lines', [...((backpack.unpack('lines') as string[] | undefined) ?? []), line]);
    return count + 1 < (this.config['steps'] as number) ? 'again' : 'done';
  }
}

function chain(steps: number): Flow {
  const flow = new Flow({ namespace: 'chain', maxSteps: steps + 10 });
  const node = flow.addNode(Append, { id: 'append', steps });
  node.on('again', node);
  return flow;
}

// --- LangGraph: the same chain ----------------------------------------------------------------------------------

const State = Annotation.Root({
  lines: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

function graph(steps: number) {
  return new StateGraph(State)
    .addNode('append', () => ({ lines: [LINE] }))
    .addEdge(START, 'append')
    .addConditionalEdges('append', (s) => (s.lines.length < steps ? 'append' : END));
}

async function main(): Promise<void> {
  const { url: serverUrl, stop } = await server();
  try {
    const rows = [];
    const url = await database(serverUrl, 'bpf_bench_steps');
    let bpfStatements = 0;
    const store = new PostgresRunStore({ url, onStatement: () => void bpfStatements++ });
    await store.listRuns();
    // LangGraph's driver (pg): every statement its clients send.
    let lgStatements = 0;
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: unknown, ...args: unknown[]) {
      lgStatements++;
      return query.apply(this, args);
    };
    const saver = PostgresSaver.fromConnString(url);
    await saver.setup();
    let id = 0;
    for (const steps of [50, 200, 1000]) {
      const rounds = steps === 1000 ? 3 : 5;
      const t = { bpfMem: [] as number[], bpfPg: [] as number[], lgMem: [] as number[], lgPg: [] as number[] };
      let bpfCount = 0;
      let lgCount = 0;
      const compiledMem = graph(steps).compile();
      const compiledPg = graph(steps).compile({ checkpointer: saver });
      for (let round = 0; round < rounds; round++) {
        let start = performance.now();
        await chain(steps).run();
        t.bpfMem.push(performance.now() - start);
        const before = bpfStatements;
        start = performance.now();
        await runFlow(chain(steps), { store, runId: `b${id++}` });
        t.bpfPg.push(performance.now() - start);
        bpfCount = bpfStatements - before;
        start = performance.now();
        await compiledMem.invoke({}, { recursionLimit: steps + 10 });
        t.lgMem.push(performance.now() - start);
        const lgBefore = lgStatements;
        start = performance.now();
        await compiledPg.invoke({}, { configurable: { thread_id: `t${id++}` }, recursionLimit: steps + 10 });
        t.lgPg.push(performance.now() - start);
        lgCount = lgStatements - lgBefore;
      }
      const bpf = (median(t.bpfPg) - median(t.bpfMem)) / steps;
      const lg = (median(t.lgPg) - median(t.lgMem)) / steps;
      rows.push({
        name: `per-step overhead, N=${steps}: backpackflow on Postgres (${(bpfCount / steps).toFixed(2)} statements/step)`,
        median: bpf,
        unit: 'ms',
        target: lg * 0.5,
        anchor: `PostgresSaver ${lg.toFixed(2)} ms/step, ${(lgCount / steps).toFixed(2)} statements/step; ratio ${(bpf / lg).toFixed(2)}x`,
      });
    }
    pg.Client.prototype.query = query;
    await saver.end();
    await store.close();
    printTable('Durable run on Postgres: per-step overhead (chain of N steps appending 200 bytes)', rows);

    // --- workers -------------------------------------------------------------------------------------------------
    const throughput: Record<number, number> = {};
    for (const count of [1, 2, 4]) {
      const wurl = await database(serverUrl, `bpf_bench_workers_${count}`);
      const wstore = new PostgresRunStore({ url: wurl });
      const config = readFlowFile(join(root, 'test', 'pg', 'fixtures', 'chain.json')) as { nodes: { params: Record<string, unknown> }[] };
      config.nodes[0]!.params = { steps: 3, delayMs: 20 };
      const queue = new RunQueue(wstore);
      for (let i = 0; i < 200; i++) {
        const ref = { sessionKey: 'bench', runId: `w${i}` };
        await recordRunFlow(wstore, ref, { v: 1, flow: { kind: 'config' }, modules: [join(root, 'test', 'pg', 'fixtures', 'nodes.mjs')] }, config);
        await queue.enqueue(ref, 'start', {});
      }
      const workers = Array.from({ length: count }, () =>
        spawn(process.execPath, [join(root, 'dist', 'cli', 'backpackflow.js'), 'worker', '--database-url', wurl, '--poll-ms', '50', '--exit-when-idle'], { stdio: 'ignore' }),
      );
      await Promise.all(workers.map((w) => new Promise((resolve) => w.on('exit', resolve))));
      const sql = await wstore.sql();
      const [span] = await sql<{ first: string; last: Date; done: string }[]>`
        select (select min((body::json->>'timestamp')::bigint) from backpackflow.events where body like '{"v":1,"id":%"type":"run.started"%') as first,
               (select max(finished_at) from backpackflow.queue) as last,
               (select count(*) from backpackflow.queue where outcome = 'completed') as done`;
      if (Number(span!.done) !== 200) throw new Error(`${count} workers completed ${span!.done} of 200 runs`);
      throughput[count] = 200 / ((span!.last.getTime() - Number(span!.first)) / 1000);
      await wstore.close();
    }
    printTable('Workers: 200 queued runs of 3 I/O-bound steps (20 ms each), runs per second', [
      { name: '1 worker', median: throughput[1]!, unit: 'runs/s' },
      { name: '2 workers', median: throughput[2]!, unit: 'runs/s', anchor: `${(throughput[2]! / throughput[1]!).toFixed(2)}x one` },
      { name: '4 workers: one worker\'s time per run / 4 workers\' (target >= 3x)', median: 3 / (throughput[4]! / throughput[1]!), unit: '(3 / speed-up)', target: 1, anchor: `${(throughput[4]! / throughput[1]!).toFixed(2)}x one` },
    ]);
  } finally {
    stop();
  }
}

await main();
