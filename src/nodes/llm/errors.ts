/**
 * Errors of the LLM nodes. Messages name the node, provider and status, never a secret: every message built here
 * passes through {@link redactSecrets} with the secrets the caller knows.
 */
import { usableSecrets, withoutSecrets } from './secrets.js';

/** Base class of the errors the LLM nodes raise. */
export class LlmError extends Error {
  override name = 'LlmError';
}

/** A model name or provider could not be resolved (unknown provider, bad spec, missing provider package or API key). */
export class ModelResolutionError extends LlmError {
  override name = 'ModelResolutionError';
}

/** The provider answered with an error, or its answer could not be read. */
export class ModelCallError extends LlmError {
  override name = 'ModelCallError';
  constructor(
    message: string,
    /** HTTP status, when the provider answered. */
    readonly status: number | undefined,
    /** True for errors worth retrying (429, 5xx, unreadable response, dropped connection). */
    readonly retryable: boolean,
    /** Delay the provider asked for (Retry-After / retry-after-ms), in ms. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** A model call took longer than its `timeoutMs`. */
export class ModelTimeoutError extends LlmError {
  override name = 'ModelTimeoutError';
  constructor(readonly timeoutMs: number, what: string) {
    super(`${what} timed out after ${timeoutMs} ms`);
  }
}

/**
 * A model call or a tool call was stopped by the run's abort signal. The node stops waiting for it at once, also when
 * the provider, the injected model or the tool ignores the signal (its later outcome is ignored). `cause` is the
 * signal's reason.
 */
export class CallAbortedError extends LlmError {
  override name = 'CallAbortedError';
  constructor(what: string, reason: unknown) {
    super(`${what} was stopped: the run was aborted (${reason instanceof Error ? reason.message : String(reason)})`, { cause: reason });
  }
}

/** The model's answer did not fit what the node asked for (e.g. a decision that is not one of the node's actions). */
export class InvalidModelOutputError extends LlmError {
  override name = 'InvalidModelOutputError';
  constructor(message: string, /** What the model returned. */ readonly output: unknown) {
    super(message);
  }
}

/** Replaces every occurrence of each secret (non-empty strings of 4+ chars) in `text` with `***`. */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  return withoutSecrets(text, usableSecrets(secrets)).replace(/Bearer\s+[A-Za-z0-9._~+/=-]{8,}/g, 'Bearer ***');
}
