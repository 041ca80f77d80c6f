import { FlowError } from './errors.js';

/** Standard action strings for routing (DESIGN D2). Any other string works as a custom action too. */
export enum FlowAction {
  COMPLETE = 'complete',
  ERROR = 'error',
  SUCCESS = 'success',
  FAILURE = 'failure',
  RETRY = 'retry',
  DEFAULT = 'default',
}

/** The action a node takes when `post` returns undefined. */
export const DEFAULT_ACTION: string = FlowAction.DEFAULT;

/**
 * `action` as a node's `post` returned it, when it is an action: a string, or undefined (`'default'`). Anything else
 * is a FlowError naming the node: an action is routed on, and goes into the `node.completed`, `route.missing` and
 * `run.completed` events every node may read and into a run's checkpoint, so an object there would be node code run
 * wherever it is read. The message says what kind of value it was, never its text (a `toString` is code too).
 */
export function checkAction(nodeId: string, action: unknown): string | undefined {
  if (action === undefined || typeof action === 'string') return action;
  const kind = action === null ? 'null' : Array.isArray(action) ? 'an array' : typeof action === 'object' ? 'an object' : `a ${typeof action}`;
  throw new FlowError(`Node '${nodeId}': post must return an action (a string) or undefined, got ${kind}`);
}
