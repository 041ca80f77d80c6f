/**
 * `npm run bench:deltas`: what storing a model's streamed tokens costs in the event log, per step: a one-step run of
 * a streaming ChatNode (the AI SDK's mock model, N tokens of ~4 characters), with the deltas folded into one stored
 * event (the default) and with every delta kept (`modelDeltas: 'keep'`). Bytes are exact (events.jsonl size; one
 * step plus the run's start and end events), medians of 7 runs per mode, interleaved. (Time is not reported: the mock
 * model's per-chunk timer dominates it.)
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Flow } from '../src/nodes/index.js';
import { ChatNode } from '../src/nodes/llm/index.js';
import { runFlow, type ModelDeltaStorage } from '../src/runtime/index.js';
import { runPaths } from '../src/store/index.js';
import { streamingModel } from '../test/support/streaming-model.js';
import { median, printTable, type BenchRow } from './harness.js';

const root = mkdtempSync(join(tmpdir(), 'bpf-bench-deltas-'));
let counter = 0;

async function oneRun(tokens: string[], mode: ModelDeltaStorage): Promise<number> {
  const runId = `r${++counter}`;
  const flow = new Flow({ namespace: 'talk', deps: { has: (k) => k === 'model', get: () => streamingModel(tokens) as never } });
  flow.addNode(ChatNode, { id: 'chat', promptFrom: 'question', stream: true });
  await runFlow(flow, { dataDir: root, runId, input: { question: 'q' }, modelDeltas: mode });
  return statSync(runPaths(root, 'default', runId).events).size;
}

const rows: BenchRow[] = [];
try {
  for (const count of [50, 200, 1000]) {
    const tokens = Array.from({ length: count }, (_, i) => ` w${String(i % 100).padStart(2, '0')}`);
    const bytes: Record<ModelDeltaStorage, number[]> = { fold: [], keep: [] };
    for (let i = 0; i < 7; i++) {
      for (const mode of (i % 2 === 0 ? ['fold', 'keep'] : ['keep', 'fold']) as ModelDeltaStorage[]) bytes[mode].push(await oneRun(tokens, mode));
    }
    for (const mode of ['fold', 'keep'] as const) rows.push({ name: `${count} tokens, ${mode}: events.jsonl bytes for the step`, median: median(bytes[mode]), unit: 'B' });
    rows.push({ name: `${count} tokens: keep / fold bytes`, median: median(bytes.keep) / median(bytes.fold), unit: '×' });
    rows.push({ name: `${count} tokens: bytes per kept delta`, median: (median(bytes.keep) - median(bytes.fold)) / (count - 1), unit: 'B' });
  }
  printTable('model.delta storage per step (one streamed model call)', rows);
} finally {
  rmSync(root, { recursive: true, force: true });
}
