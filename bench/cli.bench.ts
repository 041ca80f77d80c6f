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
import { median, printTable, withoutNodeStartupSettings, type BenchRow } from './harness.js';

const bin = join(import.meta.dirname, '..', 'dist', 'cli', 'backpackflow.js');
if (!existsSync(bin)) {
  console.error('bench:cli times the built CLI: run `npm run build` first');
  process.exit(2);
}
const dataDir = mkdtempSync(join(tmpdir(), 'bf-bench-cli-'));
const commands: Record<string, string[]> = {
  'node -e 0 (Node start, for the ratio)': ['-e', '0'],
  'backpackflow --help': [bin, '--help'],
  'backpackflow runs list (empty data dir)': [bin, 'runs', 'list', '--data-dir', dataDir],
  'backpackflow validate --help': [bin, 'validate', '--help'],
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
  rmSync(dataDir, { recursive: true, force: true });
}
const base = median(times['node -e 0 (Node start, for the ratio)']!);
const rows: BenchRow[] = Object.entries(times).map(([name, t]) => {
  const ms = median(t);
  return { name, median: ms, unit: 'ms', ...(name === 'backpackflow --help' ? { target: 100 } : {}), anchor: `${(ms / base).toFixed(2)}x node -e 0` };
});
if (!printTable('backpackflow CLI as processes (npm run bench:cli)', rows)) process.exitCode = 1;
