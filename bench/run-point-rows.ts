/**
 * `loadRunPoint` (the state of a recorded run at a step, what `runs state` and `resumeRun` read) at steps early,
 * middle and last of a 1,000-step run, and at the last step of a 100,000-step run. Reads start at the keyframe at
 * or before the step (through the log's index) and replay only the steps after it, so the cost is flat in the step
 * number and in the length of the log. Target (issue 14): at most 5 ms at any step of the 1,000-step run, at most
 * 100 ms for the 100,000-step run; anchor: LangGraph.js `getState` on SqliteSaver, 6.9-13.8 ms for the 1,000-step run.
 */
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../src/index.js';
import { timeMedianMs, type BenchRow } from './harness.js';

class Counter extends BackpackNode {
  override post(backpack: BackpackHandle): string | undefined {
    const next = ((backpack.unpack('count') as number | undefined) ?? 0) + 1;
    backpack.pack('count', next);
    backpack.pack('note', `step ${next} of a run that records a little text at every step`);
    return next < (this.config['steps'] as number) ? 'again' : undefined;
  }
}

async function record(dataDir: string, runId: string, steps: number, keyframeInterval?: number): Promise<void> {
  const flow = new Flow({ namespace: 'count', maxSteps: steps + 1 });
  const node = flow.addNode(Counter, { id: 'counter', steps });
  node.on('again', node);
  await runFlow(flow, { dataDir, runId, durability: 'never', ...(keyframeInterval === undefined ? {} : { keyframeInterval }) });
}

/** The rows; `dataDir` is a scratch directory. */
export async function runPointRows(dataDir: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  await record(dataDir, 'steps-1k', 1000);
  // 999: the worst case, the most steps after a keyframe (every 100 by default).
  for (const step of [10, 500, 999, 1000]) {
    const ms = await timeMedianMs(async () => {
      const point = await loadRunPoint({ dataDir, runId: 'steps-1k', step });
      if (point.step !== step) throw new Error(`loadRunPoint gave step ${point.step}, not ${step}`);
    }, 30, 3);
    rows.push({ name: `loadRunPoint at step ${step} of a 1,000-step run`, median: ms, unit: 'ms', target: 5, anchor: 'LangGraph.js getState (SqliteSaver): 6.9-13.8 ms' });
  }
  await record(dataDir, 'steps-100k', 100_000);
  const ms = await timeMedianMs(async () => {
    const point = await loadRunPoint({ dataDir, runId: 'steps-100k' });
    if (point.step !== 100_000) throw new Error(`loadRunPoint gave step ${point.step}`);
  }, 10, 2);
  rows.push({ name: 'loadRunPoint at the last step of a 100,000-step run', median: ms, unit: 'ms', target: 100 });
  return rows;
}
