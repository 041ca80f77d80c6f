/**
 * `npm run bench:flow-memory [-- --mb 74]`: peak memory of `backpackflow validate` and `backpackflow run` on large
 * generated flow files (issue 13: a large flow should cost a few times its size, not 30), each in a fresh process.
 * Three shapes of about `--mb` megabytes: one node whose params hold many small records, one node whose params hold
 * long strings, and many small nodes (five of them run). The baseline row is a tiny flow: the process's own footprint,
 * which the last column takes off.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const mbArg = process.argv.indexOf('--mb');
const targetBytes = (mbArg > 0 ? Number(process.argv[mbArg + 1]) : 74) * 1e6;
const dir = mkdtempSync(join(tmpdir(), 'bpf-flow-memory-'));

/** A flow of `nodes` (ids n0, n1, ...) whose first few are chained: what runs is small, what is loaded is all. */
function flowOf(nodes: unknown[]): string {
  const edges = nodes.slice(1, 5).map((_, i) => ({ from: `n${i}`, to: `n${i + 1}` }));
  return JSON.stringify({ version: '2.0.0', namespace: 'big', nodes, edges });
}

/** A flow of about `targetBytes` whose one node packs `make(i)` for i = 0, 1, ... */
function oneNode(make: (i: number) => unknown, perItem: number): string {
  const count = Math.floor(targetBytes / perItem);
  return flowOf([{ type: 'Put', id: 'n0', params: { key: 'data', value: Array.from({ length: count }, (_, i) => make(i)) } }]);
}

const shapes: Record<string, () => string> = {
  baseline: () => flowOf([{ type: 'Put', id: 'n0', params: { key: 'k', value: 'v' } }]),
  records: () => oneNode((i) => ({ id: i, name: `row ${i}`, tags: ['a', 'b', 'c'], text: `lorem ipsum dolor sit amet ${i}` }), 98),
  strings: () => oneNode((i) => `lorem ipsum dolor sit amet, consectetur adipiscing elit ${i} `.repeat(20), 1240),
  nodes: () => flowOf(Array.from({ length: Math.floor(targetBytes / 75) }, (_, i) => ({ type: 'Put', id: `n${i}`, params: { key: `k${i % 50}`, value: `value ${i}` } }))),
};

function measure(command: string, file: string): { code: number; maxRssBytes: number } {
  const child = join(import.meta.dirname, 'flow-memory', 'child.ts');
  const result = spawnSync(process.execPath, ['--import', 'tsx', child, command, file, join(dir, `data-${command}`)], { encoding: 'utf8' });
  const last = result.stderr.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last) as { code: number; maxRssBytes: number };
  } catch {
    throw new Error(`${command} ${file} failed: ${result.stderr}`);
  }
}

const lines = [
  '### flow file memory (peak RSS of one CLI process)',
  '',
  '| flow | file | command | exit | peak RSS | (peak RSS - baseline) / file size |',
  '|---|---|---|---|---|---|',
];
const baseline = new Map<string, number>();
try {
  for (const [name, make] of Object.entries(shapes)) {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, make());
    const size = statSync(file).size;
    for (const command of ['validate', 'run']) {
      const { code, maxRssBytes } = measure(command, file);
      if (name === 'baseline') baseline.set(command, maxRssBytes);
      const ratio = name === 'baseline' ? '—' : `${((maxRssBytes - baseline.get(command)!) / size).toFixed(1)}x`;
      lines.push(`| ${name} | ${(size / 1e6).toFixed(1)} MB | ${command} | ${code} | ${(maxRssBytes / 1e6).toFixed(0)} MB | ${ratio} |`);
    }
    rmSync(file);
    rmSync(join(dir, 'data-run'), { recursive: true, force: true });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
lines.push('', `node ${process.version}, ${process.platform}/${process.arch}`);
console.log(lines.join('\n'));
