import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { MemorySaver } from '@langchain/langgraph-checkpoint';
import { BackpackflowSaver } from './src/langgraph/index.js';
import { PostgresRunStore } from './src/store/index.js';

const url = process.env.URL!;
const LINE = 'x'.repeat(200);
const State = Annotation.Root({ items: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }) });
function graph(n: number, checkpointer: any) {
  let g: any = new StateGraph(State);
  for (let i = 0; i < n; i++) g = g.addNode(`n${i}`, () => ({ items: [LINE] }));
  g = g.addEdge(START, 'n0');
  for (let i = 1; i < n; i++) g = g.addEdge(`n${i - 1}`, `n${i}`);
  return g.addEdge(`n${n - 1}`, END).compile({ checkpointer });
}
const N = Number(process.env.N ?? 50);
const rounds = 5;
const res: Record<string, number[]> = { memory: [], backpackflow: [], postgresSaver: [], files: [] };
const lg = PostgresSaver.fromConnString(url); await lg.setup();
const store = new PostgresRunStore({ url });
for (let r = 0; r < rounds; r++) {
  for (const kind of ['memory', 'backpackflow', 'postgresSaver', 'files']) {
    const saver: any = kind === 'memory' ? new MemorySaver() : kind === 'files' ? new BackpackflowSaver({ dataDir: '/tmp/lgbench-data', sessionKey: 'bench' }) : kind === 'backpackflow' ? new BackpackflowSaver(process.env.FILES ? { dataDir: '/tmp/lgbench-data', sessionKey: 'bench' } : { store, sessionKey: 'bench' }) : lg;
    const g = graph(N, saver);
    const t = performance.now();
    await g.invoke({ items: [] }, { configurable: { thread_id: `${kind}-${r}-${Date.now()}` }, recursionLimit: N + 10 });
    res[kind].push(performance.now() - t);
    if (kind === 'backpackflow' || kind === 'files') await saver.close();
  }
}
const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
const m = med(res.memory), b = med(res.backpackflow), p = med(res.postgresSaver);
console.log(`| N=${N} | memory ${m.toFixed(1)} ms | BackpackflowSaver(Postgres) ${((b - m) / N).toFixed(2)} ms/step overhead | PostgresSaver ${((p - m) / N).toFixed(2)} ms/step overhead | ratio ${((b - m) / (p - m)).toFixed(2)}x |`);
await store.close(); await lg.end();
console.log(`|   files BackpackflowSaver ${((med(res.files) - m) / N).toFixed(2)} ms/step overhead |`);
