import { createHash } from 'node:crypto';
import type { ModelMessage, ToolSet } from 'ai';
import { loadAiSdk, type AiSdk } from './ai-sdk.js';
import { z } from 'zod';
import type { BackpackHandle } from '../../backpack/index.js';
import { StreamEventType, type StreamEventTypeValue } from '../../events/index.js';
import type { Attempt, RunScope } from '../../flow/index.js';
import { BackpackNode, describeError } from '../backpack-node.js';
import { CallAbortedError, InvalidModelOutputError, redactSecrets } from './errors.js';
import { defaultProviders, markRegistryInUse, resolveModel, type ProviderRegistry, type ResolvedModel } from './providers.js';
import { callWithRetry, DEFAULT_RETRY_POLICY, raceAbort, type RetryPolicy } from './retry.js';
import { scrubSecrets, StreamScrubber, usableSecrets } from './secrets.js';
import { urlSecrets } from './mcp-secrets.js';
import { limitToolInputNesting, type NestingLimitedModel } from './tool-input.js';
import { toolOutputProblem } from './tool-output.js';
import type { LlmTool, ToolCallRecord, ToolResultRecord } from './tools.js';

/** Params every LLM node takes (DESIGN D14: they export to JSON; `apiKey` is secret). */
export const llmParamsShape = {
  /** `"provider:modelId"`, e.g. `"openai:gpt-4o"`; an injected model (dependency `modelRef`) wins. */
  model: z.string().min(1).optional(),
  /** Dependency key of an injected AI SDK model. Default `'model'`. */
  modelRef: z.string().min(1).optional(),
  /** API key, or `${ENV_NAME}`; default: the provider's env var (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...). */
  apiKey: z.string().min(1).optional().meta({ secret: true }),
  /**
   * Base URL of the API (required for `openai-compatible`). Credentials in it (a gateway's key in its path or query,
   * a password) are the node's secrets, like its `apiKey` (`.meta({ secret: 'url' })`).
   */
  baseURL: z.url().optional().meta({ secret: 'url' }),
  /** System prompt. */
  systemPrompt: z.string().optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  /** Time limit of one model call attempt, in ms. */
  timeoutMs: z.number().int().positive().optional(),
  /** Retries of model calls on 429, 5xx and unreadable responses. */
  retry: z
    .strictObject({
      maxAttempts: z.number().int().min(1).max(20).optional(),
      baseDelayMs: z.number().min(0).optional(),
      maxDelayMs: z.number().min(0).optional(),
    })
    .optional(),
};

/** Params of every LLM node. */
export const llmParamsSchema = z.strictObject(llmParamsShape);
/** The params of every LLM node, typed. */
export type LlmParams = z.infer<typeof llmParamsSchema>;

/** What one model call is asked. */
export interface ModelRequest {
  system?: string;
  messages: ModelMessage[];
  tools?: ToolSet;
  /** An AI SDK output specification (e.g. `Output.object({ schema })`). */
  output?: Parameters<typeof AiSdk.generateText>[0]['output'];
  stream?: boolean;
  /** The run's abort signal. */
  signal?: AbortSignal;
  /** Names the call in events, errors and failed-attempt keys (e.g. 'chat', 'decision', 'step-2'). */
  purpose: string;
}

/** What one model call answered. */
export interface ModelReply {
  text: string;
  toolCalls: ToolCallRecord[];
  /** The structured output, when the request had an output specification. */
  output?: unknown;
  usage: { inputTokens?: number; outputTokens?: number; totalTokens?: number };
  finishReason: string;
  /** The assistant messages of the answer, to append to a conversation. */
  responseMessages: ModelMessage[];
  /** The model that answered, as the provider named it (may differ from the one asked for). */
  responseModel?: string;
  /** The provider's id of the response. */
  responseId?: string;
}

/**
 * Base of the built-in LLM nodes: resolves the model (injected, or `"provider:modelId"` through the provider
 * registry), calls it with our retries (429/5xx with backoff and Retry-After; the SDK's own retries are off), per-call
 * timeout and the run's abort signal, and reports MODEL_START / MODEL_DELTA / MODEL_END events with token usage.
 * Failed attempts (of model calls, of exec and of tools) are packed and quarantined at once (PRD-001 §3.5): they stay
 * in the trace and never reach a later prompt. Secrets never appear in events or errors: the node's own API key (its
 * `apiKey` param, or the provider's env var) and the secrets of its configuration ({@link configSecrets}: an
 * AgentNode's MCP server credentials) are removed from its model errors, from the model's replies (text, tool-call
 * arguments, structured output, response id and model name, streamed deltas) and from tool calls and results, before
 * anything is emitted or packed, so a server that echoes one does not get it into the log.
 */
export class LlmNode<P = any, E = any> extends BackpackNode<P, E> {
  static override paramsSchema: z.ZodType = llmParamsSchema;
  /**
   * Provider registry used to resolve model names. Another per class: a subclass declares its own
   * (`static override providers = registry`); the library's classes are frozen (README: threat model).
   */
  static providers: ProviderRegistry = defaultProviders;

  constructor(...args: ConstructorParameters<typeof BackpackNode>) {
    super(...args);
    // The registry this node's class names takes no new provider from now on (see ProviderRegistry.register).
    markRegistryInUse(new.target.providers);
  }

  /** The node's params, typed. */
  protected get llmParams(): LlmParams {
    return this.params as LlmParams;
  }

  /** The retry policy of model calls. */
  protected get retryPolicy(): RetryPolicy {
    return { ...DEFAULT_RETRY_POLICY, ...dropUndefined(this.llmParams.retry ?? {}) };
  }

  /** Resolves the node's model. */
  protected resolveModel(): Promise<ResolvedModel> {
    const p = this.llmParams;
    const providers = (this.constructor as typeof LlmNode).providers;
    markRegistryInUse(providers);
    return resolveModel(p.model, {
      deps: this.deps,
      modelRef: p.modelRef,
      apiKey: p.apiKey,
      baseURL: p.baseURL,
      providers,
      owner: `node '${this.id}'`,
    });
  }

  /** Calls the model once (with retries) and reports it. */
  protected async callModel(request: ModelRequest): Promise<ModelReply> {
    const resolved = await this.resolveModel();
    const what = `node '${this.id}': model ${resolved.label} (${request.purpose})`;
    const started = performance.now();
    const p = this.llmParams;
    // The call's number in this node: its model.* events carry it, so that calls made at once are told apart.
    const call = ++this.#calls;
    this.emitEvent(StreamEventType.MODEL_START, {
      call,
      model: resolved.label,
      purpose: request.purpose,
      stream: request.stream === true,
      messages: request.messages.length,
      // The AI SDK's own names of the provider (e.g. 'openai.chat') and model: what telemetry reports as requested.
      provider: resolved.model.provider,
      modelId: resolved.model.modelId,
      ...dropUndefined({ temperature: p.temperature, maxOutputTokens: p.maxOutputTokens }),
    });
    let attempt = 1;
    const limited = limitToolInputNesting(resolved.model);
    const secrets = usableSecrets(this.#secrets(resolved));
    try {
      const answered = await callWithRetry(
        (signal) => (request.stream ? this.#stream(resolved, limited, request, signal, { call, attempt }, secrets) : this.#generate(limited, request, signal)),
        {
          what,
          policy: this.retryPolicy,
          timeoutMs: p.timeoutMs,
          signal: request.signal,
          secrets: this.#secrets(resolved),
          onRetry: (error, n, delayMs) => {
            attempt = n + 1;
            this.recordFailedAttempt(`model-${request.purpose}`, n, { error: error.message, status: error.status });
            this.emitEvent(StreamEventType.MODEL_END, { call, model: resolved.label, purpose: request.purpose, attempt: n, error: describeError(error), retryInMs: delayMs });
          },
        },
      );
      const reply = scrubSecrets(answered, secrets);
      this.emitEvent(StreamEventType.MODEL_END, {
        call,
        model: resolved.label,
        purpose: request.purpose,
        attempt,
        finishReason: reply.finishReason,
        usage: reply.usage,
        ...dropUndefined({ responseModel: reply.responseModel, responseId: reply.responseId }),
        durationMs: performance.now() - started,
      });
      return reply;
    } catch (error) {
      const safe = this.#safeError(error, resolved);
      this.emitEvent(StreamEventType.MODEL_END, { call, model: resolved.label, purpose: request.purpose, attempt, error: describeError(safe), durationMs: performance.now() - started });
      throw safe;
    }
  }

  #common(limited: NestingLimitedModel, request: ModelRequest, signal: AbortSignal) {
    const p = this.llmParams;
    return {
      model: limited.model,
      system: request.system,
      messages: request.messages,
      tools: request.tools,
      temperature: p.temperature,
      maxOutputTokens: p.maxOutputTokens,
      maxRetries: 0,
      abortSignal: signal,
    };
  }

  async #generate(limited: NestingLimitedModel, request: ModelRequest, signal: AbortSignal): Promise<ModelReply> {
    const { generateText } = await loadAiSdk();
    const result = await generateText({ ...this.#common(limited, request, signal), output: request.output });
    return {
      text: result.text,
      toolCalls: result.toolCalls.map(limited.toolCall),
      output: request.output ? result.output : undefined,
      usage: usageOf(result.usage),
      finishReason: result.finishReason,
      responseMessages: assistantMessages(result.response.messages),
      responseModel: result.response.modelId,
      responseId: result.response.id,
    };
  }

  async #stream(resolved: ResolvedModel, limited: NestingLimitedModel, request: ModelRequest, signal: AbortSignal, at: { call: number; attempt: number }, secrets: readonly string[]): Promise<ModelReply> {
    const { streamText } = await loadAiSdk();
    const result = streamText({ ...this.#common(limited, request, signal), onError: () => {} });
    let index = 0;
    // Without secrets, each delta as it came; with them, held back while it could be the start of one (see StreamScrubber).
    const scrubber = secrets.length > 0 ? new StreamScrubber(secrets) : undefined;
    const emitDelta = (delta: string): void => {
      if (delta !== '') this.emitEvent(StreamEventType.MODEL_DELTA, { call: at.call, model: resolved.label, purpose: request.purpose, attempt: at.attempt, index: index++, delta });
    };
    for await (const part of result.fullStream) {
      if (part.type === 'error') throw part.error;
      if (part.type === 'abort') throw signal.reason ?? new Error('stream aborted');
      if (part.type === 'text-delta') emitDelta(scrubber ? scrubber.push(part.text) : part.text);
    }
    if (scrubber) emitDelta(scrubber.flush());
    const [text, toolCalls, usage, finishReason, response] = await Promise.all([result.text, result.toolCalls, result.usage, result.finishReason, result.response]);
    return {
      text,
      toolCalls: toolCalls.map(limited.toolCall),
      usage: usageOf(usage),
      finishReason,
      responseMessages: assistantMessages(response.messages),
      responseModel: response.modelId,
      responseId: response.id,
    };
  }

  /**
   * The node's own secrets: its `apiKey` param and the keys its models were resolved with (a provider's env var),
   * remembered as models resolve (they come from the node's configuration and the environment, not from a run).
   */
  readonly #resolvedSecrets = new Set<string>();
  /** Set once a model of this node was resolved (its keys, if any, are in {@link #resolvedSecrets}). */
  #modelResolved = false;
  /** How many model calls this node has started (see {@link callModel}: the `call` of its model.* events). */
  #calls = 0;

  #secrets(resolved?: ResolvedModel): string[] {
    if (resolved !== undefined) this.#modelResolved = true;
    for (const secret of resolved?.secrets ?? []) if (secret) this.#resolvedSecrets.add(secret);
    const { apiKey: key, baseURL } = this.llmParams;
    return [...this.#resolvedSecrets, ...(key ? [key] : []), ...this.#baseUrlSecrets(baseURL), ...this.configSecrets()];
  }

  /** The credentials `baseURL` carries (see urlSecrets), computed once per URL: asked for every event. */
  #baseUrl: { url: string | undefined; secrets: readonly string[] } = { url: undefined, secrets: [] };
  #baseUrlSecrets(url: string | undefined): readonly string[] {
    if (url !== this.#baseUrl.url) this.#baseUrl = { url, secrets: url === undefined ? [] : urlSecrets(url) };
    return this.#baseUrl.secrets;
  }

  /**
   * Secrets the node's configuration holds besides its `apiKey` param (an AgentNode's MCP server credentials): removed,
   * like its key, from everything the node emits and packs and from its model errors. Called for every event the node
   * emits, so keep it cheap; it depends on the node's params only, never on a run (DESIGN D3). Default: none.
   */
  protected configSecrets(): readonly string[] {
    return [];
  }

  /**
   * Emits an event of this node with its own secrets removed from the payload (see {@link LlmNode}): every event an
   * LLM node emits goes through here, so no path of it (model text, tool calls, results and errors, a decision's
   * invalid answer) can forget to.
   */
  protected override emitEvent(type: StreamEventTypeValue, payload: Record<string, unknown>): void {
    super.emitEvent(type, scrubSecrets(payload, usableSecrets(this.#secrets())));
  }

  #safeError(error: unknown, resolved: ResolvedModel): unknown {
    if (error instanceof Error && !(error instanceof DOMException)) {
      const clean = redactSecrets(error.message, this.#secrets(resolved));
      if (clean !== error.message) error.message = clean;
    }
    return error;
  }

  /**
   * Runs one tool call: validates the input against the tool's schema (arguments the model nested deeper than
   * `MAX_TOOL_INPUT_NESTING` are invalid input, see {@link ToolCallRecord.inputProblem}), executes it with up to
   * `attempts` attempts, and reports TOOL_CALL and TOOL_RESULT. A failed attempt that is retried is packed and quarantined; the final
   * failure is returned as an error result for the model to see (PRD-001 §3.5), never thrown. An attempt that takes
   * longer than the tool's `timeoutMs` fails. A result that is not JSON data (see `toolOutputProblem`: a Date, a Map,
   * NaN, a cycle, nesting deeper than `MAX_TOOL_OUTPUT_NESTING`, ...) is an error result naming the tool and where
   * (a JSON pointer), not retried. When the run is aborted the node stops waiting for the tool, whether it honours the
   * signal or not, and throws a {@link CallAbortedError} naming the tool.
   */
  protected async runTool(call: ToolCallRecord, tool: LlmTool | undefined, options: { attempts: number; signal?: AbortSignal; backpack: BackpackHandle }): Promise<ToolResultRecord> {
    const source = tool?.source ?? {};
    // A tool's input, result or error may quote the node's key (its param, or the env var its model was resolved
    // with): the key is learnt before the first event, and removed from the record the model, the Backpack and the
    // log get.
    const secrets = usableSecrets(this.#secrets(await this.#resolvedForSecrets()));
    this.emitEvent(StreamEventType.TOOL_CALL, { toolCallId: call.toolCallId, toolName: call.toolName, input: call.input, ...source });
    const started = performance.now();
    const finish = (given: ToolResultRecord): ToolResultRecord => {
      const record = scrubSecrets(given, secrets);
      this.emitEvent(StreamEventType.TOOL_RESULT, { ...record, durationMs: performance.now() - started, ...source });
      return record;
    };
    if (!tool) return finish({ toolCallId: call.toolCallId, toolName: call.toolName, error: `Unknown tool '${call.toolName}'`, attempts: 0 });
    if (call.inputProblem !== undefined) return finish({ toolCallId: call.toolCallId, toolName: call.toolName, error: `Invalid input for tool '${call.toolName}': ${call.inputProblem}`, attempts: 0 });
    const parsed = tool.inputSchema.safeParse(call.input);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ');
      return finish({ toolCallId: call.toolCallId, toolName: call.toolName, error: `Invalid input for tool '${call.toolName}': ${problems}`, attempts: 0 });
    }
    const aborted = (): CallAbortedError => new CallAbortedError(`node '${this.id}': tool '${call.toolName}' (call '${call.toolCallId}')`, options.signal!.reason);
    for (let attempt = 1; ; attempt++) {
      if (options.signal?.aborted) throw aborted();
      const timeout = tool.timeoutMs === undefined ? undefined : AbortSignal.timeout(tool.timeoutMs);
      const signal = timeout === undefined ? options.signal : options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
      let output: unknown;
      try {
        // Raced with the signal: a tool that ignores it is not waited for past the abort or its timeout.
        output = await raceAbort(tool.execute(parsed.data, { signal, backpack: options.backpack, toolCallId: call.toolCallId, toolName: call.toolName, node: this }), signal);
      } catch (error) {
        if (options.signal?.aborted) throw aborted();
        const message = timeout?.aborted ? `Tool '${call.toolName}' timed out after ${tool.timeoutMs} ms` : `Tool '${call.toolName}' failed: ${describeError(error).message}`;
        if (attempt >= options.attempts) return finish({ toolCallId: call.toolCallId, toolName: call.toolName, error: message, attempts: attempt });
        this.recordFailedAttempt(`tool-${call.toolName}-${keySegment(call.toolCallId)}`, attempt, { error: message, toolCallId: call.toolCallId, input: call.input });
        continue;
      }
      const result = output === undefined ? null : output;
      const problem = outputProblem(result);
      if (problem !== undefined) return finish({ toolCallId: call.toolCallId, toolName: call.toolName, error: `Tool '${call.toolName}' returned ${problem}`, attempts: attempt });
      return finish({ toolCallId: call.toolCallId, toolName: call.toolName, output: result, attempts: attempt });
    }
  }

  /**
   * The node's model, resolved to learn the keys it uses, when no model call of this node has resolved it yet (a node
   * that runs tools without calling a model); undefined when it has no model or it cannot be resolved (then its
   * `apiKey` param is all there is to remove).
   */
  async #resolvedForSecrets(): Promise<ResolvedModel | undefined> {
    // Once per node, not per tool call: a model resolved with no key of its own (an `apiKey` param) leaves the set empty.
    if (this.#modelResolved || this.llmParams.model === undefined) return undefined;
    return this.resolveModel().catch(() => undefined);
  }

  /**
   * Keeps a failed attempt in the trace but out of the active state: packs it under
   * `<nodeId>.failed.<label>.<attempt>` and quarantines it at once (PRD-001 §3.5, "retry failures").
   */
  protected recordFailedAttempt(label: string, attempt: number, data: Record<string, unknown>): void {
    const key = `${this.id}.failed.${label}.${attempt}`;
    // The node's own secrets out of what it packs (an error or an invalid answer may quote its key).
    this.backpack.pack(key, scrubSecrets({ attempt, ...data }, usableSecrets(this.#secrets())));
    this.backpack.quarantine(key, { reason: `attempt ${attempt} failed; a later attempt follows` });
  }

  /** Quarantines the exec attempt that failed before the node retries it. */
  protected override onAttemptFailed(error: unknown, attempt: Attempt, delayMs: number, scope: RunScope): void {
    super.onAttemptFailed(error, attempt, delayMs, scope);
    const data: Record<string, unknown> = { error: error instanceof Error ? error.message : String(error) };
    if (error instanceof InvalidModelOutputError && typeof error.output === 'string') data.output = error.output;
    this.recordFailedAttempt('exec', attempt.attempt, data);
  }


}

/**
 * What is wrong with a tool's result for the model, the Backpack and the log (see `toolOutputProblem`), as the rest
 * of `Tool 'x' returned ...`; undefined when it is JSON data.
 */
function outputProblem(output: unknown): string | undefined {
  try {
    const problem = toolOutputProblem(output);
    if (problem === undefined) return undefined;
    return `a result that is not JSON data: ${problem.path === '' ? 'the result' : `the value at '${problem.path}'`} is ${problem.message}`;
  } catch (error) {
    // A getter or a proxy that throws while the result is read.
    return `a result that could not be read: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * A model-chosen tool-call id as one segment of a Backpack key: as it is when it is 1-64 letters, digits, '_' or '-';
 * else `sha256-` and the first 16 hex digits of its SHA-256, so no id (`call..1`, `a.b`, `call.`, a long one) can
 * make a key invalid or add segments. The id itself is kept in the packed value.
 */
export function keySegment(toolCallId: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(toolCallId) ? toolCallId : `sha256-${createHash('sha256').update(toolCallId).digest('hex').slice(0, 16)}`;
}

/**
 * The assistant turns of a response. The SDK also answers invalid tool calls (unknown tool, bad input) with tool
 * messages of its own; the nodes run and answer every tool call themselves, so those are dropped (no duplicates).
 */
function assistantMessages(messages: readonly ModelMessage[]): ModelMessage[] {
  return messages.filter((m) => m.role === 'assistant');
}

function usageOf(usage: { inputTokens: number | undefined; outputTokens: number | undefined; totalTokens: number | undefined }): ModelReply['usage'] {
  return dropUndefined({ inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, totalTokens: usage.totalTokens });
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
