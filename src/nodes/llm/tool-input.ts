import type { LanguageModel } from 'ai';
import { MAX_JSON_NESTING, nestingProblem } from '../../backpack/nesting.js';
import type { ToolCallRecord } from './tools.js';

/** Levels of nesting the LLM nodes' own records add around a tool call's arguments or result when they pack them. */
export const TOOL_RECORD_LEVELS = 16;

/**
 * Deepest nesting of arrays and objects accepted in a tool call's arguments, as in a flow config or a run's input:
 * what the AI SDK, the Backpack, the value codec and redaction do with the arguments recurses, and a model can write
 * arguments nested deep enough to overflow the stack. It leaves {@link TOOL_RECORD_LEVELS} under `MAX_JSON_NESTING`
 * (the Backpack's bound) for the records the arguments are packed in.
 */
export const MAX_TOOL_INPUT_NESTING = MAX_JSON_NESTING - TOOL_RECORD_LEVELS;


type Model = Exclude<LanguageModel, string>;

/** What arguments nested too deep are replaced with: an empty object, which every provider takes back in a conversation. */
const NO_ARGUMENTS = '{}';

/** The model as a {@link limitToolInputNesting} call gives it, and the tool calls of its answers as records. */
export interface NestingLimitedModel {
  readonly model: Model;
  /** The record of a tool call the model answered, with its `inputProblem` when its arguments were replaced. */
  toolCall(call: { toolCallId: string; toolName: string; input: unknown }): ToolCallRecord;
}

/**
 * `model`, except that a tool call whose arguments (JSON text) nest arrays and objects deeper than
 * {@link MAX_TOOL_INPUT_NESTING} reaches the AI SDK with `{}` as its arguments, before the SDK parses them (it would
 * overflow the stack copying them). Its record then tells why ({@link ToolCallRecord.inputProblem}), and the call is
 * answered as a tool call with invalid input. Works for generated and streamed answers, of models of any version.
 */
export function limitToolInputNesting(model: Model): NestingLimitedModel {
  const problems = new Map<string, string>();
  const checked = <P>(part: P): P => {
    const call = part as { type?: unknown; toolCallId?: unknown; input?: unknown };
    if (call.type !== 'tool-call' || typeof call.input !== 'string') return part;
    const problem = argumentsNestingProblem(call.input);
    if (problem === undefined) return part;
    problems.set(String(call.toolCallId), problem);
    return { ...part, input: NO_ARGUMENTS };
  };
  const target = model as unknown as Record<string | symbol, unknown> & {
    doGenerate(options: unknown): Promise<{ content: unknown[] }>;
    doStream(options: unknown): Promise<{ stream: ReadableStream<unknown> }>;
  };
  const limited = new Proxy(target, {
    get(_, property) {
      if (property === 'doGenerate') {
        return async (options: unknown) => {
          const result = await target.doGenerate(options);
          return { ...result, content: result.content.map(checked) };
        };
      }
      if (property === 'doStream') {
        return async (options: unknown) => {
          const result = await target.doStream(options);
          return { ...result, stream: result.stream.pipeThrough(new TransformStream({ transform: (part, out) => out.enqueue(checked(part)) })) };
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    model: limited as unknown as Model,
    toolCall: ({ toolCallId, toolName, input }) => {
      const problem = problems.get(toolCallId);
      return { toolCallId, toolName, input, ...(problem !== undefined ? { inputProblem: problem } : {}) };
    },
  };
}

/** The problem of tool-call arguments nested deeper than the limit, naming where and the limit; else undefined. */
function argumentsNestingProblem(text: string): string | undefined {
  // Each level takes two characters (its brackets): shorter text is not too deep, and is not parsed here.
  if (text.length <= 2 * MAX_TOOL_INPUT_NESTING) return undefined;
  let value: unknown;
  try {
    // JSON.parse does not recurse, whatever the depth; the walk below does not either.
    value = JSON.parse(text);
  } catch {
    return undefined; // not JSON: the SDK answers it as invalid input
  }
  const problem = nestingProblem(value, MAX_TOOL_INPUT_NESTING);
  return problem && `the arguments at ${problem.path} are ${problem.message}`;
}
