/**
 * Durable-run measures for `npm run bench:store` (issues 6 and 13): per-step overhead of runFlow over flow.run for
 * each durability, bytes on disk after 400 steps that each append 200 bytes to a list, and, when a baseline build
 * is given, the same overheads of that build measured interleaved with this one (run by run, A B A B ...), so that
 * the cost of chain hashes and the wider redaction is this build's overhead minus the baseline's.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as current from '../src/index.js';
import { median, type BenchRow } from './harness.js';

/** What the rows need of a build of the library (this one, or a baseline checkout of an earlier commit). */
export interface Build {
  name: string;
  api: Pick<typeof current, 'BackpackNode' | 'Flow' | 'runFlow'>;
}

/** This build. */
export const CURRENT: Build = { name: 'this build', api: current };

type Api = Build['api'];
type AnyFlow = InstanceType<Api['Flow']>;

/** The two flows of the rows, built on `api`'s own classes. */
function flowsOf(api: Api): { countFlow: (steps: number) => AnyFlow; loopFlow: (steps: number) => AnyFlow } {
  type Handle = Parameters<current.BackpackNode['post']>[0];
  /** One small pack per step (a counter): the steady-state cost of durability itself. */
  class Count extends api.BackpackNode<number, number> {
    override prep(backpack: Handle): number {
      return (backpack.unpack('count') as number | undefined) ?? 0;
    }
    override exec(count: number): number {
      return count + 1;
    }
    override post(backpack: Handle, _prev: number, next: number): string | undefined {
      backpack.pack('count', next);
      return next < (this.config.steps as number) ? 'again' : undefined;
    }
  }
  /** Appends 200 bytes to a list per step. */
  class Append extends api.BackpackNode<string[], string[]> {
    override prep(backpack: Handle): string[] {
      return (backpack.unpack('log') as string[] | undefined) ?? [];
    }
    override exec(log: string[]): string[] {
      return [...log, `${log.length} ${'x'.repeat(190)}`];
    }
    override post(backpack: Handle, _prev: string[], next: string[]): string | undefined {
      backpack.pack('log', next);
      return next.length < (this.config.steps as number) ? 'again' : undefined;
    }
  }
  const build = (add: (flow: AnyFlow, steps: number) => current.BackpackNode) => (steps: number) => {
    const flow = new api.Flow({ namespace: 'bench', maxSteps: steps + 1 });
    const added = add(flow, steps);
    added.on('again', added);
    return flow;
  };
  return {
    countFlow: build((flow, steps) => flow.addNode(Count, { id: 'n', steps })),
    loopFlow: build((flow, steps) => flow.addNode(Append, { id: 'n', steps })),
  };
}

function bytesUnder(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const path = join(dir, e.name);
    return sum + (e.isDirectory() ? bytesUnder(path) : statSync(path).size);
  }, 0);
}

/** One measured configuration: a flow of `steps` steps, run plainly or durably with a durability. */
interface Case {
  key: string;
  steps: number;
  flow: 'count' | 'loop';
  durability: 'plain' | 'batch' | 'never';
}

/**
 * Per-step milliseconds of each case for each build, medians over `runs` runs (after 2 warm-up runs). The builds and
 * cases take turns run by run (the builds' order flips every run), so that a drift of the machine's speed, or one
 * run's disk writes delaying the next run's fsyncs, affects all of them alike.
 */
async function perStepMs(builds: Build[], cases: Case[], runs: number, dir: string): Promise<Map<string, number>> {
  const flows = builds.map((b) => flowsOf(b.api));
  const times = new Map<string, number[]>();
  const record = (key: string, ms: number): void => void times.set(key, [...(times.get(key) ?? []), ms]);
  for (let i = 0; i < runs + 2; i++) {
    for (const c of cases) {
      // Each build goes first every other run, so that neither always follows the other's writes.
      const order = i % 2 === 0 ? builds.map((_, b) => b) : builds.map((_, b) => builds.length - 1 - b);
      for (const b of order) {
        const flow = (c.flow === 'count' ? flows[b]!.countFlow : flows[b]!.loopFlow)(c.steps);
        const cpu = process.cpuUsage();
        const start = performance.now();
        if (c.durability === 'plain') await flow.run();
        else await builds[b]!.api.runFlow(flow, { dataDir: dir, runId: `${c.key}-${b}-${i}`, durability: c.durability });
        const ms = (performance.now() - start) / c.steps;
        const used = process.cpuUsage(cpu);
        if (i < 2) continue;
        record(`${builds[b]!.name}|${c.key}`, ms);
        // CPU time of the process (user + system, all threads; waiting for fsync is not CPU time).
        record(`${builds[b]!.name}|${c.key}|cpu`, (used.user + used.system) / 1000 / c.steps);
      }
    }
  }
  return new Map([...times].map(([key, list]) => [key, median(list)]));
}

/** Measures and returns the rows; with a `baseline`, also its overheads and this build's extra cost per step. */
export async function runtimeRows(baseline?: Build): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-bench-runtime-'));
  try {
    const builds = baseline ? [CURRENT, baseline] : [CURRENT];
    // Short runs: their medians are taken over enough runs to span the disk's periodic journal commits.
    const loop = await perStepMs(
      builds,
      (['plain', 'batch', 'never'] as const).map((durability) => ({ key: `loop-${durability}`, steps: 200, flow: 'loop', durability })),
      21,
      dir,
    );
    const count = await perStepMs(
      builds,
      (['plain', 'batch', 'never'] as const).map((durability) => ({ key: `count-${durability}`, steps: 1000, flow: 'count', durability })),
      baseline ? 15 : 5,
      dir,
    );
    const overhead = (times: Map<string, number>, build: Build, flow: string, durability: string, cpu = ''): number =>
      (times.get(`${build.name}|${flow}-${durability}${cpu}`)! - times.get(`${build.name}|${flow}-plain${cpu}`)!) * 1000;
    await CURRENT.api.runFlow(flowsOf(CURRENT.api).loopFlow(400), { dataDir: dir, runId: 'disk-400' });
    const bytes = bytesUnder(join(dir, 'sessions', 'default', 'runs', 'disk-400'));
    const rows: BenchRow[] = [
      { name: "runFlow per-step overhead, 'batch' (fsync per step): 1,000 steps, one small pack each", median: overhead(count, CURRENT, 'count', 'batch'), unit: 'µs', target: 400, anchor: 'LangGraph.js +600-1,100 µs' },
      { name: "runFlow per-step overhead, 'never': 1,000 steps, one small pack each", median: overhead(count, CURRENT, 'count', 'never'), unit: 'µs', target: 50 },
      { name: "runFlow per-step overhead, 'batch': 200-step runs appending to a list growing to 40 KB", median: overhead(loop, CURRENT, 'loop', 'batch'), unit: 'µs', target: 400, anchor: 'LangGraph.js +600-1,100 µs' },
      { name: "runFlow per-step overhead, 'never': 200-step runs appending to a list growing to 40 KB", median: overhead(loop, CURRENT, 'loop', 'never'), unit: 'µs', target: 50 },
      { name: 'bytes on disk after 400 steps appending 200 bytes each', median: bytes / 1e6, unit: 'MB', target: 2, anchor: 'LangGraph SqliteSaver 20.9 MB' },
    ];
    if (baseline) {
      for (const [times, flow, label] of [
        [count, 'count', '1,000 steps, one small pack each'],
        [loop, 'loop', '200-step runs, list growing to 40 KB'],
      ] as const) {
        for (const durability of ['batch', 'never'] as const) {
          const theirs = overhead(times, baseline, flow, durability);
          rows.push({ name: `baseline (${baseline.name}) per-step overhead, '${durability}': ${label}`, median: theirs, unit: 'µs' });
          rows.push({
            name: `chain hashes + wider redaction: extra per-step CPU time over the baseline, '${durability}': ${label}`,
            median: overhead(times, CURRENT, flow, durability, '|cpu') - overhead(times, baseline, flow, durability, '|cpu'),
            unit: 'µs',
            target: 10,
            anchor: 'process CPU time, interleaved run by run with the baseline build',
          });
          rows.push({
            name: `chain hashes + wider redaction: extra per-step wall time over the baseline, '${durability}': ${label}`,
            median: overhead(times, CURRENT, flow, durability) - theirs,
            unit: 'µs',
            anchor: 'wall time: on a shared machine it also carries the noise of fsync and of other processes',
          });
        }
      }
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
