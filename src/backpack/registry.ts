/**
 * The nodes a Backpack serves (DESIGN D6): each registered with its id, class name, full namespace, permissions and
 * the node it runs inside. Full namespaces are unique across the whole flow tree, composite internals included, so a
 * namespace always names one node; the owner's `nodeId` options resolve through here, so provenance never comes from
 * what a caller says.
 */
import { checkPermissions } from './access.js';
import { Actor } from './actor.js';
import { BackpackError } from './errors.js';
import { checkSegments } from './patterns.js';
import type { NodePermissions, NodeRegistration } from './types.js';
import { hardenClass } from '../harden.js';

/**
 * Nodes of one flow registered before they are built (a flow loader builds a node of a plain class on first use,
 * see `Flow`): each sits at `<namespace>.<id>` (just `<id>` under the empty namespace), inside `parent`, with the
 * class name the flow gives and no access rules of its own, at a position among the flow's nodes. Registered with
 * {@link NodeRegistry.reserve}, which keeps no entry per node: the flow answers for them. Their actors are made by
 * {@link NodeRegistry.adopt} when the flow builds them. Not exported from the package.
 */
export interface ReservedNodes {
  /** The namespace of the flow whose nodes these are. */
  readonly namespace: string;
  /** The node the flow runs inside, if any. */
  readonly parent: Actor | undefined;
  /** The position of the node reserved as `id`, or undefined when `id` is not reserved here. */
  position(id: string): number | undefined;
  /** The id of the node reserved at `position`, or undefined when none is. */
  idAt(position: number): string | undefined;
  /** The actor of the node reserved as `id`, the same one every time (its flow builds the node if it is not yet). */
  actor(id: string): Actor;
}

/** The namespace of reserved node `id` of `nodes`: its id under the flow's namespace. */
function namespaceOf(nodes: ReservedNodes, id: string): string {
  return nodes.namespace === '' ? id : `${nodes.namespace}.${id}`;
}

/** Reservations of one flow made one after another, with no other registration between them: positions `from` to `to` (excluded). */
interface ReservedRun {
  readonly nodes: ReservedNodes;
  readonly from: number;
  to: number;
  /** Its place in registration order. */
  readonly order: number;
}

/** A registration as {@link NodeRegistry}'s checks read it: the only form the registry builds an actor from. */
interface CheckedRegistration {
  readonly nodeId: string;
  readonly nodeName: string;
  readonly namespace: string;
  /** The registration key: the namespace, or `#<nodeId>` for a node without one. */
  readonly key: string;
  readonly permissions: Readonly<NodePermissions> | undefined;
}

/** The registered nodes of one Backpack. */
export class NodeRegistry {
  /** Registration key (the namespace, or `#<nodeId>` for a node without one) to the actor of the node registered there. */
  readonly #byKey = new Map<string, Actor>();
  /** Every registration in order: a node registered one by one, or a run of reservations (one place for the run). */
  readonly #ordered: (Actor | ReservedRun)[] = [];
  /**
   * The places in {@link #ordered} of the nodes registered one by one, by node id: a lookup by id reads its own
   * entries, not every registration (a number, not an object, per node).
   */
  readonly #byId = new Map<string, number | number[]>();
  /** Each flow's runs of reservations, in the order made (so by position), by flow namespace. */
  readonly #reserved = new Map<string, Map<ReservedNodes, ReservedRun[]>>();
  /** The run the last registration went to, while it is last. */
  #lastRun: ReservedRun | undefined;
  /** Reserved nodes registered again (with new rules): the new actor, by key. */
  readonly #again = new Map<string, Actor>();

  /**
   * Registers `node` (inside `parent`, if given) and returns its actor. Registering the same node id at the same
   * namespace again (a composite building its internal flow once per execution) replaces its rules; another node at a
   * registered namespace is an error naming both.
   */
  register(node: NodeRegistration, parent?: Actor): Actor {
    // Built from what #check read and checked (each field read once): never from `node` again, whose getters could
    // answer one identity to the check and another to a second read.
    const { nodeId, nodeName, namespace, key, permissions } = this.#check(node, parent);
    const actor = new Actor(nodeId, nodeName, namespace === '' ? undefined : namespace, permissions, parent);
    if (this.#byKey.get(key) === undefined && this.#reservedHolder(key) !== undefined) {
      this.#again.set(key, actor);
    } else {
      const replaced = this.#byKey.get(key);
      if (replaced === undefined) {
        this.#lastRun = undefined;
        this.#index(nodeId, this.#ordered.push(actor) - 1);
      } else {
        // The same node again (the checks made sure): its new rules take its place.
        this.#ordered[this.#placesOf(nodeId).find((at) => this.#ordered[at] === replaced)!] = actor;
      }
      this.#byKey.set(key, actor);
    }
    return actor;
  }

  #index(nodeId: string, at: number): void {
    const held = this.#byId.get(nodeId);
    if (held === undefined) this.#byId.set(nodeId, at);
    else if (Array.isArray(held)) held.push(at);
    else this.#byId.set(nodeId, [held, at]);
  }

  /** The places in {@link #ordered} of the nodes with id `nodeId` registered one by one, in order. */
  #placesOf(nodeId: string): readonly number[] {
    const held = this.#byId.get(nodeId);
    return held === undefined ? [] : Array.isArray(held) ? held : [held];
  }

  /**
   * Registers node `id` of `nodes`'s flow (class name `nodeName`, at `position` among its nodes) before it is built:
   * the checks and errors of {@link register} for that node, which holds its namespace from now on; its actor is
   * made later by {@link adopt}. False (and nothing reserved) when that node is registered there already: then the
   * flow registers it as it builds it, now.
   */
  reserve(nodes: ReservedNodes, id: string, nodeName: string, position: number): boolean {
    const { key } = this.#check({ nodeId: id, nodeName, namespace: namespaceOf(nodes, id) }, nodes.parent);
    // The same node registered again (another flow of the same nodes on this Backpack) replaces the registration in
    // its place: that is register's to do, with the node built.
    if (this.#byKey.has(key) || this.#reservedHolder(key) !== undefined) return false;
    if (this.#lastRun?.nodes === nodes && position >= this.#lastRun.to) {
      this.#lastRun.to = position + 1;
      return true;
    }
    let flows = this.#reserved.get(nodes.namespace);
    const runs = flows?.get(nodes) ?? [];
    // Runs are searched by position: a flow reserves its nodes in order.
    const last = runs.at(-1);
    if (last !== undefined && position < last.to) throw new BackpackError(`Node '${id}' is reserved out of order (position ${position}, after ${last.to - 1})`, { nodeId: id });
    if (flows === undefined) this.#reserved.set(nodes.namespace, (flows = new Map()));
    if (runs.length === 0) flows.set(nodes, runs);
    const run: ReservedRun = { nodes, from: position, to: position + 1, order: this.#ordered.length };
    runs.push(run);
    this.#ordered.push(run);
    this.#lastRun = run;
    return true;
  }

  /** The actor of node `id` reserved in `nodes` (its flow calls this once, when it builds the node). */
  adopt(nodes: ReservedNodes, id: string, nodeName: string): Actor {
    return new Actor(id, nodeName, namespaceOf(nodes, id), undefined, nodes.parent);
  }

  /**
   * The checks of a registration, on one read of each of its fields; returns what was checked (the identity, its
   * registration key and the checked copy of its rules), which is all a caller may use.
   */
  #check(node: NodeRegistration, parent: Actor | undefined): CheckedRegistration {
    if (!node || typeof node !== 'object') throw new BackpackError('registerNode needs { nodeId, nodeName, namespace }');
    const { nodeId, nodeName, namespace, permissions: rules } = node;
    if (typeof nodeId !== 'string' || nodeId === '') throw new BackpackError('registerNode needs a non-empty nodeId');
    if (typeof nodeName !== 'string' || typeof namespace !== 'string') {
      throw new BackpackError(`registerNode('${nodeId}') needs string nodeName and namespace`, { nodeId });
    }
    if (namespace !== '') checkSegments(namespace, `Namespace of node '${nodeId}'`, (m) => new BackpackError(m, { nodeId }));
    if (parent !== undefined) {
      const under = parent.namespace === undefined ? undefined : `${parent.namespace}.`;
      if (under === undefined || !namespace.startsWith(under)) {
        throw new BackpackError(
          `Node '${nodeId}' (namespace '${namespace}') runs inside node '${parent.nodeId}' and must have a namespace under '${parent.namespace ?? ''}'`,
          { nodeId },
        );
      }
    }
    const permissions = rules === undefined ? undefined : checkPermissions(nodeId, rules);
    const key = namespace === '' ? `#${nodeId}` : namespace;
    const holder = this.#byKey.get(key) ?? this.#reservedHolder(key);
    if (holder !== undefined && (holder.nodeId !== nodeId || holder.parent !== parent)) {
      throw new BackpackError(
        namespace === ''
          ? `Node id '${nodeId}' is already registered with this Backpack without a namespace`
          : `Nodes '${holder.nodeId}' and '${nodeId}' would share the full namespace '${namespace}': namespaces are unique across the whole flow tree, composite internals included; give one of them its own namespaceSegment`,
        { nodeId },
      );
    }
    return { nodeId, nodeName, namespace, key, permissions };
  }

  /** The id and parent of the reserved node at registration key `key`, if one holds it. */
  #reservedHolder(key: string): { nodeId: string; parent: Actor | undefined } | undefined {
    // A reserved node's key is its flow's namespace and its id (which holds no '.'): one probe per flow of that namespace.
    const dot = key.lastIndexOf('.');
    const flows = this.#reserved.get(dot < 0 ? '' : key.slice(0, dot));
    if (flows === undefined) return undefined;
    const id = key.slice(dot + 1);
    for (const nodes of flows.keys()) if (nodes.position(id) !== undefined) return { nodeId: id, parent: nodes.parent };
    return undefined;
  }

  /**
   * The registered node `nodeId` that an owner's call names. `claimed` fields (nodeName, namespace) the caller passed
   * must equal the registration. An id nobody registered is registered on first use with what the owner names (no
   * rules). Throws BackpackError when the id is ambiguous or a claim disagrees with the registration (naming both).
   */
  resolve(nodeId: unknown, claimed?: { nodeName?: unknown; namespace?: unknown }): Actor {
    if (typeof nodeId !== 'string' || nodeId === '') throw new BackpackError(`Option 'nodeId' must be a non-empty string (omit it for the owner's view), got ${String(nodeId)}`);
    const matches = this.withId(nodeId);
    const wanted = claimed?.namespace;
    const candidates = wanted === undefined ? matches : matches.filter((a) => (a.namespace ?? '') === wanted);
    if (candidates.length === 0) {
      if (matches.length > 0) {
        throw new BackpackError(
          `Node '${nodeId}' is registered with namespace '${matches.map((a) => a.namespace ?? '').join("', '")}', not '${String(wanted)}': provenance comes from the registered identity`,
          { nodeId },
        );
      }
      // The owner naming a node nobody registered registers it, with the identity it names and no rules (the
      // owner's view is trusted; nodes never reach it). From then on every claim must match.
      const namespace = claimed?.namespace ?? '';
      const nodeName = claimed?.nodeName ?? nodeId;
      if (typeof namespace !== 'string' || typeof nodeName !== 'string') throw new BackpackError(`Options 'nodeName' and 'namespace' must be strings`, { nodeId });
      return this.register({ nodeId, nodeName, namespace });
    }
    if (candidates.length > 1) {
      throw new BackpackError(
        `Node id '${nodeId}' names ${candidates.length} registered nodes (namespaces '${candidates.map((a) => a.namespace).join("', '")}'): pass its namespace too`,
        { nodeId },
      );
    }
    const actor = candidates[0]!;
    if (claimed?.nodeName !== undefined && claimed.nodeName !== actor.nodeName) {
      throw new BackpackError(`Node '${nodeId}' is registered as '${actor.nodeName}', not '${String(claimed.nodeName)}': provenance comes from the registered identity`, { nodeId });
    }
    return actor;
  }

  /**
   * The registered nodes with id `nodeId`, in registration order (a reserved node among them is built, no other): its
   * entries in the id index, and one probe per flow with reservations (a binary search finds the run holding it).
   */
  withId(nodeId: string): Actor[] {
    const found: { order: number; actor: Actor }[] = [];
    for (const at of this.#placesOf(nodeId)) found.push({ order: at, actor: this.#ordered[at] as Actor });
    for (const flows of this.#reserved.values()) {
      for (const [nodes, runs] of flows) {
        const at = nodes.position(nodeId);
        if (at === undefined) continue;
        const run = runHolding(runs, at);
        if (run !== undefined) found.push({ order: run.order, actor: this.#reservedActor(nodes, nodeId) });
      }
    }
    if (found.length > 1) found.sort((a, b) => a.order - b.order);
    return found.map((f) => f.actor);
  }

  /** Every registered node, in registration order (reserved nodes are built for it). */
  *values(): IterableIterator<Actor> {
    for (const entry of this.#ordered) {
      if (entry instanceof Actor) yield entry;
      else {
        for (let at = entry.from; at < entry.to; at++) {
          const id = entry.nodes.idAt(at);
          if (id !== undefined) yield this.#reservedActor(entry.nodes, id);
        }
      }
    }
  }

  #reservedActor(nodes: ReservedNodes, id: string): Actor {
    return this.#again.get(namespaceOf(nodes, id)) ?? nodes.actor(id);
  }
}

/** The run of `runs` (sorted by position, disjoint) that holds position `at`, if any. */
function runHolding(runs: readonly ReservedRun[], at: number): ReservedRun | undefined {
  let low = 0;
  let high = runs.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const run = runs[mid]!;
    if (at < run.from) high = mid - 1;
    else if (at >= run.to) low = mid + 1;
    else return run;
  }
  return undefined;
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(NodeRegistry);
