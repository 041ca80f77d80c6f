import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StreamEventType } from '../../src/events/index.js';
import { Flow } from '../../src/nodes/index.js';
import { BaseChatCompletionNode, ChatNode, ModelCallError, ModelTimeoutError } from '../../src/nodes/llm/index.js';
import { startOpenAIServer, type OpenAIServer } from './fixtures/openai-server.js';
import { depsOf, failureOf, recordingStreamer, rootCause, scriptedModel } from './helpers.js';

const SECRET = 'sk-test-SECRET-0123456789';
let server: OpenAIServer;
beforeAll(async () => (server = await startOpenAIServer()));
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
  server.respondWith(() => ({ kind: 'error', status: 500, message: 'no reply scripted' }));
});

function chatFlow(params: Record<string, unknown> = {}) {
  const { streamer, events } = recordingStreamer();
  const flow = new Flow({ eventStreamer: streamer });
  const node = flow.addNode(ChatNode, {
    id: 'chat',
    model: 'openai-compatible:test-model',
    baseURL: server.baseURL,
    apiKey: SECRET,
    promptFrom: 'question',
    retry: { baseDelayMs: 1, maxDelayMs: 200 },
    ...params,
  });
  return { flow, node, events };
}

describe('ChatNode against an OpenAI-compatible server', () => {
  it('sends the system prompt, prompt and temperature, and packs the answer under outputTo', async () => {
    const { flow } = chatFlow({ systemPrompt: 'You are terse.', temperature: 0.2, outputTo: 'reply' });
    server.enqueue({ kind: 'text', text: 'Paris.' });
    await flow.run({ question: 'Capital of France?' });
    expect(flow.backpack.unpack('reply')).toBe('Paris.');
    const body = server.requests[0]!.body;
    expect(body.model).toBe('test-model');
    expect(body.temperature).toBe(0.2);
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Capital of France?' },
    ]);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(server.requests[0]!.raw).not.toContain(SECRET);
  });

  it('streams: MODEL_START, one MODEL_DELTA per chunk, MODEL_END with token usage', async () => {
    const { flow, events } = chatFlow({ stream: true });
    server.enqueue({ kind: 'text', text: 'one two three', promptTokens: 12, completionTokens: 3 });
    await flow.run({ question: 'count' });
    expect(server.requests[0]!.body.stream).toBe(true);
    expect(flow.backpack.unpack('response')).toBe('one two three');
    const model = events.filter((e) => e.type.startsWith('model.'));
    expect(model.map((e) => e.type)).toEqual([
      StreamEventType.MODEL_START,
      StreamEventType.MODEL_DELTA,
      StreamEventType.MODEL_DELTA,
      StreamEventType.MODEL_DELTA,
      StreamEventType.MODEL_END,
    ]);
    expect(model.slice(1, 4).map((e) => e.payload.delta).join('')).toBe('one two three');
    expect(model[4]!.payload.usage).toEqual({ inputTokens: 12, outputTokens: 3, totalTokens: 15 });
    expect(model.every((e) => e.nodeId === 'chat' && e.runId !== undefined && e.spanId !== undefined)).toBe(true);
  });

  it('extends the conversation under conversation and adds context keys to the system prompt', async () => {
    const { flow } = chatFlow({ promptFrom: undefined, conversation: 'conversation', contextFrom: ['profile'] });
    server.enqueue({ kind: 'text', text: 'Hello Ada.' });
    await flow.run({ conversation: [{ role: 'user', content: 'Hi' }], profile: { name: 'Ada' } });
    expect(server.requests[0]!.body.messages[0]).toEqual({ role: 'system', content: 'Context:\nprofile: {"name":"Ada"}' });
    expect(flow.backpack.unpack('conversation')).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello Ada.' }] },
    ]);
  });

  it('retries a 429 after the Retry-After delay and a 500, then succeeds; failed attempts are quarantined', async () => {
    const { flow, events } = chatFlow();
    server.enqueue(
      { kind: 'error', status: 429, message: 'rate limited', headers: { 'retry-after-ms': '60' } },
      { kind: 'error', status: 500, message: 'upstream broke' },
      { kind: 'text', text: 'finally' },
    );
    const started = performance.now();
    await flow.run({ question: 'q' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    expect(flow.backpack.unpack('response')).toBe('finally');
    expect(server.requests).toHaveLength(3);
    const retries = events.filter((e) => e.type === StreamEventType.MODEL_END && e.payload.error !== undefined);
    expect(retries.map((e) => e.payload.retryInMs)).toEqual([60, expect.any(Number)]);
    const quarantined = flow.backpack.getQuarantined();
    expect([...quarantined.keys()]).toEqual(['chat.failed.model-chat.1', 'chat.failed.model-chat.2']);
    expect(quarantined.get('chat.failed.model-chat.1')!.value).toMatchObject({ status: 429 });
  });

  it('retries a streaming call that failed before its first chunk', async () => {
    const { flow, events } = chatFlow({ stream: true });
    server.enqueue({ kind: 'error', status: 502, message: 'bad gateway' }, { kind: 'text', text: 'streamed after retry' });
    await flow.run({ question: 'q' });
    expect(flow.backpack.unpack('response')).toBe('streamed after retry');
    expect(server.requests.map((r) => r.body.stream)).toEqual([true, true]);
    const ends = events.filter((e) => e.type === StreamEventType.MODEL_END);
    expect(ends.map((e) => e.payload.error === undefined)).toEqual([false, true]);
    expect(ends[1]!.payload.attempt).toBe(2);
  });

  it('retries a malformed JSON response', async () => {
    const { flow } = chatFlow();
    server.enqueue({ kind: 'malformed' }, { kind: 'text', text: 'ok now' });
    await flow.run({ question: 'q' });
    expect(flow.backpack.unpack('response')).toBe('ok now');
    expect(server.requests).toHaveLength(2);
  });

  it('fails clearly on a 400 without retrying and without the key in the message or events', async () => {
    const { flow, events } = chatFlow();
    server.enqueue({ kind: 'error', status: 400, message: `invalid model for key ${SECRET}` });
    const error = await failureOf(flow.run({ question: 'q' }));
    expect(server.requests).toHaveLength(1);
    const cause = rootCause(error);
    expect(cause).toBeInstanceOf(ModelCallError);
    expect(cause.message).toMatch(/node 'chat': model openai-compatible:test-model \(chat\): provider refused the request with 400: invalid model for key \*\*\*/);
    expect(JSON.stringify(events)).not.toContain(SECRET);
    expect(error.message).not.toContain(SECRET);
  });

  it('gives up after the retry budget on repeated 500s', async () => {
    const { flow } = chatFlow({ retry: { maxAttempts: 2, baseDelayMs: 1 } });
    server.respondWith(() => ({ kind: 'error', status: 503, message: 'overloaded' }));
    const error = await failureOf(flow.run({ question: 'q' }));
    expect(rootCause(error).message).toMatch(/503: overloaded \(gave up after 2 attempts\)/);
    expect(server.requests).toHaveLength(2);
  });

  it('times out a response slower than timeoutMs', async () => {
    const { flow } = chatFlow({ timeoutMs: 50 });
    server.enqueue({ kind: 'slow', delayMs: 2000, text: 'too late' });
    const started = performance.now();
    const error = rootCause(await failureOf(flow.run({ question: 'q' })));
    expect(performance.now() - started).toBeLessThan(1500);
    expect(error).toBeInstanceOf(ModelTimeoutError);
    expect(error.message).toMatch(/timed out after 50 ms/);
    expect(flow.backpack.unpack('response')).toBeUndefined();
  });

  it('stops when the run is aborted', async () => {
    const { flow } = chatFlow();
    server.enqueue({ kind: 'slow', delayMs: 2000, text: 'too late' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user cancelled')), 30);
    const error = rootCause(await failureOf(flow.run({ question: 'q' }, { signal: controller.signal })));
    expect(error.message).toBe('user cancelled');
  });

  it('retries when the server cannot be reached, then fails with a clear message', async () => {
    const closed = await startOpenAIServer();
    await closed.close();
    const { flow } = chatFlow({ baseURL: closed.baseURL, retry: { maxAttempts: 2, baseDelayMs: 1 } });
    const error = rootCause(await failureOf(flow.run({ question: 'q' })));
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error.message).toMatch(/no answer from the provider .*gave up after 2 attempts/);
    expect((error as ModelCallError).status).toBeUndefined();
  });

  it('uses a model injected through the dependencies instead of the model param', async () => {
    const { model, prompts } = scriptedModel(['from the mock']);
    const { streamer, events } = recordingStreamer();
    const flow = new Flow({ eventStreamer: streamer, deps: depsOf({ model }) });
    flow.addNode(ChatNode, { id: 'chat', promptFrom: 'question', systemPrompt: 'sys' });
    await flow.run({ question: 'hello mock' });
    expect(flow.backpack.unpack('response')).toBe('from the mock');
    expect(prompts[0]).toContain('hello mock');
    expect(events.find((e) => e.type === StreamEventType.MODEL_START)!.payload.model).toBe('injected:model');
    expect(events.find((e) => e.type === StreamEventType.MODEL_END)!.payload.usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    expect(server.requests).toHaveLength(0);
  });

  it('refuses params without a prompt source, and exports as BaseChatCompletionNode too', () => {
    expect(BaseChatCompletionNode).toBe(ChatNode);
    const flow = new Flow();
    expect(() => flow.addNode(ChatNode, { id: 'bad', model: 'openai:gpt-4o' })).toThrow(/ChatNode 'bad': invalid params: .*set promptFrom or conversation/);
    expect(() => flow.addNode(ChatNode, { id: 'bad2', model: 'openai:gpt-4o', promptFrom: 'q', temperature: 7 })).toThrow(/params\.temperature/);
    expect(() => flow.addNode(ChatNode, { id: 'bad3', promptFrom: 'q', modle: 'x' })).toThrow(/modle/);
  });

  it('names the missing prompt key', async () => {
    const { flow } = chatFlow();
    await expect(flow.run()).rejects.toThrow(/question/);
    const { flow: conversationFlow } = chatFlow({ promptFrom: undefined, conversation: 'history' });
    await expect(conversationFlow.run({ history: [{ role: 'robot', content: 'x' }] })).rejects.toThrow(
      /Node 'chat': backpack key 'history' must hold an array of messages \(\{ role, content \}\); at \[0\.role\]/,
    );
    expect(server.requests).toHaveLength(0);
  });
});
