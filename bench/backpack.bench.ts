/**
 * `npm run bench:backpack`: medians of the Backpack's hot operations against the targets of issue 3.
 * Every measured operation does its full work: a pack stores a frozen copy and records a commit; an unpack goes
 * through a node handle with registered permissions and records an `unpack` commit (recordReads, the default).
 */
import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Backpack } from '../src/backpack/index.js';
import { printTable, timeMedianMs, type BenchRow } from './harness.js';

const BATCH = 1000;
const KEYS = Array.from({ length: 100 }, (_, i) => `research.item${i}`);

/** Median microseconds per call of `op`, timed in batches of BATCH calls. */
async function perOpUs(op: (i: number) => unknown, runs = 60): Promise<number> {
  let i = 0;
  const ms = await timeMedianMs(() => {
    for (let n = 0; n < BATCH; n++) op(i++);
  }, runs, 10);
  return (ms * 1000) / BATCH;
}

function filled(commits: number): Backpack {
  const bp = new Backpack();
  const h = bp.forNode({ nodeId: 'writer', nodeName: 'Writer', namespace: 'sales.research' });
  for (let i = 0; i < commits; i++) h.pack(KEYS[i % KEYS.length]!, { step: i, text: `finding ${i}` });
  return bp;
}

const rows: BenchRow[] = [];

{
  const bp = new Backpack();
  const h = bp.forNode({ nodeId: 'writer', nodeName: 'Writer', namespace: 'sales.research' });
  rows.push({ name: 'pack (with history), small object', median: await perOpUs((i) => h.pack(KEYS[i % 100]!, { step: i, text: 'finding' })), unit: 'µs', target: 10 });
}

{
  const bp = filled(1000);
  const permissions = { read: ['research.*'], deny: ['pii.*'], namespaceRead: ['sales.**'] };
  const h = bp.registerNode({ nodeId: 'reader', nodeName: 'Reader', namespace: 'sales.summary', permissions }).handle;
  rows.push({ name: 'unpack (with access check)', median: await perOpUs((i) => h.unpack(KEYS[i % 100]!)), unit: 'µs', target: 5 });
}

// 200 commits, and 10,000 (a long run): the cost must not grow with the history.
for (const commits of [100, 9_900]) {
  const bp = filled(commits);
  const other = bp.forNode({ nodeId: 'other', nodeName: 'Other', namespace: 'support.chat' });
  for (let i = 0; i < 100; i++) other.pack(`chat.item${i}`, i);
  const h = bp.forNode({ nodeId: 'reader', nodeName: 'Reader', namespace: 'sales.summary' });
  let count = 0;
  const ms = await timeMedianMs(() => {
    count = Object.keys(h.unpackByNamespace('sales.*')).length;
  }, 500, 50);
  if (count !== 100) throw new Error(`unpackByNamespace returned ${count} items, expected 100`);
  rows.push({ name: `unpackByNamespace, 100 items (of 200 keys) at ${(commits + 100).toLocaleString('en')} commits`, median: ms * 1000, unit: 'µs', target: 50 });
}

for (const commits of [1000, 10_000]) {
  const bp = filled(commits);
  const history = bp.getHistory();
  const stamps = history.map((c) => c.timestamp);
  let i = 0;
  const ms = await timeMedianMs(() => bp.getSnapshot(stamps[(i++ * 7919) % stamps.length]!), 300, 30);
  rows.push({ name: `getSnapshot at ${commits.toLocaleString('en')} commits (100 keys)`, median: ms, unit: 'ms', target: 0.5 });
  const ids = history.map((c) => c.commitId);
  const msCommit = await timeMedianMs(() => bp.getSnapshotAtCommit(ids[(i++ * 7919) % ids.length]!), 300, 30);
  rows.push({ name: `getSnapshotAtCommit at ${commits.toLocaleString('en')} commits`, median: msCommit, unit: 'ms' });
}

{
  // PRD-001 SC-5: the Backpack work of a typical node execution (5 reads, 3 writes) on a full 10,000-commit history.
  const bp = filled(10_000);
  const binding = bp.registerNode({ nodeId: 'node', nodeName: 'Node', namespace: 'sales.node', permissions: { read: ['research.*'], write: ['out.*'] } });
  let run = 0;
  const ms = await timeMedianMs(() => {
    const h = binding.withContext({ runId: 'r', spanId: `s${run++}` });
    for (let i = 0; i < 5; i++) h.unpack(KEYS[i]!);
    for (let i = 0; i < 3; i++) h.pack(`out.${i}`, { answer: i, text: 'summary' });
  }, 500, 50);
  rows.push({ name: 'node execution: 5 unpacks + 3 packs (SC-5)', median: ms * 1000, unit: 'µs', target: 5000 });
}

{
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const measure = (keys: number): number => {
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    const bp = new Backpack();
    const h = bp.forNode({ nodeId: 'writer', nodeName: 'Writer', namespace: 'sales.research' });
    // 1 KB of JSON per value: a distinct 980-character string plus a number.
    for (let i = 0; i < 10_000; i++) h.pack(`k${i % keys}`, { id: i, text: randomBytes(490).toString('hex') });
    gc();
    gc();
    const bytes = process.memoryUsage().heapUsed - before;
    if (bp.headSeq !== 10_000) throw new Error('expected 10,000 commits');
    return bytes / (1024 * 1024);
  };
  rows.push({ name: 'heap for 10,000 commits of 1 KB values (100 keys)', median: measure(100), unit: 'MB', target: 12, anchor: 'values alone: ~10.1 MB' });
  rows.push({ name: 'heap for 10,000 commits of 1 KB values (10,000 keys)', median: measure(10_000), unit: 'MB', anchor: 'informational' });
}

const ok = printTable('Backpack (npm run bench:backpack)', rows);
if (!ok) process.exitCode = 1;
