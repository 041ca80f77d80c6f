/**
 * `npm run bench:pg` (issue 17), against a local server (BACKPACKFLOW_DATABASE_URL, else a throwaway cluster started
 * with scripts/pg-test-cluster.sh):
 *
 * 1. Per-step overhead of a durable run on Postgres, side by side with LangGraph.js `PostgresSaver` on the same server
 *    and workload: a chain of N steps each appending 200 bytes to a list (N = 50, 200, 1,000). Overhead per step =
 *    (time with the store − time of the same flow in memory) / N, medians of rounds in which every row runs once, in
 *    an order that turns by one each round. Before the first size, an unmeasured warm-up runs every row of both
 *    sides (5 rounds of 200 steps), and each size starts with one unmeasured round, so neither side pays for
 *    compiling its code, opening its connections or preparing its statements in the measured rounds. Statements per
 *    step counted on the client (every statement each driver sends; backpackflow's on a store of its own, used in
 *    the unmeasured round, since the driver's statement hook captures a stack trace per query). Target: at most
 *    0.5x PostgresSaver's in its default durability ('async': a step's checkpoint is written while the next step
 *    runs); its 'sync' durability (each checkpoint stored before the next step, as backpackflow stores each step) is
 *    the like-for-like comparison, and backpackflow's durability 'never' (a step's commit does not wait for the
 *    server's disk) is compared with PostgresSaver's 'async'.
 * 2. Throughput of 1, 2 and 4 worker processes (`backpackflow worker`, concurrency 1) on 200 short runs of I/O-bound
 *    nodes (3 steps waiting 20 ms each), queued once the workers listen, from the first run's start to the last run's
 *    end, and the workers' CPU time per run (their start included). Target: 4 workers at least 3x one.
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
import { documentCollector } from '../src/cli/backpackflow/recipe.js';
import { PostgresRunStore } from '../src/store/index.js';
import { RunQueue } from '../src/store/postgres/queue.js';
import { median, printTable } from './harness.js';

const root = join(import.meta.dirname, '..');
/** PostgresSaver's driver (pg, its dependency), to count the statements its clients send. */
type Query = (...args: unknown[]) => unknown;
const pg = createRequire(import.meta.url)('pg') as { Client: { prototype: { query: Query } } };
const LINE = 'x'.repeat(200);
/** The unmeasured warm-up before the first size: rounds of every row, of this many steps each. */
const WARM_UP_ROUNDS = 5;
const WARM_UP_STEPS = 200;
/** Preloaded into each worker: writes its CPU time as it exits (`cpu-us N`). */
const REPORT_CPU = `data:text/javascript,${encodeURIComponent("process.on('exit', () => { const u = process.cpuUsage(); process.stderr.write('cpu-us ' + (u.user + u.system) + '\\n'); });")}`;

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

/** The parts to run: `npm run bench:pg -- steps` or `-- workers` runs one; both by default. */
const parts = new Set(process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['steps', 'workers']);
for (const part of parts) if (part !== 'steps' && part !== 'workers') throw new Error(`unknown part ${JSON.stringify(part)}: expected steps or workers`);

async function main(): Promise<void> {
  const { url: serverUrl, stop } = await server();
  try {
    if (parts.has('steps')) {
      const rows = [];
      const url = await database(serverUrl, 'bpf_bench_steps');
      // Statements are counted on a store of their own, used in the unmeasured round only: the driver's statement
      // hook (its `debug` option) makes it capture a stack trace for every query it builds, which the measured store
      // must not pay for.
      let bpfStatements = 0;
      const counted = new PostgresRunStore({ url, onStatement: () => void bpfStatements++ });
      const store = new PostgresRunStore({ url });
      await counted.listRuns();
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
      // Warm-up, unmeasured, the same for both sides and interleaved: each runs its flows (in memory and on Postgres,
      // in every durability) until its code is compiled and its connections are open and their statements prepared,
      // so that the first measured sizes do not pay for what the later ones do not.
      for (let round = 0; round < WARM_UP_ROUNDS; round++) {
        await chain(WARM_UP_STEPS).run();
        await runFlow(chain(WARM_UP_STEPS), { store, runId: `b${id++}` });
        await runFlow(chain(WARM_UP_STEPS), { store, runId: `b${id++}`, durability: 'never' });
        await graph(WARM_UP_STEPS).compile().invoke({}, { recursionLimit: WARM_UP_STEPS + 10 });
        for (const durability of ['async', 'sync'] as const) {
          await graph(WARM_UP_STEPS).compile({ checkpointer: saver }).invoke({}, { configurable: { thread_id: `t${id++}` }, recursionLimit: WARM_UP_STEPS + 10, durability });
        }
      }
      for (const steps of [50, 200, 1000]) {
        const rounds = steps === 1000 ? 3 : steps === 200 ? 7 : 9;
        const t = { bpfMem: [] as number[], bpfPg: [] as number[], bpfLazy: [] as number[], lgMem: [] as number[], lgPg: [] as number[], lgSync: [] as number[] };
        let bpfCount = 0;
        /** PostgresSaver's statements in its last run, by durability. */
        const lgCounts = { async: 0, sync: 0 };
        const compiledMem = graph(steps).compile();
        const compiledPg = graph(steps).compile({ checkpointer: saver });
        const lgConfig = (durability: 'async' | 'sync') => ({ configurable: { thread_id: `t${id++}` }, recursionLimit: steps + 10, durability });
        /** One timed PostgresSaver run in `durability`, its statements counted. */
        const lgRun = async (durability: 'async' | 'sync'): Promise<number> => {
          const before = lgStatements;
          const ms = await time(() => compiledPg.invoke({}, lgConfig(durability)));
          lgCounts[durability] = lgStatements - before;
          return ms;
        };
        const time = async (fn: () => Promise<unknown>): Promise<number> => {
          const start = performance.now();
          await fn();
          return performance.now() - start;
        };
        // Round 0 is not measured.
        for (let round = 0; round <= rounds; round++) {
          const measured = round > 0;
          // Every row, each timed alone; the order turns by one each round, so no row always follows the same one
          // (and pays for the garbage it left).
          const rowsOfRound: [keyof typeof t, () => Promise<number>][] = [
            ['bpfMem', () => time(() => chain(steps).run())],
            [
              'bpfPg',
              async () => {
                // Unmeasured: counted on a second run, so that what is counted is what a run sends, not the
                // reconnection of the counting store's pool (its connections close after 30 s idle).
                if (!measured) await runFlow(chain(steps), { store: counted, runId: `b${id++}` });
                const before = bpfStatements;
                const ms = await time(() => runFlow(chain(steps), { store: measured ? store : counted, runId: `b${id++}` }));
                if (!measured) bpfCount = bpfStatements - before;
                return ms;
              },
            ],
            ['bpfLazy', () => time(() => runFlow(chain(steps), { store, runId: `b${id++}`, durability: 'never' }))],
            ['lgMem', () => time(() => compiledMem.invoke({}, { recursionLimit: steps + 10 }))],
            ['lgPg', () => lgRun('async')],
            ['lgSync', () => lgRun('sync')],
          ];
          for (let i = 0; i < rowsOfRound.length; i++) {
            const [row, run] = rowsOfRound[(i + round) % rowsOfRound.length]!;
            const ms = await run();
            if (measured) t[row].push(ms);
          }
        }
        const bpf = (median(t.bpfPg) - median(t.bpfMem)) / steps;
        const lg = (median(t.lgPg) - median(t.lgMem)) / steps;
        const lgSync = (median(t.lgSync) - median(t.lgMem)) / steps;
        const bpfLazy = (median(t.bpfLazy) - median(t.bpfMem)) / steps;
        rows.push({
          name: `per-step overhead, N=${steps}: backpackflow on Postgres (${(bpfCount / steps).toFixed(2)} statements/step) vs PostgresSaver's default ('async')`,
          median: bpf,
          unit: 'ms',
          target: lg * 0.5,
          anchor: `PostgresSaver ${lg.toFixed(2)} ms/step, ${(lgCounts.async / steps).toFixed(2)} statements/step; ratio ${(bpf / lg).toFixed(2)}x`,
        });
        rows.push({
          name: `  same guarantee, each step durable before the next: vs PostgresSaver durability 'sync'`,
          median: bpf,
          unit: 'ms',
          target: lgSync * 0.5,
          anchor: `PostgresSaver 'sync' ${lgSync.toFixed(2)} ms/step, ${(lgCounts.sync / steps).toFixed(2)} statements/step; ratio ${(bpf / lgSync).toFixed(2)}x`,
        });
        rows.push({
          name: `  neither waits for the disk per step: backpackflow durability 'never' vs PostgresSaver 'async'`,
          median: bpfLazy,
          unit: 'ms',
          target: lg * 0.5,
          anchor: `ratio ${(bpfLazy / lg).toFixed(2)}x`,
        });
      }
      pg.Client.prototype.query = query;
      await saver.end();
      await store.close();
      await counted.close();
      printTable('Durable run on Postgres: per-step overhead (chain of N steps appending 200 bytes)', rows);
    }

    if (parts.has('workers')) {
      // --- workers -------------------------------------------------------------------------------------------------
      const throughput: Record<number, number> = {};
      const cpuPerRun: Record<number, number> = {};
      for (const count of [1, 2, 4]) {
        const wurl = await database(serverUrl, `bpf_bench_workers_${count}`);
        const wstore = new PostgresRunStore({ url: wurl });
        const config = readFlowFile(join(root, 'test', 'pg', 'fixtures', 'chain.json')) as { nodes: { params: Record<string, unknown> }[] };
        config.nodes[0]!.params = { steps: 3, delayMs: 20 };
        const queue = new RunQueue(wstore);
        const refs = Array.from({ length: 200 }, (_, i) => ({ sessionKey: 'bench', runId: `w${i}` }));
        const collected = documentCollector();
        await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [join(root, 'test', 'pg', 'fixtures', 'nodes.mjs')] }, config);
        // The workers start first and wait (as long-lived workers do); the runs are queued once every one listens, so
        // the measure is the workers' throughput, not how long processes take to start. Each worker reports its CPU
        // time (user + system, µs, its start included) on its last line of stderr as it exits.
        const workers = Array.from({ length: count }, () =>
          spawn(process.execPath, ['--import', REPORT_CPU, join(root, 'dist', 'cli', 'backpackflow.js'), 'worker', '--database-url', wurl, '--poll-ms', '50'], { stdio: ['ignore', 'pipe', 'pipe'] }),
        );
        const cpu = workers.map(
          (w) =>
            new Promise<number>((resolve) => {
              let err = '';
              w.stderr!.on('data', (d: Buffer) => (err += d.toString()));
              w.on('exit', () => resolve(Number(/cpu-us (\d+)\s*$/.exec(err)?.[1] ?? NaN)));
            }),
        );
        await Promise.all(
          workers.map(
            (w) =>
              new Promise<void>((resolve, reject) => {
                let out = '';
                w.stdout!.on('data', (d: Buffer) => {
                  out += d.toString();
                  if (out.includes('working on')) resolve();
                });
                w.on('exit', (code) => reject(new Error(`a worker exited (${code}) before it was ready: ${out}`)));
              }),
          ),
        );
        for (const ref of refs) await queue.enqueue(ref, 'start', {}, collected.documents);
        const sql = await wstore.sql();
        for (;;) {
          const [row] = await sql<{ done: string }[]>`select count(*) as done from backpackflow.queue where state = 'done'`;
          if (Number(row!.done) === 200) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        for (const w of workers) w.kill('SIGTERM');
        cpuPerRun[count] = (await Promise.all(cpu)).reduce((a, b) => a + b, 0) / 1000 / 200;
        const [span] = await sql<{ first: string; last: Date; done: string }[]>`
          select (select min((body::json->>'timestamp')::bigint) from backpackflow.event_lines where body like '{"v":1,"id":%"type":"run.started"%') as first,
                 (select max(finished_at) from backpackflow.queue) as last,
                 (select count(*) from backpackflow.queue where outcome = 'completed') as done`;
        if (Number(span!.done) !== 200) throw new Error(`${count} workers completed ${span!.done} of 200 runs`);
        throughput[count] = 200 / ((span!.last.getTime() - Number(span!.first)) / 1000);
        await wstore.close();
      }
      printTable('Workers: 200 queued runs of 3 I/O-bound steps (20 ms each), runs per second', [
        { name: '1 worker', median: throughput[1]!, unit: 'runs/s', anchor: `workers' CPU ${cpuPerRun[1]!.toFixed(1)} ms/run` },
        { name: '2 workers', median: throughput[2]!, unit: 'runs/s', anchor: `${(throughput[2]! / throughput[1]!).toFixed(2)}x one; workers' CPU ${cpuPerRun[2]!.toFixed(1)} ms/run` },
        { name: '4 workers: one worker\'s time per run / 4 workers\' (target >= 3x)', median: 3 / (throughput[4]! / throughput[1]!), unit: '(3 / speed-up)', target: 1, anchor: `${(throughput[4]! / throughput[1]!).toFixed(2)}x one; workers' CPU ${cpuPerRun[4]!.toFixed(1)} ms/run` },
      ]);
    }
  } finally {
    stop();
  }
}

await main();
