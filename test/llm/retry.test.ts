import { APICallError, NoObjectGeneratedError } from 'ai';
import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  callWithRetry,
  classifyError,
  DEFAULT_RETRY_POLICY,
  InvalidModelOutputError,
  ModelCallError,
  ModelTimeoutError,
  parseRetryAfter,
  type RetryPolicy,
} from '../../src/nodes/llm/index.js';

const apiError = (statusCode: number | undefined, body = '{"error":{"message":"provider says no"}}', headers: Record<string, string> = {}) =>
  new APICallError({ message: 'call failed', url: 'http://x/v1/chat/completions', requestBodyValues: {}, statusCode, responseBody: body, responseHeaders: headers });

const fast: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 50 };

describe('parseRetryAfter', () => {
  it('reads seconds, retry-after-ms (which wins) and HTTP dates, case-insensitively', () => {
    expect(parseRetryAfter({ 'Retry-After': '2' })).toBe(2000);
    expect(parseRetryAfter({ 'retry-after': '0.5' })).toBe(500);
    expect(parseRetryAfter({ 'retry-after': '2', 'retry-after-ms': '150' })).toBe(150);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter({ 'retry-after': 'Thu, 01 Jan 2026 00:00:03 GMT' }, now)).toBe(3000);
    expect(parseRetryAfter({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }, now)).toBe(0);
  });

  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter({})).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': 'soon' })).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after-ms': '-5' })).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  const policy: RetryPolicy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };
  it('doubles per attempt with jitter in the upper half of the window', () => {
    expect(backoffDelay(1, policy, undefined, () => 0)).toBe(50);
    expect(backoffDelay(1, policy, undefined, () => 1)).toBe(100);
    expect(backoffDelay(3, policy, undefined, () => 1)).toBe(400);
    expect(backoffDelay(3, policy, undefined, () => 0)).toBe(200);
  });
  it('caps the delay and the provider-requested delay at maxDelayMs', () => {
    expect(backoffDelay(10, policy, undefined, () => 1)).toBe(1000);
    expect(backoffDelay(1, policy, 250)).toBe(250);
    expect(backoffDelay(1, policy, 60_000)).toBe(1000);
  });
});

describe('classifyError', () => {
  it("tells the SDK's errors apart by their marker, with no SDK loaded by the library: an answer of the wrong shape, an error named like one", () => {
    const wrongShape = new NoObjectGeneratedError({ message: 'No object generated.', cause: new Error('expected "action"'), text: '{"x":1}', response: undefined as never, usage: undefined as never, finishReason: 'stop' });
    const e = classifyError(wrongShape, 'decide', []);
    expect(e).toBeInstanceOf(InvalidModelOutputError);
    expect(e.message).toBe(`decide: the model's answer does not match the expected structure: expected "action"`);
    // Only the marker counts: a plain error with the SDK's name and a status is not read as the provider's answer.
    const impostor = Object.assign(new Error('status 500'), { name: 'AI_APICallError', statusCode: 500 });
    expect((classifyError(impostor, 'call', []) as ModelCallError).status).toBeUndefined();
  });
  it('retries 429 and 5xx with the Retry-After delay, and keeps the provider message', () => {
    const e = classifyError(apiError(429, undefined, { 'retry-after': '1' }), 'call', []) as ModelCallError;
    expect(e).toBeInstanceOf(ModelCallError);
    expect([e.status, e.retryable, e.retryAfterMs]).toEqual([429, true, 1000]);
    expect(e.message).toContain('provider says no');
    expect((classifyError(apiError(503), 'call', []) as ModelCallError).retryable).toBe(true);
  });
  it('does not retry other 4xx and says what to check', () => {
    const e = classifyError(apiError(401), 'call', []) as ModelCallError;
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/401 \(check the API key\): provider says no/);
    expect((classifyError(apiError(404), 'call', []) as ModelCallError).message).toContain('check the model id');
  });
  it('removes secrets from the message', () => {
    const e = classifyError(apiError(400, '{"error":{"message":"bad key sk-live-abcdef123"}}'), 'call', ['sk-live-abcdef123']);
    expect(e.message).not.toContain('sk-live-abcdef123');
    expect(e.message).toContain('***');
  });
});

describe('callWithRetry', () => {
  it('retries retryable failures, reporting each, then succeeds', async () => {
    let calls = 0;
    const retried: number[] = [];
    const result = await callWithRetry(
      async () => {
        calls++;
        if (calls < 3) throw apiError(500);
        return 'ok';
      },
      { what: 'call', policy: fast, secrets: [], onRetry: (_e, attempt) => retried.push(attempt) },
    );
    expect([result, calls, retried]).toEqual(['ok', 3, [1, 2]]);
  });

  it('waits for the provider-requested delay', async () => {
    const times: number[] = [];
    await callWithRetry(
      async () => {
        times.push(performance.now());
        if (times.length === 1) throw apiError(429, undefined, { 'retry-after-ms': '40' });
        return 'ok';
      },
      { what: 'call', policy: { ...fast, maxDelayMs: 1000 }, secrets: [] },
    );
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(35);
  });

  it('gives up after maxAttempts with the last error', async () => {
    let calls = 0;
    const failing = callWithRetry(async () => (calls++, Promise.reject(apiError(502))), { what: 'call', policy: fast, secrets: [] });
    await expect(failing).rejects.toThrow(/502.*gave up after 3 attempts/);
    expect(calls).toBe(3);
  });

  it('does not retry a 400', async () => {
    let calls = 0;
    await expect(callWithRetry(async () => (calls++, Promise.reject(apiError(400))), { what: 'call', policy: fast, secrets: [] })).rejects.toThrow(/refused the request with 400/);
    expect(calls).toBe(1);
  });

  it('turns an attempt beyond timeoutMs into ModelTimeoutError, not retried', async () => {
    let calls = 0;
    const slow = (signal: AbortSignal) =>
      new Promise<string>((_resolve, reject) => {
        calls++;
        signal.addEventListener('abort', () => reject(signal.reason));
      });
    await expect(callWithRetry(slow, { what: 'call', policy: fast, timeoutMs: 20, secrets: [] })).rejects.toBeInstanceOf(ModelTimeoutError);
    expect(calls).toBe(1);
  });

  it('stops on the run signal, also while waiting between attempts', async () => {
    const controller = new AbortController();
    const reason = new Error('run cancelled');
    const pending = callWithRetry(
      async () => {
        setTimeout(() => controller.abort(reason), 5);
        throw apiError(500);
      },
      { what: 'call', policy: { maxAttempts: 3, baseDelayMs: 10_000, maxDelayMs: 10_000 }, signal: controller.signal, secrets: [] },
    );
    await expect(pending).rejects.toBe(reason);
  });

  it('uses sane defaults', () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ maxAttempts: 3, baseDelayMs: 500, maxDelayMs: 30_000 });
  });
});
