export { ChatNode, BaseChatCompletionNode, chatParamsSchema, toPlainMessages } from './chat-node.js';
export type { ChatParams, ChatPrep } from './chat-node.js';
export { DecisionNode, decisionParamsSchema } from './decision-node.js';
export type { Decision, DecisionParams } from './decision-node.js';
export { AgentNode, agentParamsSchema } from './agent-node.js';
export type { AgentResult } from './agent-node.js';
export {
  ToolUsingNode,
  ToolParamGenerationNode,
  ToolExecutionNode,
  FinalAnswerNode,
  toolParamGenerationParamsSchema,
  toolExecutionParamsSchema,
  finalAnswerParamsSchema,
  TOOLS_ACTION,
  ANSWER_ACTION,
} from './tool-nodes.js';
export { LlmNode, llmParamsSchema, llmParamsShape } from './llm-node.js';
export type { LlmParams, ModelRequest, ModelReply } from './llm-node.js';
export { promptParamsShape, readPrompt } from './prompt.js';
export type { Prompt, PromptParams } from './prompt.js';
export {
  ProviderRegistry,
  createDefaultProviderRegistry,
  defaultProviders,
  registerProvider,
  importOptionalPackage,
  resolveModel,
  isLanguageModel,
} from './providers.js';
export type { ProviderFactory, ProviderSettings, ProviderEntry, ResolveModelOptions, ResolvedModel } from './providers.js';
export { callWithRetry, classifyError, parseRetryAfter, backoffDelay, DEFAULT_RETRY_POLICY } from './retry.js';
export type { RetryPolicy, CallOptions } from './retry.js';
export { defineTool, flowTool, collectTools, toModelTools, toolResultMessage, TOOLBOX_DEP } from './tools.js';
export { MAX_TOOL_INPUT_NESTING } from './tool-input.js';
export { MAX_TOOL_OUTPUT_NESTING } from './tool-output.js';
export type { LlmTool, FlowToolDefinition, ToolContext, ToolCallRecord, ToolResultRecord } from './tools.js';
export { McpServerSchema, McpStdioServerSchema, McpHttpServerSchema, McpServerError, openMcpServers, describeMcpServer } from './mcp.js';
export type { McpServer, McpToolbox } from './mcp.js';
export { mcpServerSecrets } from './mcp-secrets.js';
export { maskUrlCredentials as maskedMcpUrl } from '../../redact/index.js';
export { LlmError, ModelResolutionError, ModelCallError, ModelTimeoutError, CallAbortedError, InvalidModelOutputError, redactSecrets } from './errors.js';

import type { BackpackNodeClass } from '../backpack-node.js';
import type { ZodType } from 'zod';
import { rememberSchema } from '../secret-params.js';
import { AgentNode } from './agent-node.js';
import { ChatNode } from './chat-node.js';
import { DecisionNode } from './decision-node.js';
import { FinalAnswerNode, ToolExecutionNode, ToolParamGenerationNode } from './tool-nodes.js';

/** The built-in LLM node types by the name a flow config uses, for `FlowLoader.register(type, NodeClass)`. */
export const llmNodeTypes: Readonly<Record<string, BackpackNodeClass>> = Object.freeze({
  ChatNode,
  BaseChatCompletionNode: ChatNode,
  DecisionNode,
  AgentNode,
  ToolParamGenerationNode,
  ToolExecutionNode,
  FinalAnswerNode,
});

// Which of their params are secret, as the library defines them (see rememberSchema): remembered when this module
// loads, before any node's code runs, so that no code can strip a mark (zod's registry is shared) first.
for (const NodeClass of Object.values(llmNodeTypes)) rememberSchema(NodeClass.paramsSchema as ZodType | undefined);
