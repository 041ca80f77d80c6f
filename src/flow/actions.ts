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
