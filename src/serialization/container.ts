import { Backpack } from '../backpack/index.js';
import { EventStreamer } from '../events/index.js';
import type { DependencyLookup } from '../nodes/index.js';
import { TOOLBOX_DEP } from '../nodes/llm/index.js';

/** The dependency keys `loadFlow` reads itself (and never hands to nodes): the Backpack and the event streamer. */
export const BACKPACK_DEP = 'backpack';
/** The dependency key of the event streamer `loadFlow` gives the flow (see {@link BACKPACK_DEP}). */
export const EVENT_STREAMER_DEP = 'eventStreamer';

/**
 * Non-serializable things nodes need (LLM clients, the context engine, API wrappers), by key. `loadFlow` hands it to
 * every node as `this.deps`.
 */
export class DependencyContainer implements DependencyLookup {
  readonly #values = new Map<string, unknown>();
  readonly #factories = new Map<string, (container: DependencyContainer) => unknown>();

  /** Registers a value under `key` (replacing any earlier value or factory). Returns the container. */
  register(key: string, value: unknown): this {
    checkKey(key);
    this.#factories.delete(key);
    this.#values.set(key, value);
    return this;
  }

  /**
   * Registers a factory called once, on the first `get(key)`, with the container (so that it can get what it needs
   * from it); its result is cached. Returns the container.
   */
  registerFactory(key: string, factory: (container: DependencyContainer) => unknown): this {
    checkKey(key);
    if (typeof factory !== 'function') throw new TypeError(`DependencyContainer: the factory for '${key}' must be a function`);
    this.#values.delete(key);
    this.#factories.set(key, factory);
    return this;
  }

  /** The dependency under `key`; throws naming the key and the keys there are when it is missing. */
  get<T = unknown>(key: string): T {
    if (this.#values.has(key)) return this.#values.get(key) as T;
    const factory = this.#factories.get(key);
    if (!factory) {
      const known = this.keys();
      throw new Error(`Missing dependency '${key}': register it with container.register('${key}', value)${known.length ? ` (registered: ${known.join(', ')})` : ''}`);
    }
    const value = factory(this);
    this.#factories.delete(key);
    this.#values.set(key, value);
    return value as T;
  }

  /** True when `key` has a value or a factory. */
  has(key: string): boolean {
    return this.#values.has(key) || this.#factories.has(key);
  }

  /** Every registered key, sorted. */
  keys(): string[] {
    return [...new Set([...this.#values.keys(), ...this.#factories.keys()])].sort();
  }

  /** Removes `key` (value or factory); returns whether it was there. */
  delete(key: string): boolean {
    const had = this.has(key);
    this.#values.delete(key);
    this.#factories.delete(key);
    return had;
  }

  /** Removes every dependency and factory. */
  clear(): void {
    this.#values.clear();
    this.#factories.clear();
  }

  /**
   * A new container with the same entries: values are shared (not copied), factories not yet called stay factories
   * (each container then caches its own result). Registering in one changes nothing in the other.
   */
  clone(): DependencyContainer {
    const copy = new DependencyContainer();
    for (const [key, value] of this.#values) copy.register(key, value);
    for (const [key, factory] of this.#factories) copy.registerFactory(key, factory);
    return copy;
  }

  /**
   * A container with the built-in services, each a factory (made on first use): `eventStreamer` (a new
   * EventStreamer), `backpack` (a new Backpack reporting to that streamer) and `tools` (an empty toolbox for the
   * tool-calling nodes, see TOOLBOX_DEP). `loadFlow` builds the flow on the `backpack` and `eventStreamer` of the
   * container it is given, and keeps those two from the nodes (they are the owner's view).
   */
  static createDefault(): DependencyContainer {
    const container = new DependencyContainer();
    container.registerFactory(EVENT_STREAMER_DEP, () => new EventStreamer());
    container.registerFactory(BACKPACK_DEP, (c) => new Backpack(undefined, { eventStreamer: c.get<EventStreamer>(EVENT_STREAMER_DEP) }));
    container.registerFactory(TOOLBOX_DEP, () => ({}));
    return container;
  }
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key === '') throw new TypeError(`DependencyContainer: key must be a non-empty string, got ${JSON.stringify(key)}`);
}
