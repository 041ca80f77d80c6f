/**
 * Durable-run measures for `npm run bench:store` (issue 6): per-step overhead of runFlow over flow.run for each
 * durability, and bytes on disk after 400 steps that each append 200 bytes to a list.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../src/index.js';
import { median, type BenchRow } from './harness.js';

class Append extends BackpackNode<string[], string[]> {
  override prep(backpack: BackpackHandle): string[] {
    return (backpack.unpack('log') as string[] | undefined) ?? [];
  }
  override exec(log: string[]): string[] {
    return [...log, `${log.length} ${'x'.repeat(190)}`];
  }
  override post(backpack: BackpackHandle, _prev: string[], next: string[]): string | undefined {
    backpack.pack('log', next);
    return next.length < (this.config.steps as number) ? 'again' : undefined;
  }
}

/** One small pack per step (a counter): the steady-state cost of durability itself. */
class Count extends BackpackNode<number, number> {
  override prep(backpack: BackpackHandle): number {
    return (backpack.unpack('count') as number | undefined) ?? 0;
  }
  override exec(count: number): number {
    return count + 1;
  }
  override post(backpack: BackpackHandle, _prev: number, next: number): string | undefined {
    backpack.pack('count', next);
    return next < (this.config.steps as number) ? 'again' : undefined;
  }
}

function countFlow(steps: number): Flow {
  const flow = new Flow({ namespace: 'bench', maxSteps: steps + 1 });
  const node = flow.addNode(Count, { id: 'count', steps });
  node.on('again', node);
  return flow;
}

function loopFlow(steps: number): Flow {
  const flow = new Flow({ namespace: 'bench', maxSteps: steps + 1 });
  const node = flow.addNode(Append, { id: 'append', steps });
  node.on('again', node);
  return flow;
}

function bytesUnder(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const path = join(dir, e.name);
    return sum + (e.isDirectory() ? bytesUnder(path) : statSync(path).size);
  }, 0);
}

async function perStepMs(run: (flow: Flow, i: number) => Promise<unknown>, steps: number, runs: number, build = loopFlow): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const flow = build(steps);
    const start = performance.now();
    await run(flow, i);
    if (i >= 2) times.push((performance.now() - start) / steps);
  }
  return median(times);
}

/** Measures and returns the rows. */
export async function runtimeRows(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-bench-runtime-'));
  try {
    const STEPS = 200;
    // Short runs: their medians are taken over enough runs to span the disk's periodic journal commits.
    const RUNS = 21;
    const plain = await perStepMs((flow) => flow.run(), STEPS, RUNS);
    const batch = await perStepMs((flow, i) => runFlow(flow, { dataDir: dir, runId: `batch-${i}`, durability: 'batch' }), STEPS, RUNS);
    const never = await perStepMs((flow, i) => runFlow(flow, { dataDir: dir, runId: `never-${i}`, durability: 'never' }), STEPS, RUNS);
    const SMALL = 1000;
    const smallPlain = await perStepMs((flow) => flow.run(), SMALL, 5, countFlow);
    const smallBatch = await perStepMs((flow, i) => runFlow(flow, { dataDir: dir, runId: `sbatch-${i}`, durability: 'batch' }), SMALL, 5, countFlow);
    const smallNever = await perStepMs((flow, i) => runFlow(flow, { dataDir: dir, runId: `snever-${i}`, durability: 'never' }), SMALL, 5, countFlow);
    await runFlow(loopFlow(400), { dataDir: dir, runId: 'disk-400' });
    const bytes = bytesUnder(join(dir, 'sessions', 'default', 'runs', 'disk-400'));
    return [
      { name: "runFlow per-step overhead, 'batch' (fsync per step): 1,000 steps, one small pack each", median: (smallBatch - smallPlain) * 1000, unit: 'µs', target: 400, anchor: 'LangGraph.js +600-1,100 µs' },
      { name: "runFlow per-step overhead, 'never': 1,000 steps, one small pack each", median: (smallNever - smallPlain) * 1000, unit: 'µs', target: 50 },
      { name: "runFlow per-step overhead, 'batch': 200-step runs appending to a list growing to 40 KB", median: (batch - plain) * 1000, unit: 'µs', target: 400, anchor: 'LangGraph.js +600-1,100 µs' },
      { name: "runFlow per-step overhead, 'never': 200-step runs appending to a list growing to 40 KB", median: (never - plain) * 1000, unit: 'µs', target: 50 },
      { name: 'bytes on disk after 400 steps appending 200 bytes each', median: bytes / 1e6, unit: 'MB', target: 2, anchor: 'LangGraph SqliteSaver 20.9 MB' },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
