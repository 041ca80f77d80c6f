import { compileNamespacePattern, type NamespaceMatcher } from '../backpack/patterns.js';
import { describeThrown, reachesProxy } from '../flow/errors.js';
import { newEventId, newRunId } from './ids.js';
import { StreamEventType, type EventInput, type EventSink, type StreamEvent, type StreamEventTypeValue } from './types.js';
import { hardenClass } from '../harden.js';

/**
 * A subscriber. It runs synchronously inside `emit`; it may return a promise, whose rejection is reported like a
 * throw. Events are shared by all subscribers and the history: treat them as read-only.
 */
export type EventHandler = (event: StreamEvent) => unknown;

/** Reports a handler that threw or rejected. */
export type HandlerErrorReporter = (error: unknown, event: StreamEvent) => void;

/** Options of {@link EventStreamer}. */
export interface EventStreamerOptions {
  /** Run id of events emitted without one. Default: a new id from {@link newRunId}. */
  runId?: string;
  /** Session key stamped on every event. */
  sessionKey?: string;
  /** How many events the history keeps (the oldest are dropped first). Default 10,000; 0 keeps none. */
  historySize?: number;
  /** Called when a handler throws or rejects. Default: one line on stderr. */
  onHandlerError?: HandlerErrorReporter;
}

/** Which events `getHistory` returns; every given field must match. */
export interface HistoryFilter {
  type?: StreamEventTypeValue;
  /** A namespace pattern (DESIGN D5); events without a namespace never match. */
  namespace?: string;
  nodeId?: string;
  runId?: string;
}

interface Subscription {
  /** The event type, or undefined for every type. */
  readonly type: StreamEventTypeValue | undefined;
  /** Namespace filter, or undefined for none. */
  readonly matcher: NamespaceMatcher | undefined;
  readonly handler: EventHandler;
  readonly once: boolean;
  /** Cleared on unsubscribe, so a handler removed during a dispatch is not called for the rest of it. */
  active: boolean;
}

/** What {@link EventStreamer.getStats} reports. */
export interface EventStreamerStats {
  /** Events in the history (the last `historyCapacity` emitted). */
  totalEvents: number;
  /** The same, by event type (types absent from the history are absent), in type order. */
  eventsByType: Record<string, number>;
  /** Active subscriptions: in all, `on(type)`/`once(type)` ones by type, `on('*')` ones, `onNamespace` ones. */
  subscribers: { total: number; byType: Record<string, number>; wildcard: number; namespace: number };
  /** Events the history holds now. */
  historySize: number;
  /** Distinct node ids, namespaces and run ids among the events in the history (as BackpackFlow v2 counted them). */
  uniqueNodes: number;
  uniqueNamespaces: number;
  uniqueRuns: number;
  /** Most events the history holds (the `historySize` option). */
  historyCapacity: number;
}

const EVENT_TYPES: ReadonlySet<string> = new Set(Object.values(StreamEventType));
const DEFAULT_HISTORY_SIZE = 10_000;

let reportTo: (streamer: EventStreamer, error: unknown, event: StreamEvent) => void;

/**
 * The event stream of flows, nodes and the Backpack (DESIGN D11, D12). It stamps each event with the envelope
 * fields, keeps a bounded history and dispatches synchronously to subscribers. A subscriber that throws or
 * rejects is reported and never disturbs `emit`, the flow, or other subscribers. It is deliberately not an
 * EventEmitter: an `'error'` event with no subscriber is just an event.
 *
 * @example
 * const streamer = new EventStreamer({ sessionKey: 'chat-1' });
 * const stop = streamer.onNamespace('sales.**', (e) => console.log(e.type, e.namespace));
 * streamer.emit({ type: StreamEventType.NODE_START, namespace: 'sales.chat', nodeId: 'chat' });
 * stop();
 */
export class EventStreamer implements EventSink {
  /** Run id of events emitted without one. */
  readonly runId: string;
  /** Session key stamped on every event, if any. */
  readonly sessionKey: string | undefined;
  /** Capacity of the history. */
  readonly historySize: number;

  readonly #onHandlerError: HandlerErrorReporter;
  /** Last seq issued per run id. */
  readonly #lastSeq = new Map<string, number>();
  /** Copy-on-write: (un)subscribing replaces the array, so a dispatch in progress iterates a stable list. */
  #subscriptions: readonly Subscription[] = [];
  /** Ring buffer: grows up to historySize, then `#next` overwrites the oldest. */
  #ring: StreamEvent[] = [];
  #next = 0;

  constructor(options: EventStreamerOptions = {}) {
    const { runId, sessionKey, historySize = DEFAULT_HISTORY_SIZE, onHandlerError } = options;
    if (runId !== undefined) requireId('runId', runId);
    if (sessionKey !== undefined) requireId('sessionKey', sessionKey);
    if (!Number.isSafeInteger(historySize) || historySize < 0) {
      throw new RangeError(`EventStreamer: historySize must be an integer >= 0; got ${String(historySize)}`);
    }
    if (onHandlerError !== undefined && typeof onHandlerError !== 'function') {
      throw new TypeError('EventStreamer: onHandlerError must be a function');
    }
    this.runId = runId ?? newRunId();
    this.sessionKey = sessionKey;
    this.historySize = historySize;
    this.#onHandlerError = onHandlerError ?? reportToStderr;
  }

  /**
   * Stamps `input` into a full event (`v`, `id`, `seq` per run starting at 1, `timestamp`, `runId`, `sessionKey`),
   * records it in the history and hands it to every matching subscriber, synchronously. Never throws because of a
   * subscriber. Returns the event.
   */
  emit(input: EventInput): StreamEvent {
    const runId = input.runId ?? this.runId;
    const seq = (this.#lastSeq.get(runId) ?? 0) + 1;
    this.#lastSeq.set(runId, seq);
    const event: StreamEvent = {
      v: 1,
      id: newEventId(),
      seq,
      timestamp: Date.now(),
      runId,
      sessionKey: this.sessionKey,
      type: input.type,
      namespace: input.namespace,
      nodeId: input.nodeId,
      nodeName: input.nodeName,
      spanId: input.spanId,
      parentSpanId: input.parentSpanId,
      payload: input.payload ?? {},
    };
    this.#record(event);
    this.#dispatch(event);
    return event;
  }

  /** Makes the next event of `runId` carry `seq`, so a resumed run continues its numbering. */
  setNextSeq(runId: string, seq: number): void {
    requireId('runId', runId);
    if (!Number.isSafeInteger(seq) || seq < 1) {
      throw new RangeError(`EventStreamer.setNextSeq: seq of run '${runId}' must be an integer >= 1; got ${String(seq)}`);
    }
    this.#lastSeq.set(runId, seq - 1);
  }

  /**
   * Subscribes `handler` to events of `type`, or to every event with `'*'`. Returns the unsubscribe function.
   * To filter by namespace, use {@link EventStreamer.onNamespace}.
   */
  on(type: StreamEventTypeValue | '*', handler: EventHandler): () => void {
    return this.#subscribe(checkType('on', type), undefined, handler, false);
  }

  /** Like {@link EventStreamer.on}, but the handler runs for the first matching event only. */
  once(type: StreamEventTypeValue | '*', handler: EventHandler): () => void {
    return this.#subscribe(checkType('once', type), undefined, handler, true);
  }

  /**
   * Subscribes `handler` to every event whose namespace matches `pattern` (DESIGN D5: `*` is one segment, `**` zero
   * or more). Events without a namespace never match. Returns the unsubscribe function.
   */
  onNamespace(pattern: string, handler: EventHandler): () => void {
    if (typeof pattern !== 'string' || pattern === '') {
      throw new TypeError(`EventStreamer.onNamespace: pattern must be a non-empty string; got ${JSON.stringify(pattern)}`);
    }
    return this.#subscribe(undefined, compileNamespacePattern(pattern), handler, false);
  }

  /**
   * Removes the subscriptions of `handler` made with `on(type, ...)` or `once(type, ...)`. Returns whether any was
   * removed. Namespace subscriptions are removed with the function `onNamespace` returned.
   */
  off(type: StreamEventTypeValue | '*', handler: EventHandler): boolean {
    const key = checkType('off', type);
    const removed = this.#subscriptions.filter((s) => s.type === key && s.matcher === undefined && s.handler === handler);
    for (const subscription of removed) this.#unsubscribe(subscription);
    return removed.length > 0;
  }

  /** Events still in the history, oldest first, that match every field of `filter`. */
  getHistory(filter: HistoryFilter = {}): StreamEvent[] {
    const { type, namespace, nodeId, runId } = filter;
    const matcher = namespace === undefined ? undefined : compileNamespacePattern(namespace);
    const ring = this.#ring;
    const start = ring.length < this.historySize ? 0 : this.#next;
    const result: StreamEvent[] = [];
    for (let i = 0; i < ring.length; i++) {
      const event = ring[(start + i) % ring.length]!;
      if (type !== undefined && event.type !== type) continue;
      if (nodeId !== undefined && event.nodeId !== nodeId) continue;
      if (runId !== undefined && event.runId !== runId) continue;
      if (matcher !== undefined && (event.namespace === undefined || !matcher(event.namespace))) continue;
      result.push(event);
    }
    return result;
  }

  /**
   * Counts over the events the history holds (as BackpackFlow v2 counted them; nothing is counted on `emit`, which
   * stays as cheap as it was): in all and by type, distinct nodes, namespaces and runs; and the subscriptions (in
   * all, by event type, `'*'` ones, namespace ones) and the history's size and capacity.
   */
  getStats(): EventStreamerStats {
    const eventsByType: Record<string, number> = {};
    const byType: Record<string, number> = {};
    let wildcard = 0;
    let namespace = 0;
    for (const s of this.#subscriptions) {
      if (s.matcher !== undefined) namespace++;
      else if (s.type === undefined) wildcard++;
      else byType[s.type] = (byType[s.type] ?? 0) + 1;
    }
    const nodes = new Set<string>();
    const namespaces = new Set<string>();
    const runs = new Set<string>();
    for (const event of this.#ring) {
      eventsByType[event.type] = (eventsByType[event.type] ?? 0) + 1;
      if (event.nodeId !== undefined) nodes.add(event.nodeId);
      if (event.namespace !== undefined) namespaces.add(event.namespace);
      runs.add(event.runId);
    }
    return {
      totalEvents: this.#ring.length,
      eventsByType: Object.fromEntries(Object.entries(eventsByType).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
      subscribers: { total: this.#subscriptions.length, byType, wildcard, namespace },
      historySize: this.#ring.length,
      historyCapacity: this.historySize,
      uniqueNodes: nodes.size,
      uniqueNamespaces: namespaces.size,
      uniqueRuns: runs.size,
    };
  }

  /** Empties the history. Sequence numbers continue where they were. */
  clearHistory(): void {
    this.#ring = [];
    this.#next = 0;
  }

  #record(event: StreamEvent): void {
    const ring = this.#ring;
    if (ring.length < this.historySize) {
      ring.push(event);
      return;
    }
    if (this.historySize === 0) return;
    ring[this.#next] = event;
    this.#next = this.#next + 1 === ring.length ? 0 : this.#next + 1;
  }

  #dispatch(event: StreamEvent): void {
    const subscriptions = this.#subscriptions;
    for (let i = 0; i < subscriptions.length; i++) {
      const s = subscriptions[i]!;
      if (!s.active) continue;
      if (s.type !== undefined && s.type !== event.type) continue;
      if (s.matcher !== undefined && (event.namespace === undefined || !s.matcher(event.namespace))) continue;
      // Removed before the call, so an event the handler emits itself cannot trigger it a second time.
      if (s.once) this.#unsubscribe(s);
      try {
        const result = s.handler(event);
        if (result !== undefined && result !== null && typeof (result as PromiseLike<unknown>).then === 'function') {
          (result as PromiseLike<unknown>).then(undefined, (error: unknown) => this.#report(error, event));
        }
      } catch (error) {
        this.#report(error, event);
      }
    }
  }

  #report(error: unknown, event: StreamEvent): void {
    try {
      this.#onHandlerError(error, event);
    } catch (reporterError) {
      reportToStderr(reporterError, event);
    }
  }

  static {
    reportTo = (streamer, error, event) => streamer.#report(error, event);
  }

  #subscribe(
    type: StreamEventTypeValue | undefined,
    matcher: NamespaceMatcher | undefined,
    handler: EventHandler,
    once: boolean,
  ): () => void {
    if (typeof handler !== 'function') throw new TypeError('EventStreamer: the handler must be a function');
    const subscription: Subscription = { type, matcher, handler, once, active: true };
    this.#subscriptions = [...this.#subscriptions, subscription];
    return () => this.#unsubscribe(subscription);
  }

  #unsubscribe(subscription: Subscription): void {
    if (!subscription.active) return;
    subscription.active = false;
    this.#subscriptions = this.#subscriptions.filter((s) => s !== subscription);
  }
}

function checkType(method: string, type: string): StreamEventTypeValue | undefined {
  if (type === '*') return undefined;
  if (EVENT_TYPES.has(type)) return type as StreamEventTypeValue;
  const hint = type.includes('*') ? ` To filter by namespace, use onNamespace('${type}', handler).` : '';
  throw new TypeError(
    `EventStreamer.${method}: unknown event type '${type}'; use '*' or one of the StreamEventType values (e.g. 'node.started').${hint}`,
  );
}

function requireId(name: string, value: unknown): void {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`EventStreamer: ${name} must be a non-empty string; got ${JSON.stringify(value)}`);
  }
}

/**
 * Reports what a subscriber of `streamer` threw, or rejected with, for `event`, as `emit` reports it (the streamer's
 * `onHandlerError`, else stderr). For subscribers that handle their own results where they run (a node's, in its own
 * execution: see NodeEventView). Not exported from the package.
 */
export function reportHandlerError(streamer: EventStreamer, error: unknown, event: StreamEvent): void {
  reportTo(streamer, error, event);
}

function reportToStderr(error: unknown, event: StreamEvent): void {
  // Read as data only (no getter, trap or toString of the thrown value runs here: it may be a node's).
  const { name, message } = describeThrown(error);
  const primitive = error === null || (typeof error !== 'object' && typeof error !== 'function');
  const reason = primitive ? message : !reachesProxy(error) && error instanceof Error ? `${name}: ${message}` : message;
  try {
    process.stderr.write(
      `backpackflow: a handler of '${event.type}' event ${event.id} failed: ${reason.replace(/\s*\n\s*/g, ' ')}\n`,
    );
  } catch {
    // stderr itself is gone; there is nowhere left to report to, and emit must not throw.
  }
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(EventStreamer);
