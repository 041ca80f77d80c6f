/** Streamed tokens: every delta reaches subscribers as it arrives; the stored log folds them unless asked to keep them. */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { StreamEventType, type StreamEvent } from '../../src/events/index.js';
import { Flow } from '../../src/nodes/index.js';
import { ChatNode, LlmNode } from '../../src/nodes/llm/index.js';
import { EventStore } from '../../src/store/index.js';
import { foldModelDeltas, openNewRun, runFlow, type ModelDeltaStorage } from '../../src/runtime/index.js';
import { buildTrace, renderTrace } from '../../src/cli/backpackflow/trace.js';
import { streamingModel } from '../support/streaming-model.js';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

/** Where the rendered commands point: the CLI's default data directory and session. */
const DEFAULT_PLACE = { dataDir: '.backpackflow', session: 'default' };

/** A model whose n-th call streams `texts[n]` word by word, a chunk every 3 ms: two calls made at once interleave. */
function interleavingModel(texts: string[][]): MockLanguageModelV3 {
  let n = 0;
  return new MockLanguageModelV3({
    doStream: async () => {
      const tokens = texts[n++]!;
      return {
        stream: simulateReadableStream({
          chunkDelayInMs: 3,
          chunks: [
            { type: 'stream-start' as const, warnings: [] },
            { type: 'text-start' as const, id: 't' },
            ...tokens.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
            { type: 'text-end' as const, id: 't' },
            { type: 'finish' as const, finishReason: { unified: 'stop' as const, raw: 'stop' }, usage: { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: tokens.length, text: tokens.length, reasoning: undefined } } },
          ],
        }),
      };
    },
  });
}

/** Streams two model calls of one purpose at once (a map step over two chunks). */
class TwoAtOnce extends LlmNode {
  override async exec(): Promise<string[]> {
    const ask = (text: string) => this.callModel({ purpose: 'summarize', stream: true, messages: [{ role: 'user', content: text }] });
    return (await Promise.all([ask('one'), ask('two')])).map((reply) => reply.text);
  }
  override post(backpack: Parameters<LlmNode['post']>[0], _prep: unknown, texts: string[]): undefined {
    backpack.pack('texts', texts);
    return undefined;
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'bpf-deltas-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function streamedRun(runId: string, tokens: string[], modelDeltas?: ModelDeltaStorage) {
  const flow = new Flow({ namespace: 'talk', deps: { has: (k) => k === 'model', get: () => streamingModel(tokens) as never } });
  flow.addNode(ChatNode, { id: 'chat', promptFrom: 'question', stream: true });
  const live: StreamEvent[] = [];
  flow.eventStreamer.on(StreamEventType.MODEL_DELTA, (e) => void live.push(e));
  await runFlow(flow, { dataDir, runId, input: { question: 'count' }, ...(modelDeltas ? { modelDeltas } : {}) });
  const stored = await new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();
  const log = join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl');
  return { live, stored, storedDeltas: stored.filter((e) => e.type === StreamEventType.MODEL_DELTA), bytes: statSync(log).size, text: readFileSync(log, 'utf8') };
}

describe('model.delta storage', () => {
  it('two streamed calls of one node and purpose made at once are stored as two texts, not one interleaved text', async () => {
    const texts = [['alpha ', 'beta ', 'gamma'], ['one ', 'two ', 'three']];
    const model = interleavingModel(texts);
    const flow = new Flow({ namespace: 'map', deps: { has: (k) => k === 'model', get: () => model as never } });
    flow.addNode(TwoAtOnce, { id: 'sum', model: 'openai:gpt-4o' });
    const live: StreamEvent[] = [];
    flow.eventStreamer.on(StreamEventType.MODEL_DELTA, (e) => void live.push(e));
    await runFlow(flow, { dataDir, runId: 'two-at-once' });
    // The calls did interleave (else this test shows nothing).
    expect(live.map((e) => e.payload.call)).not.toEqual([...live.map((e) => e.payload.call)].sort());
    const stored = await new EventStore({ dataDir, sessionKey: 'default', runId: 'two-at-once' }).readAll();
    const folded = stored.filter((e) => e.type === StreamEventType.MODEL_DELTA);
    expect(folded.map((e) => e.payload.delta).sort()).toEqual(['alpha beta gamma', 'one two three']);
    const starts = stored.filter((e) => e.type === StreamEventType.MODEL_START).map((e) => e.payload.call);
    expect(new Set(starts).size).toBe(2);
    // runs show prints each call with its own text.
    const shown = renderTrace(buildTrace('two-at-once', stored), DEFAULT_PLACE);
    expect(shown).toContain('"alpha beta gamma"');
    expect(shown).toContain('"one two three"');
  });

  it('folds the deltas of a model call into one stored event by default; subscribers saw each one', async () => {
    const tokens = ['one', ' two', ' three', ' four'];
    const { live, storedDeltas, stored } = await streamedRun('fold', tokens);
    expect(live.map((e) => e.payload.delta)).toEqual(tokens);
    expect(storedDeltas).toHaveLength(1);
    expect(storedDeltas[0]!.payload).toMatchObject({ delta: 'one two three four', folded: true, count: 4, index: 0, purpose: 'chat' });
    // It takes the place and seq of the last delta: the log stays in order.
    expect(storedDeltas[0]!.seq).toBe(live.at(-1)!.seq);
    expect(stored.map((e) => e.seq)).toEqual([...stored.map((e) => e.seq)].sort((a, b) => a - b));
    // runs show prints the call with its whole text.
    expect(renderTrace(buildTrace('fold', stored), DEFAULT_PLACE)).toContain('✎ injected:model (chat) 9→4 tokens: "one two three four"');
  });

  it("keeps every delta with modelDeltas: 'keep', at more bytes per step", async () => {
    const tokens = Array.from({ length: 50 }, (_, i) => ` t${i}`);
    const kept = await streamedRun('keep', tokens, 'keep');
    const folded = await streamedRun('fold-50', tokens);
    expect(kept.storedDeltas.map((e) => e.payload.delta)).toEqual(tokens);
    expect(folded.storedDeltas).toHaveLength(1);
    expect(folded.bytes).toBeLessThan(kept.bytes / 3);
  });

  it("with modelDeltas: 'keep', a call whose whole text holds a secret split across tokens is stored folded and redacted; others stay kept", async () => {
    const secret = 'ghp_' + 'Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2';
    const tokens = ['the key is ', secret.slice(0, 10), secret.slice(10, 25), secret.slice(25), ' ok'];
    const { text, storedDeltas } = await streamedRun('keep-secret', tokens, 'keep');
    expect(text).not.toContain(secret.slice(0, 10));
    expect(text).not.toContain(secret.slice(10, 25));
    expect(storedDeltas).toHaveLength(1);
    expect(storedDeltas[0]!.payload).toMatchObject({ folded: true, count: 5, delta: 'the key is [REDACTED] ok' });
    const clean = await streamedRun('keep-clean', ['no ', 'secret ', 'here'], 'keep');
    expect(clean.storedDeltas.map((e) => e.payload.delta)).toEqual(['no ', 'secret ', 'here']);
  });

  it("with modelDeltas: 'keep' and a run taken over from openNewRun, a split secret of the NewRun's own patterns is folded and redacted too", async () => {
    const secret = 'ACME-' + '4417093355';
    const tokens = ['code ', secret.slice(0, 7), secret.slice(7), ' done'];
    const flow = new Flow({ namespace: 'talk', deps: { has: (k) => k === 'model', get: () => streamingModel(tokens) as never } });
    flow.addNode(ChatNode, { id: 'chat', promptFrom: 'question', stream: true });
    const newRun = await openNewRun({ dataDir, runId: 'keep-custom', redaction: { patterns: [/\bACME-[0-9]{10}\b/] } });
    await runFlow(flow, { newRun, input: { question: 'code?' }, modelDeltas: 'keep' });
    const text = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'keep-custom', 'events.jsonl'), 'utf8');
    expect(text).not.toContain(secret.slice(0, 7));
    expect(text).not.toContain(secret.slice(7));
    const stored = await new EventStore({ dataDir, sessionKey: 'default', runId: 'keep-custom' }).readAll();
    expect(stored.filter((e) => e.type === StreamEventType.MODEL_DELTA).map((e) => e.payload.delta)).toEqual(['code [REDACTED] done']);
  });

  it('a secret split across tokens is redacted in the folded log', async () => {
    const secret = 'ghp_' + 'Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2';
    const tokens = ['the key is ', secret.slice(0, 10), secret.slice(10, 25), secret.slice(25), ' ok'];
    const { text } = await streamedRun('secret', tokens);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(secret.slice(10, 25));
    expect(text).toContain('[REDACTED]');
  });

  it('folding keeps every other event in order and every call’s text (property)', () => {
    const eventArb = fc.oneof(
      fc.record({ kind: fc.constant('delta' as const), span: fc.constantFrom('a', 'b'), attempt: fc.constantFrom(1, 2), text: fc.string({ maxLength: 5 }) }),
      fc.record({ kind: fc.constant('other' as const) }),
    );
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 40 }), (specs) => {
        const batch: StreamEvent[] = specs.map((s, i) => ({
          v: 1,
          id: `e${i}`,
          seq: i + 1,
          timestamp: 1000 + i,
          runId: 'r',
          spanId: s.kind === 'delta' ? s.span : undefined,
          type: s.kind === 'delta' ? StreamEventType.MODEL_DELTA : StreamEventType.CUSTOM,
          payload: s.kind === 'delta' ? { purpose: 'p', attempt: s.attempt, delta: s.text, index: i } : { i },
        }));
        const out = foldModelDeltas(batch);
        expect(out.filter((e) => e.type === StreamEventType.CUSTOM)).toEqual(batch.filter((e) => e.type === StreamEventType.CUSTOM));
        for (let i = 1; i < out.length; i++) expect(out[i]!.seq).toBeGreaterThan(out[i - 1]!.seq);
        const textOf = (events: StreamEvent[], span: string, attempt: number) =>
          events.filter((e) => e.type === StreamEventType.MODEL_DELTA && e.spanId === span && e.payload.attempt === attempt).map((e) => e.payload.delta).join('');
        for (const span of ['a', 'b']) for (const attempt of [1, 2]) {
          expect(textOf(out, span, attempt)).toBe(textOf(batch, span, attempt));
          expect(out.filter((e) => e.type === StreamEventType.MODEL_DELTA && e.spanId === span && e.payload.attempt === attempt).length).toBeLessThanOrEqual(1);
        }
      }),
    );
  });
});
