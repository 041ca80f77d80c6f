/**
 * The event stream as one node sees it (DESIGN D6, D12). A node reads events through this view only: it shows the
 * node's own events and those of nodes inside it, the flow's lifecycle and route events, and Backpack events of
 * keys the node may read now; never another node's payloads that may quote state (model, tool, memory, checkpoint,
 * error events), never a denial by an item rule (to the node such a key is missing), and never what a Backpack event
 * says of an item the node may not have been able to read (a value summary; the tags of another version; another
 * node's quarantine reason: see {@link NodeEventView}'s `#seen`). Every event it hands out is a copy of the node's
 * own. A node emits through it in its own name (see {@link NodeEventView.emit}, the one gate for events node code
 * emits).
 */
import type { BackpackHandle } from '../backpack/index.js';
import { compileNamespacePattern } from '../backpack/patterns.js';
import { copyData, snapshot, type EventHandler, type EventStreamer, type HistoryFilter, type StreamEvent, type StreamEventTypeValue } from '../events/index.js';
import { reportHandlerError } from '../events/streamer.js';
import type { EventInput } from '../events/types.js';
import type { BackpackNode } from './backpack-node.js';
import { currentExecution, type NodeExecution } from './execution.js';
import { hardenClass } from '../harden.js';

/** Events whose payload carries no state: anyone in the run may see them. */
const LIFECYCLE: ReadonlySet<string> = new Set([
  'run.started', 'run.completed', 'node.started', 'node.prep_completed', 'node.exec_completed', 'node.completed', 'route.taken', 'route.missing',
]);
/**
 * The event types node code may emit: what a node does (model and tool calls, memory, its own `custom` events).
 * Every other type is the library's account of what happened, written only by the library: the lifecycle of runs
 * and nodes (started, completed, retry, error, interrupted), routes, the Backpack's events, and the runtime's
 * (`checkpoint.saved`, `interrupt.answered`, which `loadRunPoint` and `resumeRun` trust).
 */
const NODE_TYPES: ReadonlySet<string> = new Set([
  'model.started', 'model.delta', 'model.completed', 'tool.called', 'tool.result', 'memory.written', 'memory.retrieved', 'custom',
]);

/** True for `own` and namespaces under it. */
function ownOrInside(own: string, namespace: string | undefined): boolean {
  return namespace !== undefined && (namespace === own || namespace.startsWith(`${own}.`));
}

/**
 * An event of `execution`'s node: its id, class name (as registered) and namespace (or `namespace`, one inside it), and the run and
 * span of the execution. How the library emits a node's lifecycle; node code goes through {@link NodeEventView.emit}.
 * Not exported from the package.
 */
export function nodeEvent(execution: NodeExecution, type: StreamEventTypeValue, payload: Record<string, unknown> | undefined, namespace = execution.node.namespace): EventInput {
  const { node, scope } = execution;
  return { type, payload, namespace, nodeId: node.id, nodeName: execution.nodeName, runId: scope.runId, spanId: execution.spanId, parentSpanId: scope.spanId };
}

/** What a node can do with the event stream. */
export class NodeEventView {
  readonly #streamer: EventStreamer;
  readonly #node: BackpackNode;
  readonly #namespace: string;
  readonly #handle: () => BackpackHandle;
  /** Whether a run the node is part of has started (see runHasStarted). */
  readonly #inRun: () => boolean;

  /** @internal Created by BackpackNode for itself. */
  constructor(streamer: EventStreamer, node: BackpackNode, handle: () => BackpackHandle, inRun: () => boolean) {
    this.#streamer = streamer;
    this.#node = node;
    this.#namespace = node.namespace;
    this.#handle = handle;
    this.#inRun = inRun;
  }

  /**
   * Refuses a use of this view from another node's execution: a node reads events through its own view (what its
   * rules let it see), never through another's, whose events and rules are not its own; and a subscriber runs as the
   * node that made it. The owner (code in no execution) may use any view, but not once a run the node is part of has
   * started: node code can get outside every execution then (a FinalizationRegistry callback), and would read another
   * node's events through it.
   */
  #checkCaller(operation: string): void {
    const running = currentExecution.getStore();
    if (running !== undefined && running.node !== this.#node) {
      throw new TypeError(
        `Node '${running.node.id}' cannot ${operation} through the eventStreamer of node '${this.#node.id}': a node reads and subscribes to events through its own eventStreamer`,
      );
    }
    if (running === undefined && this.#inRun()) {
      throw new TypeError(
        `Code outside every node's execution cannot ${operation} through the eventStreamer of node '${this.#node.id}' once its flow has run: read and subscribe through the flow's eventStreamer (the owner's), or from the node's own code`,
      );
    }
  }

  /** Whether the node may see `event` (asked by the node itself or the owner: see the class comment). */
  visible(event: StreamEvent): boolean {
    this.#checkCaller('judge events');
    return this.#visible(event);
  }

  #visible(event: StreamEvent): boolean {
    const own = ownOrInside(this.#namespace, event.namespace);
    switch (event.type) {
      case 'access.denied':
        return own && event.payload.hidden !== true;
      case 'backpack.unpacked':
        return event.payload.found === true && this.#mayRead(event.payload.key);
      case 'backpack.packed':
        return this.#mayRead(event.payload.key);
      case 'backpack.quarantined':
        // Its own quarantines too (the item is no longer active, and the reason is the node's own text), but not one
        // of an item it could not read (`hidden`): that would tell it the key existed.
        // A `hidden` one never, to the node that made it, even once it may read the key (it packed it itself since).
        if (event.payload.hidden === true) return !own && this.#mayRead(event.payload.key);
        return own || this.#mayRead(event.payload.key);
      default:
        return own || LIFECYCLE.has(event.type);
    }
  }

  #mayRead(key: unknown): boolean {
    return typeof key === 'string' && this.#handle().getItem(key) !== undefined;
  }

  /**
   * Emits an event of this node: the one gate for events node code emits (`BackpackNode.emitEvent` comes here too).
   * A node emits while it runs: from its prep, exec or post (after awaits too, and from its subscribers while it
   * runs). Node id, class name, run and span are those of its execution, whatever `input` says; its namespace may be
   * the node's or one inside it. Refused with a TypeError:
   * - any type but `model.*`, `tool.*`, `memory.*` and `custom`: the lifecycle of runs and nodes (`node.started`,
   *   `node.completed`, `node.retry`, `error`, ...), routes, the Backpack's events and the runtime's
   *   (`checkpoint.saved`, `interrupt.answered`) are written by the library alone, since the runs list, traces and
   *   `resumeRun` trust them;
   * - a namespace outside the node's;
   * - an emit after the node's execution ended (from a timer or a promise left running): it would land in a later
   *   step as if it happened in this one;
   * - an emit outside the node's execution (code reaching this node through routes does not speak for it).
   */
  emit(input: EventInput): StreamEvent {
    const node = this.#node;
    // Each field of `input` is read once, here: what is checked below is what the event carries (a getter could
    // answer the node's namespace to the check and another node's to a second read).
    const { type, namespace, payload: given } = input;
    if (!NODE_TYPES.has(type)) {
      throw new TypeError(
        `Node '${node.id}' cannot emit '${type}' events: the library writes them (run and node lifecycle, routes, the Backpack's and the runtime's events); ` +
          'a node emits model.*, tool.*, memory.* and custom events',
      );
    }
    if (namespace !== undefined && (typeof namespace !== 'string' || !ownOrInside(this.#namespace, namespace))) {
      throw new TypeError(`Node '${node.id}' in namespace '${this.#namespace}' cannot emit events for namespace '${typeof namespace === 'string' ? namespace : typeof namespace}'`);
    }
    const execution = currentExecution.getStore();
    if (execution?.node !== node || execution.ended) {
      const where = execution?.node === node
        ? 'its execution ended (a timer or a promise left running after post returned)'
        : execution === undefined ? 'it is not running' : `it is not running (this is an execution of node '${execution.node.id}')`;
      throw new TypeError(`Node '${node.id}' (namespace '${this.#namespace}') cannot emit '${type}': ${where}; a node emits from its prep, exec or post, before they return`);
    }
    // The payload is copied now and the node gets a copy of the event: what the node holds is nobody else's object,
    // so nothing it does later changes what the owner, other nodes or the run's log see (events/snapshot.ts).
    const payload = given === undefined ? undefined : snapshot(given);
    return copyData(this.#streamer.emit(nodeEvent(execution, type, payload, namespace ?? this.#namespace)));
  }

  /** Subscribes to visible events of `type` (or every type with `'*'`); returns the unsubscribe function. */
  on(type: StreamEventTypeValue | '*', handler: EventHandler): () => void {
    this.#checkCaller('subscribe to events');
    return this.#streamer.on(type, this.#guard(handler));
  }

  /** Like {@link on}, for the first visible event only. */
  once(type: StreamEventTypeValue | '*', handler: EventHandler): () => void {
    this.#checkCaller('subscribe to events');
    let done = false;
    let stop: () => void = () => undefined;
    stop = this.#streamer.on(type, this.#guard((event) => {
      if (done) return undefined;
      done = true;
      stop();
      return handler(event);
    }));
    return stop;
  }

  /** Subscribes to visible events whose namespace matches `pattern` (D5). */
  onNamespace(pattern: string, handler: EventHandler): () => void {
    this.#checkCaller('subscribe to events');
    return this.#streamer.onNamespace(pattern, this.#guard(handler));
  }

  /** Visible events still in the history, oldest first, that match `filter` (as the node sees them, see {@link seen}). */
  getHistory(filter: HistoryFilter = {}): StreamEvent[] {
    this.#checkCaller('read the event history');
    // One read of each field: the pattern checked is the pattern used.
    const { type, namespace, nodeId, runId } = filter;
    if (namespace !== undefined) compileNamespacePattern(namespace);
    const out: StreamEvent[] = [];
    for (const event of this.#streamer.getHistory({ type, namespace, nodeId, runId })) if (this.#visible(event)) out.push(this.#seen(event));
    return out;
  }

  /**
   * A visible event as this node sees it: a copy of its own (events/snapshot.ts: the object the owner, the history
   * and the run's log hold is never handed to node code). Visibility of Backpack events is judged by the key's item
   * now, and the item an older event was about may be one the node may not read (a value a later pack replaced, an
   * item under an item rule, a quarantined one): so a `backpack.packed` event never carries its `valueSummary`, and its
   * `tags` only when it is about the version the node reads now; a `backpack.quarantined` event carries its `reason`
   * (free text, which may quote the item) only when this node (or one inside it) quarantined it.
   */
  #seen(event: StreamEvent): StreamEvent {
    // A copy of data properties only, taken first: it runs no getter, trap or toJSON of anything in the event (the
    // library's events hold only data; an object node code slipped into one must not run in this node's execution).
    const copy = copyData(event);
    if (copy.type === 'backpack.packed') {
      const { valueSummary: _summary, tags, ...payload } = copy.payload;
      const key = copy.payload.key;
      const current = typeof key === 'string' ? this.#handle().getItem(key) : undefined;
      const sameVersion = current !== undefined && current.metadata.version === copy.payload.version;
      return Object.freeze({ ...copy, payload: Object.freeze(sameVersion && tags !== undefined ? { ...payload, tags } : payload) });
    }
    if (copy.type === 'backpack.quarantined' && !ownOrInside(this.#namespace, copy.namespace)) {
      const { reason: _reason, ...payload } = copy.payload;
      return Object.freeze({ ...copy, payload: Object.freeze(payload) });
    }
    return copy;
  }

  /**
   * Wraps a subscriber: it sees only visible events, and runs in the execution of this node it was subscribed from
   * (so what it emits is the node's, in its span, and refused once that execution ended), or outside any execution
   * if the owner subscribed it (another node's code cannot: see {@link #checkCaller}); never in the execution that
   * emitted the event (a subscriber never acts inside another node's execution).
   */
  #guard(handler: EventHandler): EventHandler {
    const running = currentExecution.getStore();
    const own = running?.node === this.#node ? running : undefined;
    const streamer = this.#streamer;
    return (event) => {
      if (!this.#visible(event)) return undefined;
      const shown = this.#seen(event);
      // Everything of the subscriber runs where it runs, and nothing of it comes back to the emitter, whose execution
      // (another node's, maybe) is current when the event is dispatched: what it throws is reported here, and what it
      // returns (its `then`, a getter, ...) is read and awaited here.
      const call = (): undefined => {
        try {
          const result: unknown = handler(shown);
          if (result !== null && (typeof result === 'object' || typeof result === 'function')) {
            const then = (result as { then?: unknown }).then;
            if (typeof then === 'function') then.call(result, undefined, (error: unknown) => reportHandlerError(streamer, error, event));
          }
        } catch (error) {
          reportHandlerError(streamer, error, event);
        }
        return undefined;
      };
      return own === undefined ? currentExecution.exit(call) : currentExecution.run(own, call);
    };
  }
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(NodeEventView);
