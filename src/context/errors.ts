/** Machine-readable reason for a {@link ContextError}. */
export type ContextErrorCode =
  | 'INVALID_ARGUMENT'
  | 'UNKNOWN_NODE'
  | 'NOT_A_DIRECTORY'
  | 'NOT_SCANNED'
  | 'UNKNOWN_AGENT'
  | 'ROLE_DENIED'
  | 'CAPABILITY_DENIED'
  | 'UNKNOWN_FRAME'
  | 'UNKNOWN_POLICY'
  | 'NONDETERMINISTIC_POLICY'
  | 'FRAME_CONFLICT'
  | 'CORRUPT_STORE'
  | 'LOCK_TIMEOUT'
  | 'SCAN_FAILED';

/**
 * The one error type of the context engine. `code` says what went wrong, `message` says what and where (node id,
 * path, agent, file) and what to do next; `details` carries the same facts as data.
 */
export class ContextError extends Error {
  override readonly name = 'ContextError';

  constructor(
    readonly code: ContextErrorCode,
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }
}
