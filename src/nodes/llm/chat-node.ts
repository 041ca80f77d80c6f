import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { BackpackHandle } from '../../backpack/index.js';
import type { RunScope } from '../../flow/index.js';
import { LlmNode, llmParamsShape, type LlmParams, type ModelReply } from './llm-node.js';
import { promptParamsShape, readPrompt, type Prompt, type PromptParams } from './prompt.js';

/** Params of {@link ChatNode}. */
export const chatParamsSchema = z
  .strictObject({
    ...llmParamsShape,
    ...promptParamsShape,
    /** Backpack key the response text is packed under. Default `'response'`. */
    outputTo: z.string().min(1).optional(),
    /** Stream the response (MODEL_DELTA events). Default false. */
    stream: z.boolean().optional(),
  })
  .refine((p) => p.promptFrom !== undefined || p.conversation !== undefined, { message: 'set promptFrom or conversation (where the prompt is in the backpack)' });

/** The params of a ChatNode, typed. */
export type ChatParams = LlmParams & PromptParams & { outputTo?: string; stream?: boolean };

/** What ChatNode's prep reads. */
export interface ChatPrep extends Prompt {
  signal?: AbortSignal;
}

/**
 * A chat-completion node (PRD-004 §3.2): reads its prompt (`promptFrom`) or conversation (`conversation`) and context
 * from the backpack, calls the model (streaming when `stream` is set) and packs the answer under `outputTo`
 * (default `'response'`). With `conversation`, the conversation is packed back with the new turn appended.
 */
export class ChatNode extends LlmNode<ChatPrep, ModelReply> {
  static override paramsSchema: z.ZodType = chatParamsSchema;

  /** The node's params, typed. */
  protected get chatParams(): ChatParams {
    return this.params as ChatParams;
  }

  override prep(backpack: BackpackHandle, scope: RunScope): ChatPrep {
    return { ...readPrompt(this.id, backpack, this.chatParams, this.chatParams.systemPrompt), signal: scope.signal };
  }

  override exec(prep: ChatPrep): Promise<ModelReply> {
    return this.callModel({ system: prep.system, messages: prep.messages, stream: this.chatParams.stream, signal: prep.signal, purpose: 'chat' });
  }

  override post(backpack: BackpackHandle, prep: ChatPrep, reply: ModelReply): string | undefined {
    const p = this.chatParams;
    backpack.pack(p.outputTo ?? 'response', reply.text);
    if (p.conversation !== undefined) {
      const conversation: ModelMessage[] = [...prep.messages, ...reply.responseMessages];
      backpack.pack(p.conversation, toPlainMessages(conversation));
    }
    return undefined;
  }
}

/** The chat node under the name the specs use. */
export { ChatNode as BaseChatCompletionNode };

/** Messages as plain JSON data (drops undefined fields and class instances), fit for the backpack. */
export function toPlainMessages(messages: readonly ModelMessage[]): ModelMessage[] {
  return JSON.parse(JSON.stringify(messages)) as ModelMessage[];
}
