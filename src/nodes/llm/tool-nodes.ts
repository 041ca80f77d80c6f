import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { BackpackHandle } from '../../backpack/index.js';
import type { RunScope } from '../../flow/index.js';
import { ownerMayConfigure } from '../backpack-node.js';
import { currentExecution } from '../execution.js';
import { ChatNode, chatParamsSchema, toPlainMessages, type ChatParams } from './chat-node.js';
import { LlmError } from './errors.js';
import { LlmNode, llmParamsShape, type LlmParams, type ModelReply } from './llm-node.js';
import { promptParamsShape, readPrompt, type Prompt, type PromptParams } from './prompt.js';
import { checkToolName, checkToolTimeout, collectTools, toModelTools, toolResultMessage, type LlmTool, type ToolCallRecord, type ToolResultRecord } from './tools.js';

/** Action a tool-choosing step returns when the model called tools. */
export const TOOLS_ACTION = 'tools';
/** Action a tool-choosing step returns when the model answered without calling a tool. */
export const ANSWER_ACTION = 'answer';

const toolNames = z.array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a tool name is 1-64 letters, digits, _ or -'));

/**
 * An LLM node that offers tools: those registered with {@link registerTool} plus those its `tools` param names from
 * the `tools` dependency (a record of name to {@link LlmTool}).
 */
export class ToolUsingNode<P = any, E = any> extends LlmNode<P, E> {
  readonly #registered = new Map<string, LlmTool>();

  /**
   * Registers a zod-typed tool on this node (configuration, shared by every run of the node): by the code that builds
   * the flow, or the node's own code. Refused (an LlmError) from another node's code, which reaches this node through
   * routes: the tool's code runs as this node.
   */
  registerTool<I, O>(name: string, tool: LlmTool<I, O>): this {
    const running = currentExecution.getStore();
    if (running !== undefined && running.node !== this) {
      throw new LlmError(`Node '${running.node.id}' cannot register a tool on node '${this.id}': its code would run as that node; a node registers tools only on itself`);
    }
    if (running === undefined && !ownerMayConfigure(this)) {
      throw new LlmError(`Code outside every node's execution cannot register a tool on node '${this.id}' once its flow's first run has started: register tools before, or from the node's own code`);
    }
    checkToolName(name, this.id);
    if (typeof tool?.execute !== 'function' || typeof tool.inputSchema?.safeParse !== 'function') {
      throw new LlmError(`Node '${this.id}': tool '${name}' needs a description, a zod inputSchema and an execute function`);
    }
    checkToolTimeout(this.id, name, tool as LlmTool);
    // A copy of what the library calls, read once: the caller keeps its object, and nobody reaches this one.
    this.#registered.set(name, Object.freeze({ ...(tool as LlmTool) }));
    return this;
  }

  /**
   * The tools this node offers, by name: to the node's own code, and to the owner's before the flow's first run.
   * Refused (an LlmError) to another node's code, which reaches this node through routes, and to code in no execution
   * once a run has started (node code can get there): a tool's functions and schema run as this node, and that code
   * could change them (its `execute`, its schema's `safeParse`).
   */
  get tools(): Map<string, LlmTool> {
    const running = currentExecution.getStore();
    if (running !== undefined && running.node !== this) {
      throw new LlmError(`Node '${running.node.id}' cannot read the tools of node '${this.id}': they run as that node`);
    }
    if (running === undefined && !ownerMayConfigure(this)) {
      throw new LlmError(`Code outside every node's execution cannot read the tools of node '${this.id}' once its flow's first run has started (they run as that node)`);
    }
    return collectTools(this.id, this.#registered, (this.params as { tools?: string[] }).tools, this.deps);
  }
}

/** Params of {@link ToolParamGenerationNode}. */
export const toolParamGenerationParamsSchema = z
  .strictObject({
    ...llmParamsShape,
    ...promptParamsShape,
    /** Names of tools from the `tools` dependency. */
    tools: toolNames.optional(),
    /** Backpack key the tool calls are packed under. Default `'toolCalls'`. */
    toolCallsIn: z.string().min(1).optional(),
    /** Backpack key a direct answer (no tool call) is packed under. Default `'answer'`. */
    outputTo: z.string().min(1).optional(),
  })
  .refine((p) => p.conversation !== undefined, { message: 'set conversation (the backpack key of the conversation the tool loop extends)' });

type ToolStepParams = LlmParams & PromptParams & { tools?: string[]; toolCallsIn?: string; outputTo?: string };

interface StepPrep extends Prompt {
  signal?: AbortSignal;
}

/**
 * One step of a tool-calling loop, as a node: the model sees the conversation (`conversation`, started from
 * `promptFrom`) and the tools, and either calls tools (their calls are packed under `toolCallsIn`, action `'tools'`)
 * or answers (packed under `outputTo`, action `'answer'`). The conversation is packed back with the model's turn.
 */
export class ToolParamGenerationNode extends ToolUsingNode<StepPrep, ModelReply> {
  static override paramsSchema: z.ZodType = toolParamGenerationParamsSchema;

  override prep(backpack: BackpackHandle, scope: RunScope): StepPrep {
    const p = this.params as ToolStepParams;
    return { ...readPrompt(this.id, backpack, p, p.systemPrompt, { promptOnlyToStart: true }), signal: scope.signal };
  }

  override async exec(prep: StepPrep): Promise<ModelReply> {
    return this.callModel({ system: prep.system, messages: prep.messages, tools: await toModelTools(this.tools), signal: prep.signal, purpose: 'tool-params' });
  }

  override post(backpack: BackpackHandle, prep: StepPrep, reply: ModelReply): string {
    const p = this.params as ToolStepParams;
    backpack.pack(p.conversation!, toPlainMessages([...prep.messages, ...reply.responseMessages]));
    if (reply.toolCalls.length > 0) {
      backpack.pack(p.toolCallsIn ?? 'toolCalls', reply.toolCalls);
      return TOOLS_ACTION;
    }
    backpack.delete(p.toolCallsIn ?? 'toolCalls');
    backpack.pack(p.outputTo ?? 'answer', reply.text);
    return ANSWER_ACTION;
  }
}

/** Params of {@link ToolExecutionNode}. */
export const toolExecutionParamsSchema = z.strictObject({
  /** Names of tools from the `tools` dependency. */
  tools: toolNames.optional(),
  /** Backpack key of the tool calls to run. Default `'toolCalls'`. */
  toolCallsIn: z.string().min(1).optional(),
  /** Backpack key the results are packed under. Default `'toolResults'`. */
  toolResultsTo: z.string().min(1).optional(),
  /** Conversation the tool results are appended to (as a tool message), if set. */
  conversation: z.string().min(1).optional(),
  /** Attempts per tool call; failed attempts that are retried are quarantined. Default 1. */
  toolAttempts: z.number().int().min(1).max(10).optional(),
});

type ToolExecutionParams = z.infer<typeof toolExecutionParamsSchema>;

interface ExecutionPrep {
  calls: ToolCallRecord[];
  messages?: ModelMessage[];
  signal?: AbortSignal;
}

const toolCallsSchema = z.array(z.object({ toolCallId: z.string(), toolName: z.string(), input: z.unknown(), inputProblem: z.string().optional() }));

/**
 * Runs the tool calls packed under `toolCallsIn` with the node's tools, in order, and packs their results under
 * `toolResultsTo` (appending them to the conversation under `conversation` when set). A failing tool does not fail the
 * node: its error becomes its result, for the model to see; a failed attempt that is retried is quarantined.
 */
export class ToolExecutionNode extends ToolUsingNode<ExecutionPrep, ToolResultRecord[]> {
  static override paramsSchema: z.ZodType = toolExecutionParamsSchema;

  override prep(backpack: BackpackHandle, scope: RunScope): ExecutionPrep {
    const p = this.params as ToolExecutionParams;
    const key = p.toolCallsIn ?? 'toolCalls';
    const parsed = toolCallsSchema.safeParse(backpack.unpackRequired(key));
    if (!parsed.success) throw new LlmError(`Node '${this.id}': backpack key '${key}' must hold tool calls ({ toolCallId, toolName, input }[]): ${parsed.error.issues[0]!.message}`);
    const messages = p.conversation === undefined ? undefined : (backpack.unpack<ModelMessage[]>(p.conversation) ?? []);
    return { calls: parsed.data, messages: messages ? [...messages] : undefined, signal: scope.signal };
  }

  override async exec(prep: ExecutionPrep): Promise<ToolResultRecord[]> {
    const tools = this.tools;
    const attempts = (this.params as ToolExecutionParams).toolAttempts ?? 1;
    const results: ToolResultRecord[] = [];
    for (const call of prep.calls) results.push(await this.runTool(call, tools.get(call.toolName), { attempts, signal: prep.signal, backpack: this.backpack }));
    return results;
  }

  override post(backpack: BackpackHandle, prep: ExecutionPrep, results: ToolResultRecord[]): undefined {
    const p = this.params as ToolExecutionParams;
    backpack.pack(p.toolResultsTo ?? 'toolResults', results);
    backpack.delete(p.toolCallsIn ?? 'toolCalls');
    if (p.conversation !== undefined && prep.messages) {
      backpack.pack(p.conversation, toPlainMessages([...prep.messages, toolResultMessage(results)]));
    }
    return undefined;
  }
}

/** Params of {@link FinalAnswerNode}: a chat node's. */
export const finalAnswerParamsSchema = chatParamsSchema;

/**
 * Writes the final answer from the conversation and context (a chat node with `outputTo` defaulting to `'answer'`
 * and no tools). It does not pack the conversation back.
 */
export class FinalAnswerNode extends ChatNode {
  static override paramsSchema: z.ZodType = finalAnswerParamsSchema;

  override post(backpack: BackpackHandle, _prep: unknown, reply: ModelReply): undefined {
    backpack.pack((this.params as ChatParams).outputTo ?? 'answer', reply.text);
    return undefined;
  }
}
