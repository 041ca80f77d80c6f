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
import type { NodeRegistration } from './types.js';

/** The registered nodes of one Backpack. */
export class NodeRegistry {
  /** Registration key (the namespace, or `#<nodeId>` for a node without one) to actor. */
  readonly #byKey = new Map<string, Actor>();

  /**
   * Registers `node` (inside `parent`, if given) and returns its actor. Registering the same node id at the same
   * namespace again (a composite building its internal flow once per execution) replaces its rules; another node at a
   * registered namespace is an error naming both.
   */
  register(node: NodeRegistration, parent?: Actor): Actor {
    if (!node || typeof node !== 'object') throw new BackpackError('registerNode needs { nodeId, nodeName, namespace }');
    const { nodeId, nodeName, namespace } = node;
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
    const permissions = node.permissions === undefined ? undefined : checkPermissions(nodeId, node.permissions);
    const key = namespace === '' ? `#${nodeId}` : namespace;
    const holder = this.#byKey.get(key);
    if (holder !== undefined && (holder.nodeId !== nodeId || holder.parent !== parent)) {
      throw new BackpackError(
        namespace === ''
          ? `Node id '${nodeId}' is already registered with this Backpack without a namespace`
          : `Nodes '${holder.nodeId}' and '${nodeId}' would share the full namespace '${namespace}': namespaces are unique across the whole flow tree, composite internals included; give one of them its own namespaceSegment`,
        { nodeId },
      );
    }
    const actor = new Actor(nodeId, nodeName, namespace === '' ? undefined : namespace, permissions, parent);
    this.#byKey.set(key, actor);
    return actor;
  }

  /**
   * The registered node `nodeId` that an owner's call names. `claimed` fields (nodeName, namespace) the caller passed
   * must equal the registration. An id nobody registered is registered on first use with what the owner names (no
   * rules). Throws BackpackError when the id is ambiguous or a claim disagrees with the registration (naming both).
   */
  resolve(nodeId: unknown, claimed?: { nodeName?: unknown; namespace?: unknown }): Actor {
    if (typeof nodeId !== 'string' || nodeId === '') throw new BackpackError(`Option 'nodeId' must be a non-empty string (omit it for the owner's view), got ${String(nodeId)}`);
    const matches: Actor[] = [];
    for (const actor of this.#byKey.values()) if (actor.nodeId === nodeId) matches.push(actor);
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

  /** Every registered node, in registration order. */
  values(): IterableIterator<Actor> {
    return this.#byKey.values();
  }
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
Object.freeze(NodeRegistry.prototype);
