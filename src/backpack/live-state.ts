/**
 * The Backpack's active state: items and quarantined items (each the commit that made it), the index of keys by
 * source namespace, and the real values of items larger than maxValueBytes (history keeps only a reference).
 * Commits change it only through `applyCommit` with this state's listener, so the index and the large values always
 * follow the items.
 */
import { LARGE, type Commit, type State, type StateListener } from './history.js';
import { copyStoredValue } from './values.js';
import type { NamespaceMatcher } from './patterns.js';
import type { BackpackItem } from './types.js';
import { hardenClass } from '../harden.js';

/** The live state of one Backpack. */
export class LiveState implements State {
  items = new Map<string, Commit>();
  quarantined = new Map<string, Commit>();
  /** The real values of LARGE items. */
  #large = new Map<Commit, unknown>();
  /** namespace -> keys of active items from that namespace. */
  #namespaces = new Map<string, Set<string>>();

  /** Keeps the index and the large values in step with the active items. */
  readonly listener: StateListener = {
    added: (item) => this.#index(item),
    removed: (item, by) => {
      this.#unindex(item);
      // A quarantined item keeps its value (quarantine is the debugging trace).
      if (item.flags & LARGE && by.action !== 'quarantine') this.#large.delete(item);
    },
  };

  /** Replaces everything with `state` (its maps are taken, not copied) and `large` values. */
  reset(state: State, large: Map<Commit, unknown> = new Map()): void {
    this.items = state.items;
    this.quarantined = state.quarantined;
    this.#large = large;
    this.#namespaces = new Map();
    for (const item of state.items.values()) this.#index(item);
  }

  /** Remembers the real value of a LARGE item. */
  setLarge(item: Commit, value: unknown): void {
    this.#large.set(item, value);
  }

  /** Forgets the real value of a LARGE item (a quarantined item replaced by a newer quarantine of its key). */
  dropLarge(item: Commit): void {
    this.#large.delete(item);
  }

  /** The real values of LARGE items, for serialization. */
  get large(): ReadonlyMap<Commit, unknown> {
    return this.#large;
  }

  /** The value of an item as stored (never copied: frozen data shared with the state, for the library's own use). */
  storedValueOf(item: Commit): unknown {
    return item.flags & LARGE && this.#large.has(item) ? this.#large.get(item) : item.value;
  }

  /** The value of an item as a reader gets it (a large value if still held; see Commit.readValue for copies). */
  valueOf(item: Commit): unknown {
    return copyStoredValue(item.key, this.storedValueOf(item));
  }

  /**
   * The public, frozen form of an item; with `withRule` false, without its item rule (`accessControl`): a node
   * never sees who else an item rule lets read or write (D9).
   */
  publicItem(item: Commit, withRule = true): BackpackItem {
    const out: BackpackItem = {
      key: item.key,
      value: this.valueOf(item),
      metadata: Object.freeze({
        sourceNodeId: item.actor.nodeId,
        sourceNodeName: item.actor.nodeName,
        sourceNamespace: item.actor.namespace,
        timestamp: item.timestamp,
        version: item.version,
        tags: item.tags,
      }),
    };
    if (item.acl && withRule) out.accessControl = item.acl;
    return Object.freeze(out);
  }

  /** Namespaces that active items come from, sorted. */
  namespaces(): string[] {
    return [...this.#namespaces.keys()].sort();
  }

  /** Active items whose source namespace `matches` and that `keep` accepts. */
  inNamespaces(matches: NamespaceMatcher, keep: (item: Commit) => boolean): Commit[] {
    const out: Commit[] = [];
    for (const [namespace, keys] of this.#namespaces) {
      if (!matches(namespace)) continue;
      for (const key of keys) {
        const item = this.items.get(key)!;
        if (keep(item)) out.push(item);
      }
    }
    return out;
  }

  #index(item: Commit): void {
    const ns = item.actor.namespace;
    if (ns === undefined) return;
    let keys = this.#namespaces.get(ns);
    if (!keys) this.#namespaces.set(ns, (keys = new Set()));
    keys.add(item.key);
  }

  #unindex(item: Commit): void {
    const ns = item.actor.namespace;
    if (ns === undefined) return;
    const keys = this.#namespaces.get(ns);
    if (!keys) return;
    keys.delete(item.key);
    if (keys.size === 0) this.#namespaces.delete(ns);
  }
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(LiveState);
