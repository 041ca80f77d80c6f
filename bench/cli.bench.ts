/**
 * `npm run bench:cli`: the built `backpackflow` CLI as whole processes (what a user waits for), interleaved with a
 * bare `node -e 0` so the ratio holds on a noisy machine. Needs `npm run build` first. Target (issue 15): `--help` at
 * most 100 ms; each command loads only the modules it uses. Every process runs without NODE_OPTIONS and
 * NODE_EXTRA_CA_CERTS (see withoutNodeStartupSettings), as bench:context runs them; where this machine sets them, a
 * row shows `node -e 0` with them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFlow } from '../src/index.js';
import { CURRENT, flowsOf } from './runtime-rows.js';
import { median, printTable, withoutNodeStartupSettings, type BenchRow } from './harness.js';

const bin = join(import.meta.dirname, '..', 'dist', 'cli', 'backpackflow.js');
if (!existsSync(bin)) {
  console.error('bench:cli times the built CLI: run `npm run build` first');
  process.exit(2);
}
const dataDir = mkdtempSync(join(tmpdir(), 'bf-bench-cli-'));

/** A run of `steps` steps that packs a counter (8 events a step; runtime-rows.ts), recorded in `dir` as `runId`. */
async function countingRun(dir: string, runId: string, steps: number): Promise<void> {
  await runFlow(flowsOf(CURRENT.api).count(steps), { dataDir: dir, runId, durability: 'never' });
}

// Stored runs to inspect: 500 short ones in one session (a listing), and a short and a long run (an inspection of
// one run must cost the same whatever the run's length: `runs state` and `runs diff` read a keyframe and the events
// after it, `runs events` a page and the log's end).
const runsDir = mkdtempSync(join(tmpdir(), 'bf-bench-cli-runs-'));
const longDir = mkdtempSync(join(tmpdir(), 'bf-bench-cli-long-'));
for (let i = 0; i < 500; i++) await countingRun(runsDir, `r${i}`, 3);
await countingRun(longDir, 'short', 200);
await countingRun(longDir, 'long', 20_000);
const STATE_SHORT = 'backpackflow runs state, 200-step run';
const STATE_LONG = 'backpackflow runs state, 20,000-step run';
const EVENTS_SHORT = 'backpackflow runs events (first page), 200-step run';
const EVENTS_LONG = 'backpackflow runs events (first page), 20,000-step run';
const commands: Record<string, string[]> = {
  'node -e 0 (Node start, for the ratio)': ['-e', '0'],
  'backpackflow --help': [bin, '--help'],
  'backpackflow runs list (empty data dir)': [bin, 'runs', 'list', '--data-dir', dataDir],
  'backpackflow validate --help': [bin, 'validate', '--help'],
  'backpackflow runs list, 500 runs': [bin, 'runs', 'list', '--data-dir', runsDir],
  [STATE_SHORT]: [bin, 'runs', 'state', 'short', '--data-dir', longDir],
  [STATE_LONG]: [bin, 'runs', 'state', 'long', '--data-dir', longDir],
  'backpackflow runs diff --from 100 --to 19000, 20,000-step run': [bin, 'runs', 'diff', 'long', '--from', '100', '--to', '19000', '--data-dir', longDir],
  [EVENTS_SHORT]: [bin, 'runs', 'events', 'short', '--data-dir', longDir],
  [EVENTS_LONG]: [bin, 'runs', 'events', 'long', '--data-dir', longDir],
  'backpackflow runs blame (reads every step), 20,000-step run': [bin, 'runs', 'blame', 'long', 'count', '--data-dir', longDir],
  'backpackflow runs show (the whole trace), 20,000-step run': [bin, 'runs', 'show', 'long', '--data-dir', longDir],
};
const machineEnv = process.env.NODE_OPTIONS !== undefined || process.env.NODE_EXTRA_CA_CERTS !== undefined;
const MACHINE_ROW = "not counted above: node -e 0 with this machine's NODE_OPTIONS / NODE_EXTRA_CA_CERTS";
if (machineEnv) commands[MACHINE_ROW] = ['-e', '0'];
const env = withoutNodeStartupSettings(process.env);
const RUNS = 15;
const times: Record<string, number[]> = Object.fromEntries(Object.keys(commands).map((k) => [k, []]));
try {
  for (let round = 0; round < RUNS + 1; round++) {
    for (const [name, args] of Object.entries(commands)) {
      const start = performance.now();
      const result = spawnSync(process.execPath, args, { stdio: 'ignore', env: name === MACHINE_ROW ? process.env : env });
      const ms = performance.now() - start;
      if (result.status !== 0) throw new Error(`${name} exited ${result.status}`);
      if (round > 0) times[name]!.push(ms); // round 0 warms the file cache
    }
  }
} finally {
  for (const dir of [dataDir, runsDir, longDir]) rmSync(dir, { recursive: true, force: true });
}
const base = median(times['node -e 0 (Node start, for the ratio)']!);
const rows: BenchRow[] = Object.entries(times).map(([name, t]) => {
  const ms = median(t);
  return { name, median: ms, unit: 'ms', ...(name === 'backpackflow --help' ? { target: 100 } : {}), anchor: `${(ms / base).toFixed(2)}x node -e 0` };
});
/** Median over rounds of `a`'s time over `b`'s in the same round (the rounds pair them on a drifting machine). */
function pairedRatio(a: string, b: string): number {
  return median(times[a]!.map((t, i) => t / times[b]![i]!));
}
rows.push(
  { name: 'runs state: 20,000-step run / 200-step run (flat in the run length)', median: pairedRatio(STATE_LONG, STATE_SHORT), unit: 'x', target: 1.25 },
  { name: 'runs events: 20,000-step run / 200-step run (flat in the run length)', median: pairedRatio(EVENTS_LONG, EVENTS_SHORT), unit: 'x', target: 1.25 },
);
if (!printTable('backpackflow CLI as processes (npm run bench:cli)', rows)) process.exitCode = 1;
