/**
 * Stored text never reaches the terminal raw: every human renderer (`runs state|diff|blame|events|show|list|verify`
 * and the live trace) prints each field through terminalText. Each report is filled with hostile text in every field
 * it prints; the output holds no character a terminal acts on except the newlines the renderer writes itself, which
 * are as many as for the same report with harmless twins of the same text.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { createColors } from 'picocolors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { colors } from '../../src/cli/colors.js';
import type { BlameReport, DiffReport, Provenance, StateReport } from '../../src/cli/backpackflow/inspect.js';
import { renderBlame, renderDiff, renderEvents, renderRuns, renderState, renderVerification } from '../../src/cli/backpackflow/render.js';
import { buildTrace, renderTrace } from '../../src/cli/backpackflow/trace.js';
import { EventStreamer, FlowVisualizer, StreamEventType as T, type EventInput, type StreamEvent } from '../../src/events/index.js';
import type { RunVerification } from '../../src/runtime/index.js';
import type { RunMeta } from '../../src/store/index.js';
import { ACTS_BUT_NEWLINE, hostileText, twin } from '../support/hostile-text.js';
import { trials } from '../support/soak.js';

/** Where the rendered commands point: the CLI's default data directory and session. */
const DEFAULT_PLACE = { dataDir: '.backpackflow', session: 'default' };

const FIELDS = [
  'runId', 'other', 'flowNamespace', 'nodeId', 'nodeName', 'namespace', 'key', 'summary', 'tag', 'reason', 'action', 'errName', 'message',
  'operation', 'rule', 'model', 'purpose', 'question', 'problem',
] as const;
type Texts = Record<(typeof FIELDS)[number], string> & { delta: string };

const texts: fc.Arbitrary<Texts> = fc.record({
  ...(Object.fromEntries(FIELDS.map((f) => [f, hostileText({ minLength: 1 })])) as Record<(typeof FIELDS)[number], fc.Arbitrary<string>>),
  delta: hostileText({ minLength: 1 }),
});

function twins(s: Texts): Texts {
  return { ...(Object.fromEntries(FIELDS.map((f) => [f, twin(s[f])])) as Record<(typeof FIELDS)[number], string>), delta: twin(s.delta, true) };
}

function provenance(s: Texts): Provenance {
  return { nodeId: s.nodeId, nodeName: s.nodeName, namespace: s.namespace, version: 2, timestamp: 1_700_000_000_000, tags: [s.tag] };
}

function state(s: Texts): StateReport {
  const entry = { key: s.key, value: s.summary, summary: s.summary, provenance: provenance(s) };
  return {
    runId: s.runId,
    step: 3,
    position: [s.nodeId, s.other],
    items: [entry],
    quarantined: [{ ...entry, key: s.other, quarantine: { reason: s.reason, nodeId: s.nodeId, timestamp: 1 } }],
    warnings: [s.problem],
  };
}

function diff(s: Texts): DiffReport {
  const by = provenance(s);
  const quarantine = { reason: s.reason, nodeId: s.nodeId };
  return {
    runId: s.runId,
    from: 1,
    to: 2,
    changes: [
      { key: s.key, change: 'added', before: null, after: s.summary, by },
      { key: s.key, change: 'modified', before: s.summary, after: s.other, by },
      { key: s.key, change: 'deleted', before: s.summary, after: null, by },
      { key: s.key, change: 'quarantined', before: s.summary, after: null, by, quarantine },
      { key: s.key, change: 'quarantined', before: null, after: null, by, quarantine },
    ],
    counts: { added: 1, modified: 1, deleted: 1, quarantined: 2 },
    warnings: [],
  };
}

function blame(s: Texts): BlameReport {
  const write = { step: 1, seq: 4, timestamp: 1, nodeId: s.nodeId, nodeName: s.nodeName, namespace: s.namespace, version: 1, summary: s.summary };
  return { runId: s.runId, key: s.key, writes: [{ ...write, action: 'pack' }, { ...write, version: null, action: 'quarantine', reason: s.reason }], warnings: [] };
}

function runs(s: Texts): RunMeta[] {
  const meta = {
    v: 1, runId: s.runId, sessionKey: s.other, status: 'failed', startedAt: 1, durationMs: 3, updatedAt: 2, lastSeq: 9, eventCount: 9, stepCount: 1, nodeCount: 1,
    nodeIds: [s.nodeId], toolCallCount: 0, errorCount: 1, damaged: s.problem,
  };
  return [meta as unknown as RunMeta];
}

function verification(s: Texts): RunVerification {
  return { runId: s.runId, sessionKey: s.other, ok: false, status: 'damaged', problems: [s.problem], log: { lines: 3, firstBadLine: 2 }, keyframes: [] } as unknown as RunVerification;
}

/** Every event type a trace prints, each field hostile: two nodes, a model call, a route, a wait, an answer, a failure. */
function events(s: Texts): EventInput[] {
  const run = { runId: s.runId };
  const node = { ...run, nodeId: s.nodeId, nodeName: s.nodeName, namespace: s.namespace, spanId: 'n1', parentSpanId: 's0' };
  const next = { ...run, nodeId: s.other, nodeName: s.nodeName, namespace: s.namespace, spanId: 'n2', parentSpanId: 's0' };
  const error = { name: s.errName, message: s.message };
  const model = { model: s.model, purpose: s.purpose, attempt: 1 };
  const interrupt = { nodeId: s.other, namespace: s.namespace, index: 0, payload: { q: s.question }, schema: { title: s.question } };
  return [
    { ...run, type: T.RUN_START, spanId: 's0', namespace: s.namespace, payload: { flowNamespace: s.flowNamespace, entryNodeId: s.nodeId, forkedFrom: { runId: s.other, step: 1 } } },
    { ...node, type: T.NODE_START, payload: {} },
    { ...node, type: T.BACKPACK_PACK, payload: { key: s.key, version: 1, valueSummary: s.summary, tags: [s.tag] } },
    { ...node, type: T.BACKPACK_UNPACK, payload: { key: s.key, found: false } },
    { ...node, type: T.BACKPACK_QUARANTINE, payload: { key: s.key, reason: s.reason } },
    { ...node, type: T.ACCESS_DENIED, payload: { key: s.key, operation: s.operation, rule: s.rule } },
    { ...node, type: T.NODE_RETRY, payload: { attempt: 1, maxRetries: 2, delayMs: 1, error } },
    { ...node, type: T.MODEL_START, payload: model },
    { ...node, type: T.MODEL_DELTA, payload: { ...model, delta: s.delta } },
    { ...node, type: T.MODEL_END, payload: { ...model, error } },
    { ...node, type: T.NODE_END, payload: { action: s.action, durationMs: 1 } },
    { ...run, type: T.ROUTE, parentSpanId: 's0', nodeId: s.nodeId, namespace: s.namespace, payload: { action: s.action, from: s.nodeId, to: s.other } },
    { ...run, type: T.ROUTE_MISSING, parentSpanId: 's0', nodeId: s.nodeId, namespace: s.namespace, payload: { action: s.action, from: s.nodeId, available: [s.other] } },
    { ...next, type: T.NODE_START, payload: {} },
    { ...next, type: T.NODE_INTERRUPT, payload: { index: 0, payload: { q: s.question } } },
    { ...run, type: T.RUN_WAITING, spanId: 's0', payload: { durationMs: 1, steps: 1, interrupt } },
    { ...run, type: T.INTERRUPT_ANSWERED, payload: { nodeId: s.other, namespace: s.namespace, index: 0, answer: s.question } },
    { ...run, type: T.RUN_START, spanId: 's1', payload: { flowNamespace: s.flowNamespace, entryNodeId: s.other, resumed: true } },
    { ...next, parentSpanId: 's1', spanId: 'n3', type: T.NODE_START, payload: {} },
    { ...next, parentSpanId: 's1', spanId: 'n3', type: T.ERROR, payload: { phase: 'exec', error } },
    { ...run, type: T.RUN_ERROR, spanId: 's1', payload: { durationMs: 1, steps: 2, error } },
    { ...run, type: T.RUN_START, spanId: 's2', payload: { flowNamespace: s.flowNamespace, entryNodeId: s.other, resumed: true } },
    { ...run, type: T.RUN_END, spanId: 's2', payload: { durationMs: 1, steps: 2, action: s.action } },
  ] as EventInput[];
}

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString('utf8');
    callback();
  }
}

/** The live trace of the events, and the stored events as the streamer stamped them. */
function live(input: EventInput[]): { trace: string; stored: StreamEvent[] } {
  const streamer = new EventStreamer();
  const output = new Capture();
  const stored: StreamEvent[] = [];
  streamer.on('*', (event) => void stored.push(event));
  const visualizer = new FlowVisualizer(streamer, { output, color: false, showBackpack: true });
  for (const event of input) streamer.emit(event);
  visualizer.detach();
  return { trace: output.text, stored };
}

/** What each renderer prints for the texts `s`. */
function outputs(s: Texts): Record<string, string> {
  const { trace, stored } = live(events(s));
  return {
    live: trace,
    state: renderState(state(s)),
    diff: renderDiff(diff(s)),
    blame: renderBlame(blame(s)),
    events: renderEvents({ runId: s.runId, page: 1, pageSize: 50, total: stored.length, pages: 1, events: stored }),
    show: renderTrace(buildTrace(s.runId, stored), DEFAULT_PLACE),
    list: renderRuns(runs(s)),
    verify: renderVerification(verification(s)),
  };
}

describe('the human renderers print stored text through terminalText', () => {
  const saved = { ...colors };
  beforeAll(() => void Object.assign(colors, createColors(false)));
  afterAll(() => void Object.assign(colors, saved));

  it('no control, DEL, C1 or bidirectional character of a field reaches the output, nor a newline of its own', () => {
    fc.assert(
      fc.property(texts, (s) => {
        const hostile = outputs(s);
        const harmless = outputs(twins(s));
        for (const [command, text] of Object.entries(hostile)) {
          expect(text, command).not.toMatch(ACTS_BUT_NEWLINE);
          expect(text.split('\n').length, command).toBe(harmless[command]!.split('\n').length);
        }
      }),
      { numRuns: trials(100, 1000) },
    );
  });
});
