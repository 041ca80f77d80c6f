/**
 * The event stream as one node sees it (DESIGN D6, D12). A node reads events through this view only: it shows the
 * node's own events and those of nodes inside it, the flow's lifecycle and route events, and Backpack events of
 * keys the node may read now; never another node's payloads that may quote state (model, tool, memory, checkpoint,
 * error events), and never a denial by an item rule (to the node such a key is missing). A node emits through it
 * in its own name (or a node's inside it), and cannot emit the events that only the Backpack and the runtime write.
 */
import type { BackpackHandle } from '../backpack/index.js';
import { compileNamespacePattern } from '../backpack/patterns.js';
import type { EventHandler, EventStreamer, HistoryFilter, StreamEvent, StreamEventTypeValue } from '../events/index.js';
import type { EventInput } from '../events/types.js';
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
  readonly #namespace: string;
  readonly #handle: () => BackpackHandle;

  /** @internal Created by BackpackNode for itself. */
  constructor(streamer: EventStreamer, namespace: string, handle: () => BackpackHandle) {
    this.#streamer = streamer;
    this.#namespace = namespace;
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

  /** Emits an event of this node (or of a node inside it); the Backpack's and the runtime's own events are refused. */
  emit(input: EventInput): StreamEvent {
    if (RESERVED.has(input.type)) throw new TypeError(`A node cannot emit '${input.type}' events: only the Backpack and the runtime write them`);
    if (input.namespace !== undefined && !this.#ownOrInside(input.namespace)) {
      throw new TypeError(`A node in namespace '${this.#namespace}' cannot emit events for namespace '${input.namespace}'`);
    }
    return this.#streamer.emit({ ...input, namespace: input.namespace ?? this.#namespace });
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

  /** Visible events still in the history, oldest first, that match `filter`. */
  getHistory(filter: HistoryFilter = {}): StreamEvent[] {
    if (filter.namespace !== undefined) compileNamespacePattern(filter.namespace);
    return this.#streamer.getHistory(filter).filter((event) => this.visible(event));
  }

  /**
   * Wraps a subscriber: it sees only visible events, and runs outside the execution that emitted the event (so a
   * subscriber never acts inside another node's execution).
   */
  #guard(handler: EventHandler): EventHandler {
    return (event) => {
      if (!this.visible(event)) return undefined;
      return currentExecution.exit(() => handler(event));
    };
  }
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
Object.freeze(NodeEventView.prototype);
