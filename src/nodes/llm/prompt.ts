import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { BackpackHandle } from '../../backpack/index.js';
import { LlmError } from './errors.js';

/** Params that say where a node's prompt comes from in the backpack. */
export const promptParamsShape = {
  /** Backpack key of the user prompt (a string; other values are sent as JSON). */
  promptFrom: z.string().min(1).optional(),
  /** Backpack key of a conversation: an array of AI SDK model messages (`{ role, content }`). */
  conversation: z.string().min(1).optional(),
  /** Backpack keys whose values are given to the model as context (in the system prompt). */
  contextFrom: z.array(z.string().min(1)).optional(),
  /** Namespace pattern (D5): the readable active items from matching namespaces are given as context. */
  contextNamespace: z.string().min(1).optional(),
};

/** The prompt params, typed. */
export interface PromptParams {
  promptFrom?: string;
  conversation?: string;
  contextFrom?: string[];
  contextNamespace?: string;
}

/** A prompt read from the backpack. */
export interface Prompt {
  system?: string;
  messages: ModelMessage[];
}

const messageSchema = z.looseObject({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.unknown() });

/**
 * Reads a node's prompt from the backpack: the conversation under `conversation`, then the prompt under `promptFrom` as
 * a user message; context values (from `contextFrom` and `contextNamespace`) go into the system prompt. Only active
 * items are read, so quarantined data never reaches the model. Throws naming the node and key when the prompt is
 * missing or malformed. With `promptOnlyToStart`, the prompt is added only when the conversation is still empty (a loop
 * that packs the conversation back must not ask the question twice).
 */
export function readPrompt(
  nodeId: string,
  backpack: BackpackHandle,
  params: PromptParams,
  systemPrompt: string | undefined,
  options: { promptOnlyToStart?: boolean } = {},
): Prompt {
  const messages: ModelMessage[] = [];
  if (params.conversation !== undefined) {
    const value = backpack.unpack(params.conversation);
    if (value !== undefined) {
      const parsed = z.array(messageSchema).safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new LlmError(`Node '${nodeId}': backpack key '${params.conversation}' must hold an array of messages ({ role, content }); at [${issue.path.join('.')}]: ${issue.message}`);
      }
      messages.push(...(structuredClone(value) as ModelMessage[]));
    }
  }
  if (params.promptFrom !== undefined && !(options.promptOnlyToStart && messages.length > 0)) {
    const value = backpack.unpackRequired(params.promptFrom);
    messages.push({ role: 'user', content: typeof value === 'string' ? value : JSON.stringify(value) });
  }
  if (messages.length === 0) {
    throw new LlmError(
      params.conversation === undefined && params.promptFrom === undefined
        ? `Node '${nodeId}': no prompt: set the promptFrom or conversation param`
        : `Node '${nodeId}': no prompt: backpack key '${params.conversation}' is missing or empty`,
    );
  }
  const context = readContext(backpack, params);
  const parts = [systemPrompt, context].filter((s): s is string => s !== undefined && s !== '');
  return { system: parts.length ? parts.join('\n\n') : undefined, messages };
}

function readContext(backpack: BackpackHandle, params: PromptParams): string | undefined {
  const entries = new Map<string, unknown>();
  if (params.contextNamespace !== undefined) {
    for (const [key, value] of Object.entries(backpack.unpackByNamespace(params.contextNamespace))) entries.set(key, value);
  }
  for (const key of params.contextFrom ?? []) {
    const value = backpack.unpack(key);
    if (value !== undefined) entries.set(key, value);
  }
  for (const key of [params.promptFrom, params.conversation]) if (key !== undefined) entries.delete(key);
  if (entries.size === 0) return undefined;
  const lines = [...entries].map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return `Context:\n${lines.join('\n')}`;
}
