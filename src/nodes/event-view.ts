/**
 * The event stream as one node sees it (DESIGN D6, D12). A node reads events through this view only: it shows the
 * node's own events and those of nodes inside it, the flow's lifecycle and route events, and Backpack events of
 * keys the node may read now; never another node's payloads that may quote state (model, tool, memory, checkpoint,
 * error events), never a denial by an item rule (to the node such a key is missing), and never a value summary (a
 * `backpack.packed` event is judged by the key's item now, which may not be the item the event was about). A node
 * emits through it in its own name: the event's node id, class name, run and span are the node's own, whatever the
 * input says (its namespace may be the node's or one inside it); it cannot emit the events that only the Backpack
 * and the runtime write.
 */
import type { BackpackHandle } from '../backpack/index.js';
import { compileNamespacePattern } from '../backpack/patterns.js';
import type { EventHandler, EventStreamer, HistoryFilter, StreamEvent, StreamEventTypeValue } from '../events/index.js';
import type { EventInput } from '../events/types.js';
import type { BackpackNode } from './backpack-node.js';
import { currentExecution } from './execution.js';

/** Events whose payload carries no state: anyone in the run may see them. */
const LIFECYCLE: ReadonlySet<string> = new Set([
  'run.started', 'run.completed', 'node.started', 'node.prep_completed', 'node.exec_completed', 'node.completed', 'route.taken', 'route.missing',
]);
/** Events only the Backpack and the runtime emit. */
const RESERVED: ReadonlySet<string> = new Set([
  'backpack.packed', 'backpack.unpacked', 'backpack.quarantined', 'access.denied', 'checkpoint.saved', 'run.started', 'run.completed', 'run.failed',
  'run.waiting', 'node.interrupted', 'interrupt.answered',
]);

/** What a node can do with the event stream. */
export class NodeEventView {
  readonly #streamer: EventStreamer;
  readonly #node: BackpackNode;
  readonly #namespace: string;
  readonly #handle: () => BackpackHandle;

  /** @internal Created by BackpackNode for itself. */
  constructor(streamer: EventStreamer, node: BackpackNode, handle: () => BackpackHandle) {
    this.#streamer = streamer;
    this.#node = node;
    this.#namespace = node.namespace;
    this.#handle = handle;
  }

  /** True for the node's own namespace and namespaces under it. */
  #ownOrInside(namespace: string | undefined): boolean {
    return namespace !== undefined && (namespace === this.#namespace || namespace.startsWith(`${this.#namespace}.`));
  }

  /** Whether the node may see `event`. */
  visible(event: StreamEvent): boolean {
    const own = this.#ownOrInside(event.namespace);
    switch (event.type) {
      case 'access.denied':
        return own && event.payload.hidden !== true;
      case 'backpack.unpacked':
        return event.payload.found === true && this.#mayRead(event.payload.key);
      case 'backpack.packed':
      case 'backpack.quarantined':
        return this.#mayRead(event.payload.key);
      default:
        return own || LIFECYCLE.has(event.type);
    }
  }

  #mayRead(key: unknown): boolean {
    return typeof key === 'string' && this.#handle().getItem(key) !== undefined;
  }

  /**
   * Emits an event of this node (its namespace may be one inside the node's); the Backpack's and the runtime's own
   * events are refused. Node id, class name, run and span are the node's own (those of its current execution; none
   * outside one), whatever `input` says.
   */
  emit(input: EventInput): StreamEvent {
    if (RESERVED.has(input.type)) throw new TypeError(`A node cannot emit '${input.type}' events: only the Backpack and the runtime write them`);
    if (input.namespace !== undefined && !this.#ownOrInside(input.namespace)) {
      throw new TypeError(`A node in namespace '${this.#namespace}' cannot emit events for namespace '${input.namespace}'`);
    }
    const node = this.#node;
    const execution = currentExecution.getStore();
    const own = execution?.node === node ? execution : undefined;
    return this.#streamer.emit({
      type: input.type,
      payload: input.payload,
      namespace: input.namespace ?? this.#namespace,
      nodeId: node.id,
      nodeName: node.constructor.name,
      runId: own?.scope.runId,
      spanId: own?.spanId,
      parentSpanId: own?.scope.spanId,
    });
  }

  /** Subscribes to visible events of `type` (or every type with `'*'`); returns the unsubscribe function. */
  on(type: StreamEventTypeValue | '*', handler: EventHandler): () => void {
    return this.#streamer.on(type, this.#guard(handler));
  }

  /** Like {@link on}, for the first visible event only. */
  once(type: StreamEventTypeValue | '*', handler: EventHandler): () => void {
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
    return this.#streamer.onNamespace(pattern, this.#guard(handler));
  }

  /** Visible events still in the history, oldest first, that match `filter` (as the node sees them, see {@link seen}). */
  getHistory(filter: HistoryFilter = {}): StreamEvent[] {
    if (filter.namespace !== undefined) compileNamespacePattern(filter.namespace);
    const out: StreamEvent[] = [];
    for (const event of this.#streamer.getHistory(filter)) if (this.visible(event)) out.push(seen(event));
    return out;
  }

  /**
   * Wraps a subscriber: it sees only visible events, and runs outside the execution that emitted the event (so a
   * subscriber never acts inside another node's execution).
   */
  #guard(handler: EventHandler): EventHandler {
    return (event) => {
      if (!this.visible(event)) return undefined;
      const shown = seen(event);
      return currentExecution.exit(() => handler(shown));
    };
  }
}

/**
 * A visible event as a node sees it: a `backpack.packed` event without its `valueSummary`. Visibility is judged by
 * the key's item now, and the item an older event was about may be one the node may not read (a value a later pack
 * replaced): its summary would quote it.
 */
function seen(event: StreamEvent): StreamEvent {
  if (event.type !== 'backpack.packed' || !('valueSummary' in event.payload)) return event;
  const { valueSummary: _dropped, ...payload } = event.payload;
  return { ...event, payload };
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
Object.freeze(NodeEventView.prototype);
