import type { JSONSchema7, JSONValue, ToolModelMessage, ToolSet } from 'ai';
import { loadAiSdk } from './ai-sdk.js';
import type { ZodType } from 'zod';
import type { BackpackHandle } from '../../backpack/index.js';
import type { BackpackNode, DependencyLookup } from '../backpack-node.js';
import { Flow } from '../flow.js';
import { LlmError } from './errors.js';

/** What a tool's `execute` gets besides its input. */
export interface ToolContext {
  /** Fires when the run is aborted, or when the attempt's `timeoutMs` has passed. */
  signal: AbortSignal | undefined;
  /** The calling node's backpack handle. */
  backpack: BackpackHandle;
  /** Id of the tool call, as the model named it. */
  toolCallId: string;
  /** Name the tool was called by. */
  toolName: string;
  /** The node that runs the tool. */
  node: BackpackNode;
}

/** A zod-typed function the model may call. */
export interface LlmTool<I = any, O = unknown> {
  /** Tells the model what the tool does. */
  description: string;
  /** Schema of the input; the model's arguments are validated against it before `execute` runs. */
  inputSchema: ZodType<I>;
  /**
   * Does the work; a thrown error is shown to the model as the tool's result. The result must be JSON data (null,
   * booleans, strings, finite numbers, arrays and plain objects, nested at most `MAX_TOOL_OUTPUT_NESTING` levels; an
   * object property that is `undefined` is left out, as JSON does): anything else (a Date, a Map, NaN, a BigInt, a
   * class instance, a cycle, ...) is not converted but shown to the model as an error naming the tool and where it
   * is (a JSON pointer). `undefined` as the whole result is `null`. Return a Date as `date.toISOString()`.
   */
  execute(input: I, context: ToolContext): O | Promise<O>;
  /**
   * Time limit of one attempt, in ms: then the node stops waiting for it (whether it honours `context.signal`, which
   * fires then too, or not) and the attempt fails with "Tool '<name>' timed out after <ms> ms". None by default.
   */
  timeoutMs?: number;
  /** The input's JSON Schema as the model is shown it, when it comes from elsewhere (an MCP server); default: from `inputSchema`. */
  jsonSchema?: Record<string, unknown>;
  /** Where the tool comes from, added to its `tool.called` / `tool.result` events (e.g. `{ mcpServer: 'files' }`). */
  source?: Record<string, string>;
}

/** Defines a tool (an identity function that gives `execute` its input type from the schema). */
export function defineTool<I, O>(definition: LlmTool<I, O>): LlmTool<I, O> {
  return definition;
}

/** How a flow of nodes becomes a tool: see {@link flowTool}. */
export interface FlowToolDefinition<I> {
  description: string;
  inputSchema: ZodType<I>;
  /** Adds the tool's nodes to `flow` (a fresh flow per call, sharing the caller's backpack, streamer and deps). */
  build(flow: Flow): void;
  /** Backpack key the input is packed under before the flow runs. */
  inputTo: string;
  /** Backpack key the flow leaves its result under; that value is the tool's output. */
  outputFrom: string;
}

/**
 * A tool made of nodes: each call builds a flow with `build` in the namespace `<caller>.tools.<toolName>`, packs the
 * validated input under `inputTo`, runs the flow as part of the caller's execution (nested span, same backpack) and
 * returns the value under `outputFrom`. Throws (an error result for the model) when the flow leaves no output.
 */
export function flowTool<I>(definition: FlowToolDefinition<I>): LlmTool<I> {
  return {
    description: definition.description,
    inputSchema: definition.inputSchema,
    async execute(input, context) {
      const caller = context.node;
      const flow = caller.createNestedFlow({ id: `tool-${context.toolName}`, namespace: `${caller.namespace}.tools.${context.toolName}` });
      definition.build(flow);
      await flow.run({ [definition.inputTo]: input });
      const output = caller.backpack.unpack(definition.outputFrom);
      if (output === undefined) throw new LlmError(`the tool's flow left nothing under '${definition.outputFrom}'`);
      return output;
    },
  };
}

/** A tool call the model made. */
export interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /**
   * Why the model's arguments were not kept, when they could not be (nested deeper than `MAX_TOOL_INPUT_NESTING`):
   * `input` is then `{}`, and the call is answered with an invalid-input error naming the problem.
   */
  inputProblem?: string;
}

/** The outcome of a tool call: its output, or the error the model is shown. */
export interface ToolResultRecord {
  toolCallId: string;
  toolName: string;
  /** The tool's output (absent when it failed). */
  output?: unknown;
  /** The error message the model sees when the tool failed. */
  error?: string;
  /** Attempts made. */
  attempts: number;
}

/** The dependency key of a toolbox: a record of tool name to {@link LlmTool}. */
export const TOOLBOX_DEP = 'tools';

/**
 * The tools a node offers: those registered on it plus those its `tools` param names from the `tools` dependency.
 * Throws naming the node and tool when a named tool is not in the toolbox.
 */
export function collectTools(
  nodeId: string,
  registered: ReadonlyMap<string, LlmTool>,
  names: readonly string[] | undefined,
  deps: DependencyLookup | undefined,
): Map<string, LlmTool> {
  const tools = new Map(registered);
  if (!names?.length) return tools;
  const toolbox = deps?.has(TOOLBOX_DEP) ? (deps.get(TOOLBOX_DEP) as Record<string, LlmTool>) : undefined;
  for (const name of names) {
    if (tools.has(name)) continue;
    const found = toolbox?.[name];
    if (!found || typeof found.execute !== 'function') {
      throw new LlmError(`Node '${nodeId}': tool '${name}' is neither registered on the node nor in the '${TOOLBOX_DEP}' dependency`);
    }
    checkToolTimeout(nodeId, name, found);
    tools.set(name, found);
  }
  return tools;
}

/**
 * The tools as the AI SDK takes them for a model call: description and input schema, no execute (we execute).
 * Asynchronous since the SDK is imported on first use (see ai-sdk.ts).
 */
export async function toModelTools(tools: ReadonlyMap<string, LlmTool>): Promise<ToolSet> {
  const { tool: aiTool, jsonSchema, zodSchema } = await loadAiSdk();
  const set: ToolSet = {};
  for (const [name, t] of tools) {
    set[name] = aiTool({ description: t.description, inputSchema: t.jsonSchema ? jsonSchema(t.jsonSchema as JSONSchema7) : zodSchema(t.inputSchema) });
  }
  return set;
}

/** Checks a tool's `timeoutMs`: absent, or a positive integer number of ms. */
export function checkToolTimeout(nodeId: string, name: string, tool: LlmTool): void {
  const ms = tool.timeoutMs;
  if (ms !== undefined && !(Number.isSafeInteger(ms) && ms > 0)) {
    throw new LlmError(`Node '${nodeId}': tool '${name}' has timeoutMs ${String(ms)}: give a positive integer number of ms, or none`);
  }
}

/** Checks a tool's name (the OpenAI API allows letters, digits, '_' and '-', up to 64). */
export function checkToolName(name: string, nodeId?: string): void {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new LlmError(`${nodeId === undefined ? '' : `Node '${nodeId}': `}tool name '${name}' is invalid: use 1-64 letters, digits, '_' or '-'`);
  }
}

/** The tool message that gives the model the results of its tool calls (errors as error text). */
export function toolResultMessage(results: readonly ToolResultRecord[]): ToolModelMessage {
  return {
    role: 'tool',
    content: results.map((r) => ({
      type: 'tool-result' as const,
      toolCallId: r.toolCallId,
      toolName: r.toolName,
      output: r.error !== undefined ? { type: 'error-text' as const, value: r.error } : { type: 'json' as const, value: r.output as JSONValue },
    })),
  };
}
