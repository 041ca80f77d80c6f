/**
 * `npm run bench:engine`: the flow engine's cost per step, with no Backpack and no events.
 * Target (issue 2): at most 5 µs per step. LangGraph.js spends about 600 µs per step on this machine class.
 */
import { BaseFlow, Node } from '../src/index.js';
import { printTable, timeMedianMs } from './harness.js';

type Shared = { count: number };

class Increment extends Node<Shared> {
  override post(shared: Shared): undefined {
    shared.count++;
    return undefined;
  }
}

class LoopStep extends Node<Shared> {
  override post(shared: Shared): string {
    shared.count++;
    return shared.count < 10_000 ? 'default' : 'done';
  }
}

function linearFlow(length: number): BaseFlow<Shared> {
  const nodes = Array.from({ length }, (_, i) => new Increment({ id: `n${i}` }));
  for (let i = 0; i + 1 < length; i++) nodes[i]!.next(nodes[i + 1]!);
  return new BaseFlow({ start: nodes[0]!, maxSteps: length });
}

function loopFlow(size: number): BaseFlow<Shared> {
  const nodes = Array.from({ length: size }, (_, i) => new LoopStep({ id: `l${i}` }));
  for (let i = 0; i < size; i++) nodes[i]!.next(nodes[(i + 1) % size]!);
  return new BaseFlow({ start: nodes[0]!, maxSteps: 20_000, onMissingRoute: 'end' });
}

const linear = linearFlow(1000);
const loop = loopFlow(10);
const linearMs = await timeMedianMs(() => linear.run({ count: 0 }), 200, 20);
const loopMs = await timeMedianMs(() => loop.run({ count: 0 }), 30, 5);

const ok = printTable('Flow engine: µs per step (median)', [
  { name: '1,000-node linear flow', median: (linearMs * 1000) / 1000, unit: 'µs', target: 5, anchor: 'LangGraph.js ~600 µs' },
  { name: '10-node loop, 10,000 steps', median: (loopMs * 1000) / 10_000, unit: 'µs', target: 5, anchor: 'LangGraph.js ~600 µs' },
]);
process.exitCode = ok ? 0 : 1;
