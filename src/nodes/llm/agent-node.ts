import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { BackpackHandle } from '../../backpack/index.js';
import type { RunScope } from '../../flow/index.js';
import { toPlainMessages } from './chat-node.js';
import { llmParamsShape, type LlmParams } from './llm-node.js';
import { promptParamsShape, readPrompt, type Prompt, type PromptParams } from './prompt.js';
import { ToolUsingNode } from './tool-nodes.js';
import { McpServerError, McpServerSchema, openMcpServers, type McpServer } from './mcp.js';
import { mcpServerSecrets } from './mcp-secrets.js';
import { toModelTools, toolResultMessage, type LlmTool, type ToolResultRecord } from './tools.js';

/** Params of {@link AgentNode}. */
export const agentParamsSchema = z
  .strictObject({
    ...llmParamsShape,
    ...promptParamsShape,
    /** Names of tools from the `tools` dependency. */
    tools: z.array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/)).optional(),
    /** Most model calls with tools; then one last call without tools forces an answer. Default 5. */
    maxSteps: z.number().int().min(1).max(100).optional(),
    /** Attempts per tool call; failed attempts that are retried are quarantined. Default 1. */
    toolAttempts: z.number().int().min(1).max(10).optional(),
    /** Backpack key the answer is packed under. Default `'answer'`. */
    outputTo: z.string().min(1).optional(),
    /** Backpack key every tool result of the run is packed under. Default `'toolResults'`. */
    toolResultsTo: z.string().min(1).optional(),
    /** MCP servers whose tools the model may call too (connected for each execution, closed after it). */
    mcpServers: z.array(McpServerSchema).optional(),
  })
  .refine((p) => p.promptFrom !== undefined || p.conversation !== undefined, { message: 'set promptFrom or conversation (where the prompt is in the backpack)' });

type AgentParams = LlmParams & PromptParams & { tools?: string[]; maxSteps?: number; toolAttempts?: number; outputTo?: string; toolResultsTo?: string; mcpServers?: McpServer[] };

interface AgentPrep extends Prompt {
  signal?: AbortSignal;
}

/** What an agent run produced. */
export interface AgentResult {
  answer: string;
  messages: ModelMessage[];
  toolResults: ToolResultRecord[];
  /** Model calls made. */
  steps: number;
  /** True when `maxSteps` ran out and the answer was forced. */
  stoppedAtMaxSteps: boolean;
}

/**
 * A tool-calling agent: calls the model with the tools; while it calls tools, runs them (TOOL_CALL / TOOL_RESULT events)
 * and gives it their results, up to `maxSteps` model calls; then packs the answer under `outputTo`, the tool results
 * under `toolResultsTo` and, with `conversation`, the whole conversation. A failing tool's error is shown to the model.
 */
export class AgentNode extends ToolUsingNode<AgentPrep, AgentResult> {
  static override paramsSchema: z.ZodType = agentParamsSchema;

  /** The node's params, typed. */
  protected get agentParams(): AgentParams {
    return this.params as AgentParams;
  }

  override prep(backpack: BackpackHandle, scope: RunScope): AgentPrep {
    return { ...readPrompt(this.id, backpack, this.agentParams, this.agentParams.systemPrompt), signal: scope.signal };
  }

  /** The credentials of its MCP server declarations (see `mcpServerSecrets`), with the node's own secrets. */
  protected override configSecrets(): readonly string[] {
    const servers = this.agentParams.mcpServers;
    if (servers === undefined || servers.length === 0) return [];
    // Worked out once per declaration list: this runs for every event the node emits.
    if (this.#mcpSecrets?.of !== servers) this.#mcpSecrets = { of: servers, secrets: [...new Set(servers.flatMap(mcpServerSecrets))] };
    return this.#mcpSecrets.secrets;
  }

  #mcpSecrets: { of: readonly McpServer[]; secrets: string[] } | undefined;

  override async exec(prep: AgentPrep): Promise<AgentResult> {
    const servers = this.agentParams.mcpServers ?? [];
    if (servers.length === 0) return this.#loop(prep, this.tools);
    // Its errors hold none of the servers' credentials (see openMcpServers).
    const mcp = await openMcpServers(`node '${this.id}'`, servers, prep.signal);
    try {
      const tools = this.tools;
      for (const [name, tool] of mcp.tools) {
        if (tools.has(name)) throw new McpServerError(`node '${this.id}': MCP server '${tool.source?.mcpServer}' offers tool '${name}', which the node already has; give the server a prefix`);
        tools.set(name, tool);
      }
      return await this.#loop(prep, tools);
    } finally {
      await mcp.close();
    }
  }

  async #loop(prep: AgentPrep, tools: Map<string, LlmTool>): Promise<AgentResult> {
    const p = this.agentParams;
    const modelTools = await toModelTools(tools);
    const maxSteps = p.maxSteps ?? 5;
    const messages = [...prep.messages];
    const toolResults: ToolResultRecord[] = [];
    for (let step = 1; step <= maxSteps; step++) {
      const reply = await this.callModel({ system: prep.system, messages, tools: modelTools, signal: prep.signal, purpose: `step-${step}` });
      messages.push(...reply.responseMessages);
      if (reply.toolCalls.length === 0) return { answer: reply.text, messages, toolResults, steps: step, stoppedAtMaxSteps: false };
      const results: ToolResultRecord[] = [];
      for (const call of reply.toolCalls) {
        results.push(await this.runTool(call, tools.get(call.toolName), { attempts: p.toolAttempts ?? 1, signal: prep.signal, backpack: this.backpack }));
      }
      toolResults.push(...results);
      messages.push(toolResultMessage(results));
    }
    const final = await this.callModel({ system: prep.system, messages, signal: prep.signal, purpose: 'final-answer' });
    messages.push(...final.responseMessages);
    return { answer: final.text, messages, toolResults, steps: maxSteps + 1, stoppedAtMaxSteps: true };
  }

  override post(backpack: BackpackHandle, _prep: AgentPrep, result: AgentResult): undefined {
    const p = this.agentParams;
    backpack.pack(p.outputTo ?? 'answer', result.answer);
    backpack.pack(p.toolResultsTo ?? 'toolResults', result.toolResults);
    if (p.conversation !== undefined) backpack.pack(p.conversation, toPlainMessages(result.messages));
    return undefined;
  }
}
