import { MockLanguageModelV3 } from 'ai/test';
import type { DependencyLookup } from '../../src/nodes/index.js';
import { EventStreamer, type StreamEvent } from '../../src/events/index.js';

/** A dependency lookup over a plain record (what a DependencyContainer provides). */
export function depsOf(values: Record<string, unknown>): DependencyLookup {
  return {
    has: (key) => Object.hasOwn(values, key),
    get: <T>(key: string) => {
      if (!Object.hasOwn(values, key)) throw new Error(`no dependency '${key}'`);
      return values[key] as T;
    },
  };
}

/** An event streamer and the list of every event it emitted. */
export function recordingStreamer(): { streamer: EventStreamer; events: StreamEvent[] } {
  const streamer = new EventStreamer();
  const events: StreamEvent[] = [];
  streamer.on('*', (e) => void events.push(e));
  return { streamer, events };
}

/**
 * An AI SDK mock model that answers with the given texts in order and records every prompt it was given (as JSON).
 */
export function scriptedModel(answers: string[]): { model: MockLanguageModelV3; prompts: string[] } {
  const prompts: string[] = [];
  let i = 0;
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(JSON.stringify(options.prompt));
      const text = answers[Math.min(i++, answers.length - 1)] ?? '';
      return {
        content: [{ type: 'text', text }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 3, text: 3, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
  return { model, prompts };
}

/** The error `promise` rejects with (fails the test when it resolves). */
export async function failureOf(promise: Promise<unknown>): Promise<Error & { cause?: unknown }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { cause?: unknown };
  }
  throw new Error('expected a rejection, but the promise resolved');
}

/** The innermost cause of an error (a flow wraps a node's error). */
export function rootCause(error: Error & { cause?: unknown }): Error {
  let current: Error & { cause?: unknown } = error;
  while (current.cause instanceof Error) current = current.cause;
  return current;
}
