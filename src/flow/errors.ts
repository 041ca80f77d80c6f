/**
 * Raised by a flow for problems of the flow itself: no entry node, step limit exceeded, a missing route under
 * `onMissingRoute: 'throw'`, a node added twice.
 */
export class FlowError extends Error {
  override name = 'FlowError';
}

/**
 * An exec failure after the last retry: names the node and the attempt, and keeps the original error as `cause`.
 */
export class NodeExecutionError extends Error {
  override name = 'NodeExecutionError';
  constructor(
    /** Id of the node whose exec failed. */
    readonly nodeId: string,
    /** The attempt that failed last (1-based). */
    readonly attempt: number,
    /** Total attempts the node allows (`maxRetries`). */
    readonly maxAttempts: number,
    cause: unknown,
  ) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`Node '${nodeId}' failed on attempt ${attempt} of ${maxAttempts}: ${reason}`, { cause });
  }
}

/**
 * Not a failure: a node stopping its run on purpose (a pause for a person, DESIGN D16). Exec is not retried and
 * `execFallback` does not run for it; flows pass it up unchanged, so the run ends where it stopped.
 */
export class FlowSignal extends Error {
  override name = 'FlowSignal';
}
