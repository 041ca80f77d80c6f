/**
 * Crash tests: real child processes write to the stores and are SIGKILLed at a random moment (0-40 ms after they
 * acknowledged a given number of writes, so that however loaded the machine the kills land where each trial means
 * them to); the parent then checks what is on disk. The fixtures are bundled once and trials run a few at a time, to
 * keep the suite fast.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/events/types.js';
import { CheckpointStore, EventStore, KeywordIndex, MemoryStore, type Durability } from '../../src/store/index.js';
import { bundleFixtures, spawnFixture, type Child } from './child.js';
import { tempDir } from './helpers.js';
import { trials as trialCount } from '../support/soak.js';

/** Kills per loop: in `npm test`, one per event-log durability ('always', 'batch', 'never'). */
const TRIALS = trialCount(3, 50);
/** Rounds of the stale-lock race, and the processes racing in each. */
const LOCK_RACES = trialCount(1, 6);
const LOCK_RACERS = trialCount(3, 6);
/** How long the reader runs alongside the writer. */
const CONCURRENT_READ_MS = trialCount(250, 2000);
const CONCURRENCY = 5;

/**
 * Acknowledged writes a trial waits for before its kill: 1 to 3 in `npm test` (every kill then lands after
 * acknowledged writes, during a later one), and also 0 every fourth trial in the soak (a kill during the first write).
 */
const acksBeforeKill = (trial: number): number => (trial + 1) % 4;

/**
 * Kills the child 0-40 ms after it acknowledged `minAcks` writes (or when it is ready, for 0). Waiting for its
 * progress, not for a fixed time, keeps a slow start on a loaded machine from turning a trial into a kill before
 * its first write.
 */
async function killAtRandom(child: Child, minAcks: number): Promise<void> {
  let exited = false;
  void child.exited.then(() => (exited = true));
  await child.waitFor('ready');
  while (acks(child).length < minAcks && !exited) await new Promise((r) => setTimeout(r, 2));
  await new Promise((r) => setTimeout(r, Math.random() * 40));
  child.process.kill('SIGKILL');
  await child.exited;
}

/** Runs `count` trials, CONCURRENCY at a time; the first failure stops the others from starting new trials. */
async function trials(count: number, run: (trial: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const workers = Array.from({ length: CONCURRENCY }, async () => {
    while (next < count && !failed) {
      try {
        await run(next++);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  });
  const results = await Promise.allSettled(workers);
  const rejected = results.find((r) => r.status === 'rejected');
  if (rejected) throw (rejected as PromiseRejectedResult).reason;
}

/** Every batch the crash-events fixture wrote is either entirely in `events` or not at all. */
function expectWholeBatches(events: StreamEvent[], context: string): void {
  const sizes = new Map<string, { n: number; seen: number }>();
  for (const e of events) {
    const key = `${String(e.payload['writer'])}:${String(e.payload['batch'])}`;
    const entry = sizes.get(key) ?? { n: Number(e.payload['n']), seen: 0 };
    entry.seen++;
    sizes.set(key, entry);
  }
  for (const [key, { n, seen }] of sizes) expect(seen, `${context} batch ${key}`).toBe(n);
}

function acks(child: Child): string[] {
  return child.lines.filter((l) => l.startsWith('ack ')).map((l) => l.slice(4));
}

describe('crash safety (SIGKILL at random moments)', () => {
  let tmp: ReturnType<typeof tempDir>;
  let bundles: string;
  beforeAll(async () => {
    tmp = tempDir();
    // Under node_modules, so that the packages left external resolve as they do for the sources.
    bundles = join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'backpackflow-test-fixtures', 'store');
    await bundleFixtures(['crash-events.ts', 'crash-checkpoints.ts', 'crash-memory.ts', 'try-lock.ts'], bundles);
  });
  afterAll(() => tmp.cleanup());

  it(`event log: ${TRIALS} kills leave a log with no torn or invalid event, no half batch, and every acknowledged append with 'always'`, async () => {
    const durabilities: Durability[] = ['always', 'batch', 'never'];
    let acknowledged = 0;
    await trials(TRIALS, async (trial) => {
      const durability = durabilities[trial % 3]!;
      const runId = `run-${trial}`;
      // Every third trial kills the same run twice, so a writer also recovers from an earlier crash.
      for (let round = 0; round < (trial % 3 === 0 ? 2 : 1); round++) {
        const child = spawnFixture('crash-events.ts', [tmp.dir, runId, durability], bundles);
        // The second kill of a run may land while the writer recovers from the first.
        await killAtRandom(child, round === 0 ? acksBeforeKill(trial) : 0);
        const acked = acks(child).map(Number);
        acknowledged += acked.length;
        const reader = new EventStore({ dataDir: tmp.dir, sessionKey: 'crash', runId });
        const report = await reader.verify();
        expect(report.corruptLines, `trial ${trial}`).toEqual([]);
        const events = await reader.readAll();
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
        expectWholeBatches(events, `trial ${trial}`);
        if (durability === 'always' && acked.length > 0) expect(events.length - 1).toBeGreaterThanOrEqual(acked[acked.length - 1]!);
        const page = await reader.readPage(10, Math.max(0, events.length - 5));
        expect(page).toEqual(events.slice(Math.max(0, events.length - 5)));
      }
      const writer = new EventStore({ dataDir: tmp.dir, sessionKey: 'crash', runId });
      const { lastSeq } = await writer.open();
      await writer.append({ v: 1, id: 'after', seq: (lastSeq ?? -1) + 1, timestamp: 1, runId, type: 'run.completed', payload: {} });
      expect(await writer.verify()).toMatchObject({ ok: true, tornTailBytes: 0 });
      await writer.close();
    });
    expect(acknowledged).toBeGreaterThan(TRIALS);
  }, 120_000);

  it('a log cut inside acknowledged batches after a kill is reported and never continued: the cut is not taken for the batch being written', async () => {
    const runId = 'cut-after-kill';
    const child = spawnFixture('crash-events.ts', [tmp.dir, runId, 'never'], bundles);
    await child.waitFor('ready');
    const deadline = Date.now() + 20_000;
    while (acks(child).length < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    child.process.kill('SIGKILL');
    await child.exited;
    expect(acks(child).length).toBeGreaterThanOrEqual(300);
    // The writer died holding the log (its batch marker still set); then the log loses its end from the middle of a
    // line about 100 lines before its end, in batches (of at most 31 lines) acknowledged before the kill. The line
    // before the cut must not end a batch (carry a chain hash): a log cut there, its torn line then dropped on open,
    // ends at a batch boundary, which no chain can tell from a log that ended there (the keyframes and the
    // projection do: see damage.property.test.ts).
    const log = join(tmp.dir, 'sessions', 'crash', 'runs', runId, 'events.jsonl');
    const lines = readFileSync(log, 'utf8').split('\n');
    let cut = lines.length - 100;
    while (lines[cut - 1]!.includes('"chain":"')) cut--;
    truncateSync(log, Buffer.byteLength(lines.slice(0, cut).join('\n')) + 1 + 10);
    const report = await new EventStore({ dataDir: tmp.dir, sessionKey: 'crash', runId }).verify();
    expect(report.ok).toBe(false);
    expect(report.problem).toContain(log);
    await expect(new EventStore({ dataDir: tmp.dir, sessionKey: 'crash', runId }).open()).rejects.toThrow(/cut or damaged/);
  });

  it('a reader running alongside the writer never sees half a batch or a torn line', async () => {
    const runId = 'concurrent-read';
    const child = spawnFixture('crash-events.ts', [tmp.dir, runId, 'never'], bundles);
    try {
      await child.waitFor('ready');
      const reader = new EventStore({ dataDir: tmp.dir, sessionKey: 'crash', runId });
      let reads = 0;
      let longest = 0;
      // Reads for CONCURRENT_READ_MS, and on until it saw an event (up to 20 s: a busy machine may keep the writer
      // from its first append for a while).
      const until = Date.now() + CONCURRENT_READ_MS;
      const deadline = Date.now() + 20_000;
      while (Date.now() < until || (longest === 0 && Date.now() < deadline)) {
        const events = await reader.readAll();
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
        expectWholeBatches(events, `read ${reads}`);
        longest = Math.max(longest, events.length);
        reads++;
      }
      expect(longest).toBeGreaterThan(0);
    } finally {
      child.process.kill('SIGKILL');
      await child.exited;
    }
  });

  it('processes racing to recover a stale lock: exactly one becomes the writer', async () => {
    for (let round = 0; round < LOCK_RACES; round++) {
      const runId = `lock-race-${round}`;
      const paths = new EventStore({ dataDir: tmp.dir, sessionKey: 'crash', runId }).paths;
      mkdirSync(paths.dir, { recursive: true });
      writeFileSync(paths.lock, JSON.stringify({ pid: 2 ** 22 + 4321, host: hostname(), createdAt: 1 }));
      const children = Array.from({ length: LOCK_RACERS }, () => spawnFixture('try-lock.ts', [tmp.dir, runId], bundles));
      try {
        const outcomes = await Promise.all(
          children.map(async (child) => {
            while (child.lines.length === 0) {
              if (child.process.exitCode !== null) break;
              await new Promise((r) => setTimeout(r, 5));
            }
            return child.lines[0] ?? 'no output';
          }),
        );
        expect(outcomes.filter((o) => o === 'locked'), outcomes.join(', ')).toHaveLength(1);
        expect(outcomes.filter((o) => o === 'refused'), outcomes.join(', ')).toHaveLength(LOCK_RACERS - 1);
      } finally {
        for (const child of children) child.process.kill('SIGKILL');
        await Promise.all(children.map((c) => c.exited));
      }
    }
  });

  it(`checkpoints: ${TRIALS} kills always leave whole, valid checkpoint files no older than the last acknowledged save`, async () => {
    await trials(TRIALS, async (trial) => {
      const runId = `ckpt-${trial}`;
      const child = spawnFixture('crash-checkpoints.ts', [tmp.dir, runId], bundles);
      await killAtRandom(child, acksBeforeKill(trial));
      const acked = acks(child).map(Number);
      const store = new CheckpointStore({ dataDir: tmp.dir, sessionKey: 'crash', runId });
      const latest = await store.loadLatest();
      if (acked.length > 0) {
        expect(latest, `trial ${trial}`).not.toBeNull();
        expect(latest!.step).toBeGreaterThanOrEqual(acked[acked.length - 1]!);
      }
      if (latest) expect((latest.state as { list: string[] }).list.length).toBe(latest.step + 1);
      for (const stepId of await store.listHistorical()) {
        const historical = await store.loadHistorical(stepId);
        expect(historical!.step).toBe(Number(stepId));
      }
    });
  }, 120_000);

  it(`memory: ${TRIALS} kills always leave a whole keyword.json, and the reopened index agrees with the items`, async () => {
    await trials(TRIALS, async (trial) => {
      const dataDir = join(tmp.dir, `mem-${trial}`);
      const child = spawnFixture('crash-memory.ts', [dataDir, `t${trial}`], bundles);
      await killAtRandom(child, acksBeforeKill(trial));
      const store = new MemoryStore({ dataDir });
      const indexPath = store.paths.keywordIndex;
      let indexIds: string[] = [];
      try {
        indexIds = KeywordIndex.fromJSON(JSON.parse(readFileSync(indexPath, 'utf8')).data).idList();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      const files = existsSync(store.paths.itemsDir) ? readdirSync(store.paths.itemsDir).filter((n) => n.endsWith('.json') && !n.startsWith('.')) : [];
      const onDisk = files.map((f) => f.slice(0, -5));
      // The persisted index is at most one operation behind the items (the one the kill interrupted).
      const behind = onDisk.filter((id) => !indexIds.includes(id)).length + indexIds.filter((id) => !onDisk.includes(id)).length;
      expect(behind, `trial ${trial}`).toBeLessThanOrEqual(1);
      const deleted = new Set(acks(child).filter((a) => a.startsWith('delete ')).map((a) => a.slice(7)));
      const deleting = new Set(child.lines.filter((l) => l.startsWith('begin delete ')).map((l) => l.slice(13)));
      for (const a of acks(child).filter((a) => a.startsWith('write '))) {
        const id = a.slice(6);
        // A delete the kill interrupted may or may not have happened; every other acknowledged write is there.
        if (!deleting.has(id)) expect(await store.get(id), `trial ${trial} item ${id}`).not.toBeNull();
      }
      for (const id of deleted) expect(await store.get(id)).toBeNull();
      for (const id of onDisk) expect((await store.search(`tok${id}`, 1)).map((i) => i.id)).toEqual([id]);
      for (const id of deleted) expect(await store.search(`tok${id}`, 1)).toEqual([]);
      await store.close();
    });
  }, 120_000);
});
