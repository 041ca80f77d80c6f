/** Who performs an operation, and the internal operation table that handles use. Not exported from the package. */
import type { EventContext } from './types.js';

/** The acting node (all undefined for the owner's view). One instance per handle, shared by its commits. */
export class Actor {
  constructor(
    readonly nodeId: string | undefined,
    readonly nodeName: string | undefined,
    readonly namespace: string | undefined,
  ) {
    Object.freeze(this);
  }
}

/** The owner of the Backpack: no node, no access checks. */
export const OWNER = new Actor(undefined, undefined, undefined);

/** Key of the Backpack's internal operations that take an explicit actor (used by BackpackHandle). */
export const AS_ACTOR: unique symbol = Symbol('backpack.asActor');

/** Event context of an operation, or undefined. */
export type OpContext = EventContext | undefined;
