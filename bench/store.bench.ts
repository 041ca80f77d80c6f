/**
 * `npm run bench:store`: the storage layer's costs (medians).
 * - appends per durability mode, and the store's share of a flow step (5 events, then flush at the step boundary);
 * - readPage(100) at offsets 0, 500k, 999,900 and 999,999 of a 1M-event log, and at offsets that fall between its
 *   index entries (an entry every 1,000 events): must be flat in the offset, the index seeks;
 * - verify() of that 1M-event log (every chain hash recomputed);
 * - MemoryStore.search over 100k items;
 * - CheckpointStore.saveLatest of a 10 KB state;
 * - runFlow's per-step overhead (runtime-rows.ts), and (issue 13) the extra per-step cost of hashing and
 *   redaction: a copy of this build without them against an unedited copy (builds.ts), with this build against
 *   its copy as the control, measured interleaved in this one process. `BENCH_REF=<git ref>` adds that ref's build (e.g. main) to the comparison. `BENCH_ONLY=runtime` runs
 *   only the runFlow rows, `BENCH_ONLY=paging` only the 1M-event log rows.
 * Building the 1M-event log and the 100k-item memory is reported separately (not a target).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StreamEvent } from '../src/events/types.js';
import { CheckpointStore, EventStore, MemoryStore, runPaths, type Durability, type MemoryItem } from '../src/store/index.js';
import { median, printTable, timeMedianMs, type BenchRow } from './harness.js';
import { runPointRows } from './run-point-rows.js';
import { copyBuild, noIntegrityBuild, refBuild, thisBuild, type Build } from './builds.js';
import { runtimeRows } from './runtime-rows.js';

const root = mkdtempSync(join(tmpdir(), 'bpf-bench-store-'));
const rows: BenchRow[] = [];
const notes: string[] = [];

function event(runId: string, seq: number): StreamEvent {
  return {
    v: 1,
    id: `evt-${seq}`,
    seq,
    timestamp: 1_700_000_000_000 + seq,
    runId,
    sessionKey: 'bench',
    type: 'node.completed',
    namespace: 'agent.step',
    nodeId: `node-${seq % 17}`,
    payload: { action: 'default', durationMs: 3, note: 'a short payload like the engine emits' },
  };
}

async function appendCosts(): Promise<void> {
  for (const durability of ['never', 'batch', 'always'] as Durability[]) {
    const runId = `append-${durability}`;
    const store = new EventStore({ dataDir: root, sessionKey: 'bench', runId, durability });
    await store.open();
    let seq = 0;
    const count = durability === 'always' ? 300 : 20_000;
    const perAppend: number[] = [];
    for (let i = 0; i < count; i++) {
      const start = performance.now();
      await store.append(event(runId, seq++));
      perAppend.push(performance.now() - start);
    }
    rows.push({ name: `append, durability '${durability}' (per event)`, median: median(perAppend) * 1000, unit: 'µs' });
    if (durability !== 'always') {
      const steps: number[] = [];
      for (let s = 0; s < (durability === 'batch' ? 500 : 5000); s++) {
        const start = performance.now();
        for (let e = 0; e < 5; e++) await store.append(event(runId, seq++));
        await store.flush();
        steps.push(performance.now() - start);
      }
      rows.push({
        name: `store share of a step: 5 appends + flush, '${durability}'`,
        median: median(steps) * 1000,
        unit: 'µs',
        target: durability === 'batch' ? 400 : 50,
        anchor: durability === 'batch' ? 'runFlow target <= 400 µs per step (LangGraph.js +600-1,100 µs)' : 'runFlow target <= 50 µs per step',
      });
    }
    await store.close();
  }
}

async function pagingCosts(ref: Build | undefined): Promise<void> {
  const runId = 'paging';
  const paths = runPaths(root, 'bench', runId);
  const total = 1_000_000;
  // Written by the store itself, ten events per batch (a step's worth), so every batch carries its chain hash.
  const buildStart = performance.now();
  const writer = new EventStore({ dataDir: root, sessionKey: 'bench', runId, durability: 'never' });
  for (let seq = 0; seq < total; seq += 10) await writer.appendBatch(Array.from({ length: 10 }, (_, i) => event(runId, seq + i)));
  await writer.close();
  const writeMs = performance.now() - buildStart;
  notes.push(`1M-event log: ${(statSync(paths.events).size / 1e6).toFixed(0)} MB written by appendBatch (10 events each, 'never') in ${(writeMs / 1000).toFixed(1)} s`);
  const verifier = new EventStore({ dataDir: root, sessionKey: 'bench', runId });
  const verifyStart = performance.now();
  const report = await verifier.verify();
  const verifyMs = performance.now() - verifyStart;
  if (!report.ok || report.chain !== 'verified' || report.verifiedLines !== total) throw new Error(`verify of the 1M-event log failed: ${JSON.stringify(report).slice(0, 300)}`);
  rows.push({ name: 'EventStore.verify() of a 1M-event log (every chain hash recomputed, every line validated)', median: verifyMs, unit: 'ms', anchor: 'one run' });
  const reader = new EventStore({ dataDir: root, sessionKey: 'bench', runId });
  // The same reads by the ref's build (BENCH_REF), interleaved call by call with this build's, on the same log.
  const theirs = ref === undefined ? undefined : new ref.api.EventStore({ dataDir: root, sessionKey: 'bench', runId });
  const coldStart = performance.now();
  await reader.readPage(100, 0);
  notes.push(`first readPage of a fresh reader (loads the index): ${(performance.now() - coldStart).toFixed(2)} ms`);
  // 999,000 is an index entry; 999,999 is the last event, the farthest from one.
  for (const offset of [0, 500_000, 999_000, 999_500, 999_900, 999_999]) {
    const page = await reader.readPage(100, offset);
    const expected = Math.min(100, total - offset);
    if (page.length !== expected || page[0]!.seq !== offset) throw new Error(`readPage(100, ${offset}) returned the wrong page`);
    const where = offset % 1000 === 0 ? 'an index entry' : `${offset % 1000} events after an index entry`;
    const name = `readPage(100) at offset ${offset.toLocaleString('en-US')} of 1M (${where})`;
    if (theirs === undefined) {
      const ms = await timeMedianMs(() => reader.readPage(100, offset), 50, 5);
      rows.push({ name, median: ms, unit: 'ms', target: 2, anchor: 'the original scans from the start' });
      continue;
    }
    const mine: number[] = [];
    const other: number[] = [];
    for (let i = 0; i < 105; i++) {
      for (const [store, times] of (i % 2 ? [[reader, mine], [theirs, other]] : [[theirs, other], [reader, mine]]) as [EventStore, number[]][]) {
        const start = performance.now();
        await store.readPage(100, offset);
        if (i >= 5) times.push(performance.now() - start);
      }
    }
    rows.push({ name, median: median(mine), unit: 'ms', target: 2, anchor: `${ref!.name}: ${median(other).toFixed(2)} ms; ratio of medians ${(median(mine) / median(other)).toFixed(2)}x` });
  }
}

const WORDS = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
function zipfWord(): string {
  // Rank r with probability ~ 1/r: common words are common, like text.
  return WORDS[Math.min(WORDS.length - 1, Math.floor(Math.exp(Math.random() * Math.log(WORDS.length))) - 1)]!;
}

async function searchCosts(): Promise<void> {
  const dataDir = join(root, 'memory-data');
  const store = new MemoryStore({ dataDir, durability: 'never' });
  const items: MemoryItem[] = Array.from({ length: 100_000 }, (_, i) => ({
    id: `mem-${i}`,
    content: Array.from({ length: 30 }, zipfWord).join(' '),
    keywords: [zipfWord()],
    createdAt: i,
  }));
  const buildStart = performance.now();
  for (let i = 0; i < items.length; i += 25_000) await store.writeMany(items.slice(i, i + 25_000));
  notes.push(`100k memory items written (writeMany) in ${((performance.now() - buildStart) / 1000).toFixed(1)} s`);
  await store.close();
  const reader = new MemoryStore({ dataDir });
  const loadStart = performance.now();
  await reader.search('warm up', 1);
  notes.push(`MemoryStore load of the 100k-item index (first search): ${(performance.now() - loadStart).toFixed(0)} ms`);
  const queries = Array.from({ length: 200 }, () => `${zipfWord()} ${zipfWord()} ${zipfWord()}`);
  let q = 0;
  const ms = await timeMedianMs(() => reader.search(queries[q++ % queries.length]!, 10), 200, 20);
  rows.push({ name: 'MemoryStore.search(3 words, top 10) over 100k items', median: ms, unit: 'ms', target: 5 });
}

async function checkpointCosts(): Promise<void> {
  const state = { items: Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: 'v'.repeat(180) })) };
  for (const durability of ['batch', 'never'] as Durability[]) {
    const store = new CheckpointStore({ dataDir: root, sessionKey: 'bench', runId: `ckpt-${durability}`, durability });
    let step = 0;
    const ms = await timeMedianMs(
      () => store.saveLatest({ v: 1, runId: `ckpt-${durability}`, sessionKey: 'bench', step: step++, createdAt: Date.now(), position: ['a'], state }),
      200,
      10,
    );
    rows.push({ name: `CheckpointStore.saveLatest, 10 KB state, '${durability}'`, median: ms * 1000, unit: 'µs' });
  }
}

try {
  // The runtime rows go first, on a quiet disk: the 1M-event log and the 100k memory items written below leave
  // hundreds of MB of dirty pages whose writeback slows every file creation for a while afterwards (also into the
  // next run of this benchmark, hence the sync first).
  execFileSync('sync');
  const only = process.env['BENCH_ONLY'];
  const ref = process.env['BENCH_REF'];
  const builds = only === undefined || only === 'runtime' ? [await thisBuild(), await noIntegrityBuild(), await copyBuild(), ...(ref ? [await refBuild(ref)] : [])] : [];
  const runtime = builds.length > 0 ? await runtimeRows(builds) : [];
  // BENCH_ONLY=runtime: only the runFlow rows, for quick iterations; runpoint: only the loadRunPoint rows;
  // paging: only the 1M-event log rows.
  if (only === 'runpoint') rows.push(...(await runPointRows(join(root, 'run-points'))));
  else if (only === 'paging') await pagingCosts(ref ? await refBuild(ref) : undefined);
  else if (only !== 'runtime') {
    rows.push(...(await runPointRows(join(root, 'run-points'))));
    await appendCosts();
    await checkpointCosts();
    await pagingCosts(builds[3]);
    await searchCosts();
  }
  rows.push(...runtime);
} finally {
  rmSync(root, { recursive: true, force: true });
}
const ok = printTable('Storage layer (medians)', rows);
console.log(notes.map((n) => `- ${n}`).join('\n'));
process.exitCode = ok ? 0 : 1;
