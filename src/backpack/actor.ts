/**
 * Who performs an operation. Not exported from the package.
 *
 * An Actor is a node as the Backpack registered it (DESIGN D6): its id, class name, full namespace, access rules and,
 * for a node inside a composite (or any flow built on a node's handle), the node it runs inside. Provenance and
 * access checks come from this object, never from options a caller passes.
 */
import type { EventContext, NodePermissions } from './types.js';

/** The acting node (all undefined for the owner's view). One instance per registration, shared by its commits. */
export class Actor {
  constructor(
    readonly nodeId: string | undefined,
    readonly nodeName: string | undefined,
    readonly namespace: string | undefined,
    /** The node's own access rules (undefined: it declared none). */
    readonly permissions: Readonly<NodePermissions> | undefined = undefined,
    /** The node this one runs inside: its rules bound this node's (what a composite may not do, its parts may not). */
    readonly parent: Actor | undefined = undefined,
  ) {
    Object.freeze(this);
  }
}

/** The owner of the Backpack: no node, no access checks. */
export const OWNER = new Actor(undefined, undefined, undefined);

/**
 * A maker of provenance actors for restored commits (JSON, state form): one Actor per distinct (id, name,
 * namespace), the owner when all three are absent.
 */
export function provenanceActors(): (nodeId: string | undefined, nodeName: string | undefined, namespace: string | undefined) => Actor {
  const actors = new Map<string, Actor>();
  return (nodeId, nodeName, namespace) => {
    if (nodeId === undefined && nodeName === undefined && namespace === undefined) return OWNER;
    const id = JSON.stringify([nodeId, nodeName, namespace]);
    let a = actors.get(id);
    if (!a) actors.set(id, (a = new Actor(nodeId, nodeName, namespace)));
    return a;
  };
}

/** Event context of an operation, or undefined. */
export type OpContext = EventContext | undefined;
