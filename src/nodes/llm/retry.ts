import type { APICallError, NoObjectGeneratedError } from 'ai';
import { isAiSdkError } from './ai-sdk.js';
import { delay } from '../../flow/index.js';
import { CallAbortedError, InvalidModelOutputError, LlmError, ModelCallError, ModelTimeoutError, redactSecrets } from './errors.js';

/** How model calls are retried (429 and 5xx and unreadable responses only). */
export interface RetryPolicy {
  /** Total attempts, at least 1. Default 3. */
  maxAttempts: number;
  /** Delay before the second attempt, in ms; doubles per attempt. Default 500. */
  baseDelayMs: number;
  /** Cap on any one delay (also on a provider's Retry-After), in ms. Default 30,000. */
  maxDelayMs: number;
}

/** The default retry policy. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ maxAttempts: 3, baseDelayMs: 500, maxDelayMs: 30_000 });

/**
 * The delay a provider asked for, in ms: `retry-after-ms`, else `Retry-After` as seconds or as an HTTP date
 * (relative to `now`). Undefined when absent or unreadable. Header names are matched case-insensitively.
 */
export function parseRetryAfter(headers: Record<string, string> | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  const ms = lower['retry-after-ms'];
  if (ms !== undefined && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  const value = lower['retry-after'];
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Delay before attempt `attempt + 1` after attempt `attempt` (1-based) failed: the provider's `retryAfterMs` when given,
 * else exponential backoff `baseDelayMs * 2^(attempt-1)` with full jitter in its upper half; capped at `maxDelayMs`.
 */
export function backoffDelay(attempt: number, policy: RetryPolicy, retryAfterMs?: number, random: () => number = Math.random): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxDelayMs);
  const exp = policy.baseDelayMs * 2 ** (attempt - 1);
  const capped = Math.min(exp, policy.maxDelayMs);
  return Math.round(capped / 2 + (random() * capped) / 2);
}

/**
 * Turns whatever a provider call threw into a {@link ModelCallError} (or keeps an LlmError): status, the provider's
 * own message, whether it is retryable, the Retry-After delay. Secrets are removed from the message.
 */
export function classifyError(error: unknown, what: string, secrets: readonly (string | undefined)[]): LlmError {
  if (error instanceof LlmError) return error;
  const clean = (s: string): string => redactSecrets(s, secrets);
  if (isAiSdkError(error, 'AI_NoObjectGeneratedError')) {
    const failed = error as NoObjectGeneratedError;
    return new InvalidModelOutputError(clean(`${what}: the model's answer does not match the expected structure: ${firstLine(failed.cause instanceof Error ? failed.cause.message : failed.message)}`), failed.text);
  }
  if (isAiSdkError(error, 'AI_APICallError')) {
    const failed = error as APICallError;
    const status = failed.statusCode;
    const providerMessage = providerErrorMessage(failed.responseBody) ?? failed.message;
    if (status === undefined) {
      return new ModelCallError(clean(`${what}: no answer from the provider (${providerMessage})`), undefined, true);
    }
    if (status === 429 || status >= 500) {
      const retryAfterMs = parseRetryAfter(failed.responseHeaders);
      return new ModelCallError(clean(`${what}: provider answered ${status}: ${providerMessage}`), status, true, retryAfterMs);
    }
    if (status >= 200 && status < 300) {
      return new ModelCallError(clean(`${what}: the provider's response could not be read (${providerMessage})`), status, true);
    }
    const hint = status === 401 || status === 403 ? ' (check the API key)' : status === 404 ? ' (check the model id and base URL)' : '';
    return new ModelCallError(clean(`${what}: provider refused the request with ${status}${hint}: ${providerMessage}`), status, false);
  }
  const name = error instanceof Error ? error.name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  if (['AI_JSONParseError', 'AI_TypeValidationError', 'AI_InvalidResponseDataError', 'AI_EmptyResponseBodyError'].includes(name)) {
    return new ModelCallError(clean(`${what}: the provider's response could not be read (${firstLine(message)})`), undefined, true);
  }
  return new ModelCallError(clean(`${what}: ${name}: ${firstLine(message)}`), undefined, false);
}

function providerErrorMessage(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    if (parsed.error && typeof parsed.error.message === 'string') return parsed.error.message;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON: fall through to the raw text
  }
  return firstLine(body).slice(0, 300);
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}...` : line;
}

/** Options of {@link callWithRetry}. */
export interface CallOptions {
  /** What is called, for messages (e.g. "node 'chat': model openai:gpt-4o"). */
  what: string;
  policy: RetryPolicy;
  /** Per-attempt time limit in ms; none when undefined. */
  timeoutMs?: number;
  /** The run's abort signal: aborting stops the call and the waits, and is never retried. */
  signal?: AbortSignal;
  /** Secrets to keep out of error messages. */
  secrets: readonly (string | undefined)[];
  /** Told about every failed attempt that will be retried, before the wait. */
  onRetry?: (error: ModelCallError, attempt: number, delayMs: number) => void;
  /** Source of jitter (tests pass a fixed one). */
  random?: () => number;
}

/**
 * Calls `fn(signal)` until it succeeds or fails for good: 429, 5xx and unreadable responses are retried per the policy
 * (honouring Retry-After, capped); other errors, timeouts and aborts are not. Each attempt gets a signal that fires on
 * the run's abort or the attempt's timeout, and is not waited for past it, whether `fn` honours the signal or not.
 * Rejects with a {@link ModelCallError}, a {@link ModelTimeoutError}, a {@link CallAbortedError} (an abort during an
 * attempt) or the abort reason (an abort while waiting to retry).
 */
export async function callWithRetry<T>(fn: (signal: AbortSignal) => Promise<T>, options: CallOptions): Promise<T> {
  const { policy, signal: runSignal, timeoutMs, what } = options;
  for (let attempt = 1; ; attempt++) {
    runSignal?.throwIfAborted();
    const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    const signals = [runSignal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length === 1 ? signals[0]! : AbortSignal.any(signals.length ? signals : [new AbortController().signal]);
    let failure: LlmError;
    try {
      // Raced with the signal: a provider or an injected model that ignores it is not waited for.
      return await raceAbort(fn(signal), signal);
    } catch (error) {
      if (runSignal?.aborted) throw new CallAbortedError(what, runSignal.reason);
      if (timeout?.aborted) throw new ModelTimeoutError(timeoutMs!, what);
      failure = classifyError(error, what, options.secrets);
    }
    if (!(failure instanceof ModelCallError) || !failure.retryable || attempt >= policy.maxAttempts) {
      if (failure instanceof ModelCallError && failure.retryable && policy.maxAttempts > 1) {
        failure.message = `${failure.message} (gave up after ${attempt} attempts)`;
      }
      throw failure;
    }
    const delayMs = backoffDelay(attempt, policy, failure.retryAfterMs, options.random);
    options.onRetry?.(failure, attempt, delayMs);
    await delay(delayMs, runSignal);
  }
}

/**
 * `work`, or a rejection with the signal's reason as soon as `signal` aborts, whichever comes first: a call that
 * ignores the signal is not waited for. Its later outcome is dropped (a later rejection is handled, never unhandled).
 */
export function raceAbort<T>(work: T | PromiseLike<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return Promise.resolve(work);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(work).then(
      (value) => (signal.removeEventListener('abort', onAbort), resolve(value)),
      (error: unknown) => (signal.removeEventListener('abort', onAbort), reject(error)),
    );
  });
}
