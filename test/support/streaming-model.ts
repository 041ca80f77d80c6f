import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

/**
 * An AI SDK mock model that streams `tokens` as text deltas (one chunk each), then finishes with token usage.
 * Used by the live-token tests and `npm run bench:deltas`.
 */
export function streamingModel(tokens: readonly string[]): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'stream-start' as const, warnings: [] },
          { type: 'text-start' as const, id: 't' },
          ...tokens.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
          { type: 'text-end' as const, id: 't' },
          {
            type: 'finish' as const,
            finishReason: { unified: 'stop' as const, raw: 'stop' },
            usage: { inputTokens: { total: 9, noCache: 9, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: tokens.length, text: tokens.length, reasoning: undefined } },
          },
        ],
      }),
    }),
  });
}
