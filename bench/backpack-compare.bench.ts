/**
 * `npm run bench:backpack:compare -- <baseline checkout>`: the Backpack's hot operations in this checkout against
 * another checkout of the repository (for example a `git worktree` of the commit before a change), interleaved in
 * one process: each round times every row on both builds, alternating which goes first, and the table reports
 * the medians over rounds and their ratio (this / baseline). Absolute times drift on shared machines; the ratio
 * of interleaved runs does not.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median, timeMedianMs } from './harness.js';

interface Handle {
  pack(key: string, value: unknown): void;
  unpack(key: string): unknown;
  unpackByNamespace(pattern: string): Record<string, unknown>;
}
interface AnyBackpack {
  forNode(identity: { nodeId: string; nodeName: string; namespace: string }): Handle;
  getHistory(): { timestamp: number }[];
  getSnapshot(timestamp: number): unknown;
  registerNode?(node: { nodeId: string; nodeName: string; namespace: string; permissions?: unknown }): { handle: Handle };
  registerPermissions(nodeId: string, permissions: unknown): void;
}
type BackpackClass = new () => AnyBackpack;

const baselineDir = process.argv[2];
if (!baselineDir) {
  console.error('usage: npm run bench:backpack:compare -- <path to a baseline checkout of this repository>');
  process.exit(2);
}
const load = async (dir: string): Promise<BackpackClass> =>
  ((await import(pathToFileURL(resolve(dir, 'src/backpack/index.ts')).href)) as { Backpack: BackpackClass }).Backpack;
const builds = { this: await load('.'), baseline: await load(baselineDir) };

const KEYS = Array.from({ length: 100 }, (_, i) => `research.item${i}`);
const BATCH = 1000;
const PERMISSIONS = { read: ['research.*'], deny: ['pii.*'], namespaceRead: ['sales.**'] };

/** A node handle with rules, through whichever API the build has. */
function reader(bp: AnyBackpack): Handle {
  const identity = { nodeId: 'reader', nodeName: 'Reader', namespace: 'sales.summary' };
  if (bp.registerNode) return bp.registerNode({ ...identity, permissions: PERMISSIONS }).handle;
  bp.registerPermissions('reader', PERMISSIONS);
  return bp.forNode(identity);
}

function filled(B: BackpackClass, commits: number): AnyBackpack {
  const bp = new B();
  const h = bp.forNode({ nodeId: 'writer', nodeName: 'Writer', namespace: 'sales.research' });
  for (let i = 0; i < commits; i++) h.pack(KEYS[i % KEYS.length]!, { step: i, text: `finding ${i}` });
  return bp;
}

/** Each row: a setup per build returning the operation to time (µs per call, in batches of BATCH). */
const rows: { name: string; setup: (B: BackpackClass) => () => void; perCall: number }[] = [
  {
    name: 'pack (with history), small object',
    perCall: BATCH,
    setup: (B) => {
      const h = new B().forNode({ nodeId: 'writer', nodeName: 'Writer', namespace: 'sales.research' });
      let i = 0;
      return () => { for (let n = 0; n < BATCH; n++, i++) h.pack(KEYS[i % 100]!, { step: i, text: 'finding' }); };
    },
  },
  {
    name: 'unpack (with access check)',
    perCall: BATCH,
    setup: (B) => {
      const h = reader(filled(B, 1000));
      let i = 0;
      return () => { for (let n = 0; n < BATCH; n++, i++) h.unpack(KEYS[i % 100]!); };
    },
  },
  {
    name: 'unpackByNamespace, 100 keys, at 10k commits',
    perCall: 1,
    setup: (B) => {
      const h = reader(filled(B, 10_000));
      return () => { if (Object.keys(h.unpackByNamespace('sales.*')).length !== 100) throw new Error('expected 100 items'); };
    },
  },
  ...[1000, 10_000].map((commits) => ({
    name: `getSnapshot at ${commits.toLocaleString('en')} commits`,
    perCall: 1,
    setup: (B: BackpackClass) => {
      const bp = filled(B, commits);
      const stamps = bp.getHistory().map((c) => c.timestamp);
      let i = 0;
      return () => void bp.getSnapshot(stamps[(i++ * 7919) % stamps.length]!);
    },
  })),
];

const ROUNDS = 15;
const lines = ['### Backpack, this checkout vs baseline (interleaved)', '', `baseline: ${baselineDir}`, '', '| measure | this (µs) | baseline (µs) | this / baseline |', '|---|---|---|---|'];
for (const row of rows) {
  const ops = { this: row.setup(builds.this), baseline: row.setup(builds.baseline) };
  const samples: Record<'this' | 'baseline', number[]> = { this: [], baseline: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? (['this', 'baseline'] as const) : (['baseline', 'this'] as const);
    for (const which of order) samples[which].push(((await timeMedianMs(ops[which], row.perCall === 1 ? 40 : 8, 3)) * 1000) / row.perCall);
  }
  const a = median(samples.this);
  const b = median(samples.baseline);
  lines.push(`| ${row.name} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(a / b).toFixed(2)}x |`);
}
lines.push('', `node ${process.version}, ${process.platform}/${process.arch}, ${ROUNDS} rounds`);
console.log(lines.join('\n'));
