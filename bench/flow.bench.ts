/**
 * `npm run bench:flow`: cost per step of a 1,000-step flow of BackpackNodes, each doing one unpack and one pack,
 * with an event streamer and one subscriber attached. Target (issue 4): at most 20 µs per step.
 * LangGraph.js spends about 600 µs per step on this machine class without persistence.
 *
 * Second table: loading a 100,000-node flow from its JSON text and looking nodes up by id on its Backpack
 * (`getPermissions(id)`, a registry lookup), for nodes all of a plain class (built on first use, registered as one
 * reservation), alternating plain and not plain (built at load: the reservations come in 50,000 runs), and none
 * plain. The alternating rows should cost at most a few times the all-plain ones.
 */
import { BackpackNode, EventStreamer, Flow, FlowLoader, type BackpackHandle } from '../src/index.js';
import { median, printTable, timeMedianMs } from './harness.js';

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

/** A plain node class (built on first use when loaded from text). */
class Plain extends BackpackNode {}
/** Not plain: a constructor of its own, so built at load and registered one by one. */
class Eager extends BackpackNode {
  constructor(config: { id: string; [key: string]: unknown }, context: ConstructorParameters<typeof BackpackNode>[1]) {
    super(config, context);
  }
}

const NODES = 100_000;
const LOOKUPS = 1000;
const loader = new FlowLoader().register('Plain', Plain).register('Eager', Eager);
const texts = {
  'all plain': (i: number) => (i === 0 ? 'Eager' : 'Plain'),
  'alternating plain / not plain': (i: number) => (i % 2 === 0 ? 'Eager' : 'Plain'),
  'none plain': () => 'Eager',
};
const rows: Parameters<typeof printTable>[1] = [];
const loads: Record<string, number[]> = {};
const lookups: Record<string, number[]> = {};
// Rows interleaved, three rounds, medians: the machine is shared.
for (let round = 0; round < 3; round++) {
  for (const [name, type] of Object.entries(texts)) {
    const text = JSON.stringify({ version: '2.0.0', namespace: 'big', nodes: Array.from({ length: NODES }, (_, i) => ({ type: type(i), id: `n${i}`, params: {} })) });
    let start = performance.now();
    const flow = await loader.loadFlow(text);
    (loads[name] ??= []).push(performance.now() - start);
    const ids = Array.from({ length: LOOKUPS }, (_, i) => `n${(i * 7919) % NODES}`);
    start = performance.now();
    for (const id of ids) flow.backpack.getPermissions(id);
    (lookups[name] ??= []).push(((performance.now() - start) * 1000) / LOOKUPS);
  }
}
for (const name of Object.keys(texts)) rows.push({ name: `load ${NODES.toLocaleString('en')} nodes from text, ${name}`, median: median(loads[name]!), unit: 'ms' });
for (const name of Object.keys(texts)) rows.push({ name: `getPermissions(id) on that flow's Backpack, ${name}`, median: median(lookups[name]!), unit: 'µs' });
printTable(`Large loaded flow: load and lookups by node id (median of 3 interleaved rounds)`, rows);
process.exitCode = ok ? 0 : 1;
