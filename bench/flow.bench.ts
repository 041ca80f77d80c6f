/**
 * `npm run bench:flow`: cost per step of a 1,000-step flow of BackpackNodes, each doing one unpack and one pack,
 * with an event streamer and one subscriber attached. Target (issue 4): at most 20 µs per step.
 * LangGraph.js spends about 600 µs per step on this machine class without persistence.
 */
import { BackpackNode, EventStreamer, Flow, type BackpackHandle } from '../src/index.js';
import { printTable, timeMedianMs } from './harness.js';

class Step extends BackpackNode<number, number> {
  override prep(backpack: BackpackHandle): number {
    return backpack.unpack('counter') as number;
  }
  override exec(counter: number): number {
    return counter + 1;
  }
  override post(backpack: BackpackHandle, _prepRes: number, next: number): undefined {
    backpack.pack('counter', next);
    return undefined;
  }
}

const STEPS = 1000;

function buildFlow(): Flow {
  const streamer = new EventStreamer();
  let received = 0;
  streamer.on('*', () => void received++);
  const flow = new Flow({ namespace: 'bench', eventStreamer: streamer, maxSteps: STEPS });
  let previous: Step | undefined;
  for (let i = 0; i < STEPS; i++) {
    const node = flow.addNode(Step, { id: `s${i}` });
    previous?.next(node);
    previous = node;
  }
  return flow;
}

// A fresh flow (and Backpack) per run, built outside the timed region, so history does not pile up across runs.
const flows = Array.from({ length: 25 }, buildFlow);
let index = 0;
const ms = await timeMedianMs(() => flows[index++]!.run({ counter: 0 }), 20, 5);

const ok = printTable('Flow of BackpackNodes: µs per step (median of 20 runs of 1,000 steps)', [
  { name: 'unpack + pack per step, streamer + 1 subscriber', median: (ms * 1000) / STEPS, unit: 'µs', target: 20, anchor: 'LangGraph.js ~600 µs' },
]);
process.exitCode = ok ? 0 : 1;
