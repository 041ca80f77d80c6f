/**
 * A Backpack seen as one node (DESIGN D6): every operation runs with the handle's identity, so provenance and access
 * checks use it and its events carry the handle's run and span. Nothing is monkey-patched, so any number of handles
 * can be used concurrently with correct attribution.
 */
import { Actor, AS_ACTOR } from './actor.js';
import type { Backpack } from './backpack.js';
import { BackpackError } from './errors.js';
import type { BackpackItem, EventContext, HandlePackOptions, NodeIdentity } from './types.js';

type Spoofable = { nodeId?: unknown; nodeName?: unknown; namespace?: unknown } | undefined;

/** A Backpack bound to a node identity. Create with {@link Backpack.forNode}. */
export class BackpackHandle {
  /** The node this handle acts as. */
  readonly identity: Readonly<NodeIdentity>;
  /** The Backpack behind the handle (the owner's view). */
  readonly backpack: Backpack;
  readonly #actor: Actor;
  readonly #ctx: EventContext | undefined;

  constructor(backpack: Backpack, identity: NodeIdentity, eventContext?: EventContext) {
    if (!identity || typeof identity.nodeId !== 'string' || identity.nodeId === '') {
      throw new BackpackError('forNode needs an identity with a non-empty nodeId');
    }
    if (typeof identity.nodeName !== 'string' || typeof identity.namespace !== 'string') {
      throw new BackpackError(`forNode('${identity.nodeId}') needs string nodeName and namespace`, { nodeId: identity.nodeId });
    }
    this.backpack = backpack;
    this.identity = Object.freeze({ nodeId: identity.nodeId, nodeName: identity.nodeName, namespace: identity.namespace });
    this.#actor = new Actor(identity.nodeId, identity.nodeName, identity.namespace === '' ? undefined : identity.namespace);
    this.#ctx = eventContext && (eventContext.runId !== undefined || eventContext.spanId !== undefined) ? { ...eventContext } : undefined;
  }

  #noSpoofing(operation: string, options: Spoofable): void {
    if (options === undefined || options === null) return;
    for (const field of ['nodeId', 'nodeName', 'namespace'] as const) {
      const given = options[field];
      if (given !== undefined && given !== this.identity[field]) {
        throw new BackpackError(
          `Node '${this.identity.nodeId}' cannot ${operation} as ${field} '${String(given)}': a handle always acts as its own node (${field} '${this.identity[field]}')`,
          { nodeId: this.identity.nodeId },
        );
      }
    }
  }

  /** Packs `value` under `key` as this node. */
  pack(key: string, value: unknown, options?: HandlePackOptions): void {
    this.#noSpoofing(`pack '${key}'`, options as Spoofable);
    this.backpack[AS_ACTOR].pack(this.#actor, this.#ctx, key, value, options);
  }

  /** The value under `key` if this node may read it (see {@link Backpack.unpack}). */
  unpack<V = unknown>(key: string): V | undefined {
    return this.backpack[AS_ACTOR].unpack(this.#actor, this.#ctx, key, false) as V | undefined;
  }

  /** The value under `key`; throws KeyNotFoundError or AccessDeniedError (see {@link Backpack.unpackRequired}). */
  unpackRequired<V = unknown>(key: string): V {
    return this.backpack[AS_ACTOR].unpack(this.#actor, this.#ctx, key, true) as V;
  }

  /** The value under `key` if this node may read it, without a commit, log entry or event. */
  peek<V = unknown>(key: string): V | undefined {
    return this.backpack[AS_ACTOR].peek(this.#actor, key) as V | undefined;
  }

  /** True when `key` is active and this node may read it. */
  has(key: string): boolean {
    return this.backpack[AS_ACTOR].has(this.#actor, key);
  }

  /** The item under `key` with metadata, if this node may read it (no commit). */
  getItem(key: string): BackpackItem | undefined {
    return this.backpack[AS_ACTOR].getItem(this.#actor, key);
  }

  /** Values of readable items whose source namespace matches `pattern` (D5). */
  unpackByNamespace(pattern: string): Record<string, unknown> {
    return this.backpack[AS_ACTOR].unpackByNamespace(this.#actor, this.#ctx, pattern);
  }

  /** Readable items (with metadata) whose source namespace matches `pattern` (D5). */
  getItemsByNamespace(pattern: string): BackpackItem[] {
    return this.backpack[AS_ACTOR].getItemsByNamespace(this.#actor, pattern);
  }

  /** Deletes `key` as this node; false when it is not active. */
  delete(key: string, options?: { nodeId?: string }): boolean {
    this.#noSpoofing(`delete '${key}'`, options);
    return this.backpack[AS_ACTOR].delete(this.#actor, this.#ctx, key);
  }

  /** Quarantines `key` as this node (D10); false when it is not active. */
  quarantine(key: string, options: { reason: string; nodeId?: string }): boolean {
    this.#noSpoofing(`quarantine '${key}'`, options);
    return this.backpack[AS_ACTOR].quarantine(this.#actor, this.#ctx, key, options);
  }
}
