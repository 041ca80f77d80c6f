import type { DependencyLookup } from '../nodes/index.js';

/**
 * Non-serializable things nodes need (LLM clients, the context engine, API wrappers), by key. `loadFlow` hands it to
 * every node as `this.deps`.
 */
export class DependencyContainer implements DependencyLookup {
  readonly #values = new Map<string, unknown>();
  readonly #factories = new Map<string, () => unknown>();

  /** Registers a value under `key` (replacing any earlier value or factory). Returns the container. */
  register(key: string, value: unknown): this {
    checkKey(key);
    this.#factories.delete(key);
    this.#values.set(key, value);
    return this;
  }

  /** Registers a factory called once, on the first `get(key)`; its result is cached. Returns the container. */
  registerFactory(key: string, factory: () => unknown): this {
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
    const value = factory();
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
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key === '') throw new TypeError(`DependencyContainer: key must be a non-empty string, got ${JSON.stringify(key)}`);
}
