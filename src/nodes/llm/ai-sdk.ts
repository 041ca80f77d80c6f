/**
 * The AI SDK (`ai`), imported on the first model call instead of when the LLM nodes load. Importing it costs more
 * than the rest of the library together (about 130 ms of a 230 ms `import 'backpackflow'` measured here), and every
 * user of the library and every CLI command paid that at start, whether or not a flow calls a model. One ES module
 * import, so a user's own `import { ... } from 'ai'` and ours share one copy.
 */
import type * as AiSdk from 'ai';

export type { AiSdk };

let loading: Promise<typeof AiSdk> | undefined;

/** The AI SDK, imported on the first call. */
export function loadAiSdk(): Promise<typeof AiSdk> {
  return (loading ??= import('ai'));
}

/**
 * Whether `error` is the AI SDK's error named `name` (e.g. `AI_APICallError`), by the SDK's own test: every SDK error
 * carries `Symbol.for('vercel.ai.error.<name>')` set to true, which holds across copies of the package (what its
 * `isInstance` checks), so errors are told apart without importing the SDK.
 */
export function isAiSdkError(error: unknown, name: string): boolean {
  const marker = Symbol.for(`vercel.ai.error.${name}`);
  return error !== null && typeof error === 'object' && (error as Record<symbol, unknown>)[marker] === true;
}
