import { createColors } from 'picocolors';
import type { EventStreamer } from './streamer.js';
import { terminalText } from './terminal-text.js';
import { StreamEventType, type ErrorSummary, type EventPayloadMap, type StreamEvent } from './types.js';

/** Options of {@link FlowVisualizer}. */
export interface FlowVisualizerOptions {
  /** Where the trace goes. Default: `process.stdout`. */
  output?: NodeJS.WritableStream;
  /** Colors (ANSI codes). Default: on when `output` is a terminal and `NO_COLOR` is not set. */
  color?: boolean;
  /** Also print every pack and unpack. Quarantines and access denials are always printed. */
  showBackpack?: boolean;
  /**
   * Applied to every line before it is printed: the CLI passes the text redaction the run's log is written with, so
   * that a question, an error, a value summary or a model's answer shows on the terminal (and in the CI logs and files
   * it is copied to) as it is stored. With it, a model call's streamed tokens are held and printed when the call ends,
   * redacted as one text, as the log stores them: a secret split across tokens, or one whose start alone looks like
   * nothing (`password: ` then the value), is never printed in part before the rest arrives. Default: none (tokens
   * are printed as they arrive).
   */
  redact?: (line: string) => string;
}

type Colors = ReturnType<typeof createColors>;

const INDENT = '│  ';

/** Recorded text (ids, keys, messages, actions) as the trace prints it: see terminalText. */
function t(value: unknown): string {
  return terminalText(String(value));
}

/**
 * Prints the live, hierarchical trace of flow runs (PRD-004 §8.2): one line per run, node start and end, retry,
 * error, route, quarantine and access denial (and pack/unpack with `showBackpack`), indented by the depth of the
 * event's span in the span tree (`parentSpanId`). Lines that belong to a node (retries, errors, backpack
 * accesses) sit one level below it; a route sits at the level of the nodes it connects.
 *
 * ```
 * ▶ run youtube.research run-1
 * │  ⚙ YouTubeResearchAgentNode youtube.research.agent
 * │  │  ⚙ YouTubeSearchNode youtube.research.agent.search
 * │  │  │  ↻ attempt 1/3 failed: TimeoutError: slow; retrying in 10ms
 * │  │  ✓ YouTubeSearchNode 12.5ms → default
 * │  │  → route default: search → analysis
 * ```
 *
 * Errors are red when colored; with `color: false` the output holds no ANSI codes at all. Every text the run
 * supplies (ids, names, keys, messages, actions, model output) goes through {@link terminalText}: no control or
 * bidirectional character of it reaches the terminal.
 */
export class FlowVisualizer {
  readonly #output: NodeJS.WritableStream;
  readonly #redact: (line: string) => string;
  /** Whether streamed tokens are held until their call ends (see FlowVisualizerOptions.redact). */
  readonly #holdTokens: boolean;
  /** The text each model call has streamed and not yet printed (by call key), when tokens are held. */
  readonly #held = new Map<string, { indent: string; label: string; text: string }>();
  readonly #c: Colors;
  readonly #showBackpack: boolean;
  /** Depth and run of each span still open. Node spans close at their end; a run's spans close with the run. */
  readonly #spans = new Map<string, { depth: number; runId: string }>();
  readonly #unsubscribe: () => void;
  /** The model call whose tokens the current line shows, if a line of tokens is open. */
  #streaming: { key: string; indent: string } | undefined;
  /** Model calls whose tokens were shown (a later delta continues on a `…` line). */
  readonly #streamed = new Set<string>();
  /** Runs whose segment continues earlier steps (resumed or forked): their end counts the steps it added. */
  readonly #continued = new Set<string>();

  constructor(streamer: EventStreamer, options: FlowVisualizerOptions = {}) {
    this.#output = options.output ?? process.stdout;
    const isTTY = (this.#output as { isTTY?: boolean }).isTTY === true;
    this.#c = createColors(options.color ?? (isTTY && process.env.NO_COLOR === undefined));
    this.#showBackpack = options.showBackpack ?? false;
    this.#redact = options.redact ?? ((line) => line);
    this.#holdTokens = options.redact !== undefined;
    this.#unsubscribe = streamer.on('*', (event) => this.#render(event));
  }

  /** Stops printing (ending a line of streamed tokens). Calling it again does nothing. */
  detach(): void {
    this.#unsubscribe();
    this.#releaseHeld(() => true);
    this.#endStream();
  }

  /**
   * Tokens as they arrive: the first delta of a model call opens a line (`✎ <model> (<purpose>): `) and each delta
   * is written to it at once; the line ends when anything else is printed or the call completes, and a later delta
   * of the same call opens a continuation line (`✎ … `). Control characters (ANSI escapes a model might emit) are
   * shown as escapes (terminalText); a newline in the text continues at the line's indentation.
   */
  #delta(event: StreamEvent, depth: number): void {
    const p = event.payload as { delta?: unknown; model?: unknown; purpose?: unknown; attempt?: unknown };
    if (typeof p.delta !== 'string' || p.delta === '') return;
    const key = JSON.stringify([event.runId, event.spanId ?? null, p.purpose ?? null, p.attempt ?? null]);
    const indent = depth > 0 ? this.#c.dim(INDENT.repeat(depth)) : '';
    if (this.#holdTokens) {
      // Keyed by the call too (LlmNode numbers its calls): two calls of one node streaming at once stay apart.
      const call = JSON.stringify([event.runId, event.spanId ?? null, (p as { call?: unknown }).call ?? null, p.purpose ?? null, p.attempt ?? null]);
      const held = this.#held.get(call);
      if (held !== undefined) held.text += p.delta;
      else this.#held.set(call, { indent, label: this.#label(p), text: p.delta });
      return;
    }
    if (this.#streaming?.key !== key) {
      this.#endStream();
      const continued = this.#streamed.has(key);
      const label = continued ? '… ' : this.#label(p);
      this.#output.write(`${indent}${this.#c.magenta('✎')} ${this.#c.dim(label)}`);
      this.#streaming = { key, indent };
      this.#streamed.add(key);
    }
    const text = terminalText(p.delta, { continuation: `${indent}   ` });
    this.#output.write(text);
  }

  /** The label of a model call's tokens (`<model> (<purpose>): `), redacted as the log stores them, made safe for the terminal. */
  #label(p: { model?: unknown; purpose?: unknown }): string {
    return t(this.#redact(`${String(p.model ?? 'model')}${p.purpose === undefined ? '' : ` (${String(p.purpose)})`}: `));
  }

  /**
   * Prints the held text of the model calls whose key `which` takes (see FlowVisualizerOptions.redact): one line each,
   * redacted as a whole, then made safe for the terminal.
   */
  #releaseHeld(which: (call: readonly unknown[]) => boolean): void {
    for (const [key, held] of this.#held) {
      if (!which(JSON.parse(key) as unknown[])) continue;
      this.#held.delete(key);
      this.#endStream();
      const text = terminalText(this.#redact(held.text), { continuation: `${held.indent}   ` });
      this.#output.write(`${held.indent}${this.#c.magenta('✎')} ${this.#c.dim(held.label)}${text}\n`);
    }
  }

  /** Ends the line of streamed tokens, if one is open. */
  #endStream(): void {
    if (this.#streaming === undefined) return;
    this.#output.write('\n');
    this.#streaming = undefined;
  }

  #render(event: StreamEvent): void {
    const spanDepth = this.#openSpan(event);
    if (event.type === StreamEventType.MODEL_DELTA) {
      this.#delta(event, spanDepth + 1);
      return;
    }
    // Held tokens are printed when their call ends, or at the latest with their node's or run's end.
    if (this.#held.size > 0) {
      const ended = (event.payload as { call?: unknown }).call;
      if (event.type === StreamEventType.MODEL_END) {
        this.#releaseHeld((call) => call[0] === event.runId && call[1] === (event.spanId ?? null) && (ended === undefined || call[2] === ended));
      } else if (event.type === StreamEventType.NODE_END || event.type === StreamEventType.ERROR) {
        this.#releaseHeld((call) => call[0] === event.runId && call[1] === (event.spanId ?? null));
      } else if (event.type.startsWith('run.')) this.#releaseHeld((call) => call[0] === event.runId);
    }
    const text = this.#describe(event);
    if (text !== undefined || event.type === StreamEventType.MODEL_END) this.#endStream();
    if (text !== undefined) {
      const ownLine = event.type.startsWith('run.') || event.type === StreamEventType.NODE_START || event.type === StreamEventType.NODE_END;
      const depth = ownLine ? spanDepth : spanDepth + 1;
      const indent = depth > 0 ? this.#c.dim(INDENT.repeat(depth)) : '';
      this.#output.write(`${indent}${this.#redact(text)}\n`);
    }
    this.#closeSpans(event);
  }

  /**
   * The depth of the event's span, registering the span on first sight: a span is one level below its parent.
   * An event without a span of its own belongs to its parent span's level (-1 when there is none).
   */
  #openSpan(event: StreamEvent): number {
    const parent = event.parentSpanId === undefined ? undefined : this.#spans.get(event.parentSpanId);
    const parentDepth = parent === undefined ? -1 : parent.depth;
    if (event.spanId === undefined) return parentDepth;
    let span = this.#spans.get(event.spanId);
    if (span === undefined) {
      span = { depth: parentDepth + 1, runId: event.runId };
      this.#spans.set(event.spanId, span);
    }
    return span.depth;
  }

  #closeSpans(event: StreamEvent): void {
    if (event.type === StreamEventType.RUN_END || event.type === StreamEventType.RUN_ERROR || event.type === StreamEventType.RUN_WAITING) {
      for (const [spanId, span] of this.#spans) if (span.runId === event.runId) this.#spans.delete(spanId);
      for (const key of this.#streamed) if ((JSON.parse(key) as unknown[])[0] === event.runId) this.#streamed.delete(key);
      this.#continued.delete(event.runId);
    } else if ((event.type === StreamEventType.NODE_END || event.type === StreamEventType.ERROR || event.type === StreamEventType.NODE_INTERRUPT) && event.spanId !== undefined) {
      this.#spans.delete(event.spanId);
    }
  }

  /**
   * ` · 3 steps`: the steps this segment took (the `steps` of its end event); `more steps` when it continues a run's
   * earlier steps (resumed or forked), whose numbering goes on from there.
   */
  #steps(runId: string, count: number | undefined): string {
    if (typeof count !== 'number') return '';
    return ` · ${count} ${this.#continued.has(runId) ? 'more ' : ''}step${count === 1 ? '' : 's'}`;
  }

  /** The line for `event` (without indentation), or undefined for events the trace does not show. */
  #describe(event: StreamEvent): string | undefined {
    const c = this.#c;
    const name = t(event.nodeName ?? event.nodeId ?? '(node)');
    switch (event.type) {
      case StreamEventType.RUN_START: {
        const p = event.payload as Partial<EventPayloadMap['run.started']>;
        const flow = t(p.flowNamespace || event.namespace || '(root flow)');
        const origin = p.forkedFrom ? c.yellow(` (fork of ${t(p.forkedFrom.runId)} at step ${t(p.forkedFrom.step)})`) : p.resumed ? c.yellow(' (resumed)') : '';
        if (p.forkedFrom || p.resumed) this.#continued.add(event.runId);
        return `${c.bold('▶ run')} ${c.bold(flow)} ${c.dim(t(event.runId))}${origin}`;
      }
      case StreamEventType.RUN_END: {
        const p = event.payload as Partial<EventPayloadMap['run.completed']>;
        return `${c.green('■ run completed')}${this.#steps(event.runId, p.steps)}${separated(duration(c, p.durationMs))}${action(c, p.action)}`;
      }
      case StreamEventType.RUN_WAITING: {
        const p = event.payload as Partial<EventPayloadMap['run.waiting']>;
        return c.yellow(`■ run waiting${this.#steps(event.runId, p.steps)}${separated(formatDuration(p.durationMs))}: ${t(p.interrupt?.nodeId ?? '?')} asks ${t(JSON.stringify(p.interrupt?.payload))}`);
      }
      case StreamEventType.NODE_INTERRUPT:
        return `${c.yellow('?')} ${name} ${c.yellow('interrupted')}`;
      case StreamEventType.RUN_ERROR: {
        const p = event.payload as Partial<EventPayloadMap['run.failed']>;
        return c.red(`■ run failed${this.#steps(event.runId, p.steps)}${separated(formatDuration(p.durationMs))}: ${formatError(p.error)}`);
      }
      case StreamEventType.NODE_START:
        return `${c.cyan('⚙')} ${c.bold(name)}${event.namespace ? ` ${c.dim(t(event.namespace))}` : ''}`;
      case StreamEventType.NODE_END: {
        const p = event.payload as Partial<EventPayloadMap['node.completed']>;
        return `${c.green('✓')} ${name}${duration(c, p.durationMs)}${action(c, p.action)}`;
      }
      case StreamEventType.NODE_RETRY: {
        const p = event.payload as Partial<EventPayloadMap['node.retry']>;
        const wait = typeof p.delayMs === 'number' ? `; retrying in ${formatMs(p.delayMs)}` : '; retrying';
        return c.yellow(`↻ attempt ${t(p.attempt ?? '?')}/${t(p.maxRetries ?? '?')} failed: ${formatError(p.error)}${wait}`);
      }
      case StreamEventType.ERROR: {
        const p = event.payload as Partial<EventPayloadMap['error']>;
        const who = event.nodeName ?? event.nodeId;
        return c.red(`✗ ${who === undefined ? '' : `${t(who)} `}failed${p.phase ? ` in ${t(p.phase)}` : ''}: ${formatError(p.error)}`);
      }
      case StreamEventType.ROUTE: {
        const p = event.payload as Partial<EventPayloadMap['route.taken']>;
        return c.cyan(`→ route ${t(p.action)}: ${t(p.from)} → ${t(p.to)}`);
      }
      case StreamEventType.ROUTE_MISSING: {
        const p = event.payload as Partial<EventPayloadMap['route.missing']>;
        const available = p.available && p.available.length > 0 ? t(p.available.join(', ')) : 'none';
        return c.yellow(`⚠ no route for '${t(p.action)}' from ${t(p.from)} (available: ${available}); the flow ends here`);
      }
      case StreamEventType.BACKPACK_QUARANTINE: {
        const p = event.payload as Partial<EventPayloadMap['backpack.quarantined']>;
        return c.magenta(`⊘ quarantined ${t(p.key)}: ${t(p.reason)}`);
      }
      case StreamEventType.ACCESS_DENIED: {
        const p = event.payload as Partial<EventPayloadMap['access.denied']>;
        return c.magenta(`⛔ access denied: ${name} may not ${t(p.operation)} ${t(p.key)} (${t(p.rule)})`);
      }
      case StreamEventType.BACKPACK_PACK: {
        if (!this.#showBackpack) return undefined;
        const p = event.payload as Partial<EventPayloadMap['backpack.packed']>;
        const tags = p.tags && p.tags.length > 0 ? c.dim(` [${t(p.tags.join(', '))}]`) : '';
        return `${c.blue('+ pack')} ${t(p.key)} v${t(p.version)} = ${t(p.valueSummary)}${tags}`;
      }
      case StreamEventType.BACKPACK_UNPACK: {
        if (!this.#showBackpack) return undefined;
        const p = event.payload as Partial<EventPayloadMap['backpack.unpacked']>;
        return `${c.blue('· unpack')} ${t(p.key)}${p.found === false ? c.dim(' (not found)') : ''}`;
      }
      default:
        return undefined;
    }
  }
}


/** ` 2.0ms` → ` · 2.0ms`, for the run summary lines. */
function separated(text: string): string {
  return text === '' ? '' : ` ·${text}`;
}

function duration(c: Colors, ms: number | undefined): string {
  const text = formatDuration(ms);
  return text === '' ? '' : c.dim(text);
}

function action(c: Colors, name: string | undefined): string {
  return name === undefined ? '' : ` → ${c.cyan(t(name))}`;
}

function formatDuration(ms: number | undefined): string {
  return typeof ms === 'number' && Number.isFinite(ms) ? ` ${formatMs(ms)}` : '';
}

/** `0.42ms`, `12.5ms`, `1.50s`: stable text for logs and tests. */
function formatMs(ms: number): string {
  if (ms < 1) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${ms.toFixed(1)}ms`;
  return `${(ms / 1000).toFixed(2)}s`;
}

/**
 * V8's messages for a write to a frozen object: what a node gets when it changes its params in place (frozen under
 * `run`) or a value it read from the Backpack, which its generic words do not say.
 */
const FROZEN_WRITE = /object is not extensible|Cannot assign to read only property|Cannot add property|Cannot delete property|Cannot redefine property/;

function formatError(error: ErrorSummary | undefined): string {
  if (error === undefined) return 'unknown error';
  const hint = error.name === 'TypeError' && FROZEN_WRITE.test(error.message) ? ' (params and values read from the Backpack are frozen: change a copy, e.g. structuredClone(value))' : '';
  return t(`${error.name}: ${error.message}${hint}`.replace(/\s*\n\s*/g, ' '));
}
