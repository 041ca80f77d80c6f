/**
 * Durable-run measures for `npm run bench:store` (issues 6, 13 and 15): the per-step overhead of runFlow over
 * flow.run for each durability, on a flow that appends 200 bytes to a list per step (runs of 50 steps, the list
 * reaching 10 KB, and of 1,000 steps, reaching 200 KB: the overhead must be flat in the state's size) and on one
 * that packs a counter; bytes on disk after 400 list steps.
 *
 * Every build compared (this one, this one without hashing and redaction, an unedited copy of this one, and
 * optionally a git ref; each compiled as the package is, see builds.ts) runs every case in turn, run by run (A B C, then B C A, then C A B, ...), so
 * that a drift of the machine's speed, or one run's disk writes delaying the next run's fsyncs, affects all of them
 * alike; the comparisons are reported as
 * differences and ratios of those interleaved medians.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as current from '../src/index.js';
import type { Build } from './builds.js';
import { median, type BenchRow } from './harness.js';

/**
 * This working tree's source as tsx runs it: for what is not timed (bench:cli records runs with it). The timed rows
 * compare compiled builds (see builds.ts).
 */
export const CURRENT: Build = { name: 'this build (source)', api: current };

type Api = Build['api'];
type AnyFlow = InstanceType<Api['Flow']>;
type Shape = 'count' | 'list';

/** The two flows of the rows, built on `api`'s own classes (bench:cli records runs of the counting one). */
export function flowsOf(api: Api): Record<Shape, (steps: number) => AnyFlow> {
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
    count: build((flow, steps) => flow.addNode(Count, { id: 'n', steps })),
    list: build((flow, steps) => flow.addNode(Append, { id: 'n', steps })),
  };
}

function bytesUnder(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const path = join(dir, e.name);
    return sum + (e.isDirectory() ? bytesUnder(path) : statSync(path).size);
  }, 0);
}

type Mode = 'plain' | 'batch' | 'never';

/** What one durable step costs the disk at least: appending its bytes (~1.5 KB) to a file and one fdatasync. */
function bareSyncs(dir: string, steps: number): void {
  const fd = openSync(join(dir, 'bare-sync'), 'a');
  const line = Buffer.from(`${'x'.repeat(1500)}\n`);
  try {
    for (let i = 0; i < steps; i++) {
      writeSync(fd, line);
      fdatasyncSync(fd);
    }
  } finally {
    closeSync(fd);
    rmSync(join(dir, 'bare-sync'));
  }
}

/**
 * What creating a file costs in `dir` (µs, median of 200: create, close, unlink). A durable run creates a few files
 * (its directory, lock, log, batch marker, projection) and one per keyframe, so where this is hundreds of µs
 * short runs pay it per step: the row puts the 'never' rows in context. (Measured on one VM here, whose kernel pages
 * out cold memory: 460-790 µs in /tmp, 11-22 µs in a fresh directory of the same disk.)
 */
function createCost(dir: string): number {
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const path = join(dir, `create-${i}`);
    const start = performance.now();
    closeSync(openSync(path, 'wx'));
    times.push((performance.now() - start) * 1000);
    rmSync(path);
  }
  return median(times);
}

/** Per-step µs of one build and mode, run by run: wall time and process CPU time. */
interface Timing {
  wall: number[];
  cpu: number[];
}

/**
 * Per-step µs of each shape × steps × mode for each build, `runs` runs each (after 2 warm-up runs), with builds and
 * modes interleaved run by run (see the module comment).
 */
async function measure(builds: Build[], shape: Shape, steps: number, runs: number, dir: string): Promise<Map<string, Timing>> {
  const flows = builds.map((b) => flowsOf(b.api));
  const times = new Map<string, Timing>();
  const modes: Mode[] = ['plain', 'batch', 'never'];
  for (let i = 0; i < runs + 2; i++) {
    // In every turn, the disk's own cost of a step (see bareSyncs), measured between the runs it is compared with.
    const syncStart = performance.now();
    bareSyncs(dir, Math.min(steps, 200));
    if (i >= 2) {
      const timing = times.get('sync') ?? { wall: [], cpu: [] };
      timing.wall.push(((performance.now() - syncStart) * 1000) / Math.min(steps, 200));
      times.set('sync', timing);
    }
    for (const mode of i % 2 === 0 ? modes : [...modes].reverse()) {
      // Builds take turns at every position (first, after the sync, ..., last): the order rotates by one each turn.
      const order = builds.map((_, b) => (b + i) % builds.length);
      for (const b of order) {
        const flow = flows[b]![shape](steps);
        // The 'batch' runs of a turn start on a clean disk: the pages the 'never' runs left dirty would otherwise be
        // written by the first fdatasync of whichever build runs first (ext4's ordered mode), charging it for them.
        if (mode === 'batch' && b === order[0]) execFileSync('sync');
        const usage = process.cpuUsage();
        const start = performance.now();
        if (mode === 'plain') await flow.run();
        else await builds[b]!.api.runFlow(flow, { dataDir: dir, runId: `${shape}-${steps}-${mode}-${b}-${i}`, durability: mode });
        const us = ((performance.now() - start) * 1000) / steps;
        const used = process.cpuUsage(usage);
        if (i < 2) continue;
        const timing = times.get(`${b}|${mode}`) ?? { wall: [], cpu: [] };
        timing.wall.push(us);
        // CPU time of the process (user + system, all threads; waiting for fsync is not CPU time).
        timing.cpu.push((used.user + used.system) / steps);
        times.set(`${b}|${mode}`, timing);
      }
    }
  }
  return times;
}

/**
 * The per-step cost of steps in the middle of a run whose state is already large: runs of `short` and of `long` steps
 * that start from a list of `items` entries (200 bytes each), the difference of their times divided by the difference
 * of their lengths. What a run pays once (its files, the keyframe of its first state, loading the input) cancels
 * out; what every step pays stays, keyframes taken as the log grows included. Returns, per build and mode, that
 * marginal µs per step of each run, builds and modes interleaved run by run as in {@link measure}.
 */
async function measureMarginal(builds: Build[], items: number, runs: number, dir: string): Promise<Map<string, number[]>> {
  const short = 150;
  const long = 450;
  const input = { log: Array.from({ length: items }, (_, i) => `${i} ${'x'.repeat(190)}`) };
  const flows = builds.map((b) => flowsOf(b.api));
  const out = new Map<string, number[]>();
  const modes: Mode[] = ['plain', 'batch', 'never'];
  for (let i = 0; i < runs + 1; i++) {
    for (const mode of i % 2 === 0 ? modes : [...modes].reverse()) {
      const order = builds.map((_, b) => (b + i) % builds.length);
      for (const b of order) {
        const time = async (steps: number): Promise<number> => {
          // The list flow runs until the list holds `steps` entries more than the input's.
          const flow = flows[b]!.list(items + steps);
          if (mode === 'batch' && b === order[0] && steps === short) execFileSync('sync');
          const start = performance.now();
          if (mode === 'plain') await flow.run(input);
          else await builds[b]!.api.runFlow(flow, { dataDir: dir, runId: `marginal-${items}-${mode}-${b}-${i}-${steps}`, durability: mode, input });
          return performance.now() - start;
        };
        const a = await time(short);
        const z = await time(long);
        if (i === 0) continue;
        const series = out.get(`${b}|${mode}`) ?? [];
        series.push(((z - a) * 1000) / (long - short));
        out.set(`${b}|${mode}`, series);
      }
    }
  }
  return out;
}

/** Median over runs of the marginal per-step overhead of `mode` over a plain run (see {@link measureMarginal}). */
function marginalOverhead(times: Map<string, number[]>, build: number, mode: 'batch' | 'never'): number[] {
  const plain = times.get(`${build}|plain`)!;
  return times.get(`${build}|${mode}`)!.map((t, i) => t - plain[i]!);
}

/**
 * A measured case. Every figure is a median over runs of a difference taken within one run (the mode's time minus
 * the plain time of the same build in the same turn, and this build's minus another's), so that the turns pair what
 * is compared.
 */
class Case {
  constructor(
    readonly label: string,
    private readonly times: Map<string, Timing>,
  ) {}

  private series(build: number, mode: Exclude<Mode, 'plain'>, kind: keyof Timing): number[] {
    const runs = this.times.get(`${build}|${mode}`)![kind];
    const plain = this.times.get(`${build}|plain`)![kind];
    return runs.map((t, i) => t - plain[i]!);
  }

  /** Per-step overhead of `mode` over a plain run, in µs (wall, or process CPU time). */
  overhead(build: number, mode: Exclude<Mode, 'plain'>, kind: keyof Timing = 'wall'): number {
    return median(this.series(build, mode, kind));
  }

  /** Median over runs of build `a`'s overhead minus build `b`'s, in µs. */
  extra(a: number, b: number, mode: Exclude<Mode, 'plain'>, kind: keyof Timing): number {
    const other = this.series(b, mode, kind);
    return median(this.series(a, mode, kind).map((t, i) => t - other[i]!));
  }

  /** Median over runs of build `a`'s overhead divided by build `b`'s. */
  ratio(a: number, b: number, mode: Exclude<Mode, 'plain'>, kind: keyof Timing): number {
    const other = this.series(b, mode, kind);
    return median(this.series(a, mode, kind).map((t, i) => t / other[i]!));
  }

  /** Per-step time of a plain run, in µs. */
  plain(build: number): number {
    return median(this.times.get(`${build}|plain`)!.wall);
  }

  /** Median over runs of the 'batch' overhead divided by the disk's cost of a step (see bareSyncs) in the same turn. */
  batchOverSync(build: number): { ratio: number; sync: number } {
    const sync = this.times.get('sync')!.wall;
    return { ratio: median(this.series(build, 'batch', 'wall').map((t, i) => t / sync[i]!)), sync: median(sync) };
  }
}

/**
 * Measures and returns the rows. `builds[0]` must be this build, `builds[1]` a copy of it without hashing and
 * redaction and `builds[2]` an unedited copy of it, made and loaded as `builds[1]` is: the cost of hashing and
 * redaction is the difference between the two copies, and this build's difference to its copy (the control, printed
 * beside it) shows the measurement's own error. Further builds (a git ref) get a row comparing their overheads with
 * this build's.
 */
export async function runtimeRows(builds: Build[]): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-bench-runtime-'));
  try {
    // Short runs: their medians are taken over enough runs to span the disk's periodic journal commits. The
    // 'batch' differences between builds swing by ±10 µs per step from one invocation to the next (9 runs of 1,000
    // steps gave -6 to +28 µs where 'never' gave 1-7 µs): hence 25 and 121 runs.
    const list50 = new Case('50-step runs, list growing to 10 KB', await measure(builds, 'list', 50, 120, dir));
    const list1000 = new Case('1,000-step runs, list growing to 200 KB', await measure(builds, 'list', 1000, 24, dir));
    const count = new Case('1,000-step runs, one small pack each', await measure(builds, 'count', 1000, 24, dir));
    // What a short run pays once (the writer's lock, files and folders, the projection at its close): what a CLI run or
    // a run per request feels, and what the 50-step rows above spread over their steps.
    const single = new Case('1-step runs (what a run costs once: open, one step, close)', await measure(builds, 'count', 1, 200, dir));
    // Steady state with a small and a large state: runs that start from a list of 50 entries (10 KB) and of 4,000
    // (800 KB). The rows above compare runs of different lengths, whose fixed costs differ; these compare steps alone.
    const small = await measureMarginal(builds, 50, 12, dir);
    const large = await measureMarginal(builds, 4000, 12, dir);
    await builds[0]!.api.runFlow(flowsOf(builds[0]!.api).list(400), { dataDir: dir, runId: 'disk-400' });
    const bytes = bytesUnder(join(dir, 'sessions', 'default', 'runs', 'disk-400'));
    const rows: BenchRow[] = [{ name: "creating a file in the runs' data directory (os.tmpdir(); context for the 'never' rows)", median: createCost(dir), unit: 'µs' }];
    for (const c of [list50, list1000, count]) {
      rows.push({ name: `flow.run per step (no durability): ${c.label}`, median: c.plain(0), unit: 'µs' });
      rows.push({ name: `runFlow per-step overhead, 'batch' (fsync per step): ${c.label}`, median: c.overhead(0, 'batch'), unit: 'µs', target: 350, anchor: 'LangGraph.js +600-1,100 µs' });
      const over = c.batchOverSync(0);
      rows.push({
        name: `'batch' overhead / the disk's own cost of a step (append 1.5 KB + fdatasync, ${over.sync.toFixed(0)} µs in the same turns): ${c.label}`,
        median: over.ratio,
        unit: 'x',
        target: 350 / 275,
        anchor: 'issue 15: 350 µs where one fdatasync is 275 µs',
      });
      rows.push({ name: `runFlow per-step overhead, 'never': ${c.label}`, median: c.overhead(0, 'never'), unit: 'µs', target: 30 });
      rows.push({ name: `runFlow per-step overhead, 'never', process CPU time: ${c.label}`, median: c.overhead(0, 'never', 'cpu'), unit: 'µs', target: 30 });
    }
    for (const mode of ['batch', 'never'] as const) {
      rows.push({ name: `runFlow overhead of a whole run, '${mode}': ${single.label}`, median: single.overhead(0, mode), unit: 'µs' });
    }
    for (const mode of ['batch', 'never'] as const) {
      rows.push({
        name: `flat in state size: '${mode}' overhead at 1,000 steps (200 KB) / at 50 steps (10 KB)`,
        median: list1000.overhead(0, mode) / list50.overhead(0, mode),
        unit: 'x',
        target: 1.25,
      });
    }
    rows.push({
      name: "flat in state size: 'never' overhead, process CPU time, at 1,000 steps (200 KB) / at 50 steps (10 KB)",
      median: list1000.overhead(0, 'never', 'cpu') / list50.overhead(0, 'never', 'cpu'),
      unit: 'x',
      target: 1.25,
    });
    for (const mode of ['batch', 'never'] as const) {
      const at10 = marginalOverhead(small, 0, mode);
      const at800 = marginalOverhead(large, 0, mode);
      rows.push({ name: `runFlow per-step overhead, '${mode}', steady state (steps 150-450 of a run): state 10 KB`, median: median(at10), unit: 'µs' });
      rows.push({ name: `runFlow per-step overhead, '${mode}', steady state (steps 150-450 of a run): state 800 KB`, median: median(at800), unit: 'µs' });
      rows.push({
        name: `flat in state size, steady state: '${mode}' overhead with 800 KB of state / with 10 KB`,
        median: median(at800.map((t, i) => t / at10[i]!)),
        unit: 'x',
        target: 1.25,
      });
      for (let b = 3; b < builds.length; b++) {
        rows.push({ name: `${builds[b]!.name} per-step overhead, '${mode}', steady state: state 800 KB`, median: median(marginalOverhead(large, b, mode)), unit: 'µs' });
      }
    }
    rows.push({ name: 'bytes on disk after 400 steps appending 200 bytes each', median: bytes / 1e6, unit: 'MB', target: 2, anchor: 'LangGraph SqliteSaver 20.9 MB' });
    for (const c of [count, list50, list1000]) {
      for (const mode of ['batch', 'never'] as const) {
        rows.push({
          name: `hashing + redaction: extra per-step CPU time over ${builds[1]!.name}, '${mode}': ${c.label}`,
          median: c.extra(2, 1, mode, 'cpu'),
          unit: 'µs',
          target: 10,
          anchor: `process CPU time; overhead ratio ${c.ratio(2, 1, mode, 'cpu').toFixed(2)}x; control: this build differs from its copy by ${c.extra(0, 2, mode, 'cpu').toFixed(1)} µs`,
        });
        rows.push({
          name: `hashing + redaction: extra per-step wall time over ${builds[1]!.name}, '${mode}': ${c.label}`,
          median: c.extra(2, 1, mode, 'wall'),
          unit: 'µs',
          anchor: `overhead ratio ${c.ratio(2, 1, mode, 'wall').toFixed(2)}x; wall time also carries fsync and other processes; control: ${c.extra(0, 2, mode, 'wall').toFixed(1)} µs`,
        });
      }
    }
    for (let b = 3; b < builds.length; b++) {
      for (const c of [count, list50, list1000, single]) {
        for (const mode of ['batch', 'never'] as const) {
          rows.push({
            name: `${builds[b]!.name} per-step overhead, '${mode}': ${c.label}`,
            median: c.overhead(b, mode),
            unit: 'µs',
            anchor: `this build / it, wall: ${c.ratio(0, b, mode, 'wall').toFixed(2)}x, CPU: ${c.ratio(0, b, mode, 'cpu').toFixed(2)}x`,
          });
        }
      }
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
