/**
 * The handle a flow gives the constructor of each node it creates ({@link NodeContext.flow}): an opaque object that
 * only this module maps back to the flow. A node's constructor is node code, so it must not receive the flow itself
 * (through it, `flow.backpack` is the owner's Backpack, which the node could keep and read from later); the
 * BackpackNode base class turns the token back into the flow and keeps it private.
 */
import type { Flow } from './flow.js';

/** An opaque token standing for a flow in {@link NodeContext}: it has no properties and no prototype. */
export type FlowToken = object & { readonly __flowToken: unique symbol };

const flows = new WeakMap<object, Flow>();
const tokens = new WeakMap<Flow, FlowToken>();

/** The token of `flow` (one per flow). */
export function flowToken(flow: Flow): FlowToken {
  let token = tokens.get(flow);
  if (token === undefined) {
    token = Object.freeze(Object.create(null) as object) as FlowToken;
    flows.set(token, flow);
    tokens.set(flow, token);
  }
  return token;
}

/** The flow a token stands for, or undefined when `token` is not one. */
export function flowOfToken(token: unknown): Flow | undefined {
  return typeof token === 'object' && token !== null ? flows.get(token) : undefined;
}
