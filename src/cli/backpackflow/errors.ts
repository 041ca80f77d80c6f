/** A failure the user can act on: exit code 1, the message on stderr. */
export class CliError extends Error {
  override name = 'CliError';
}

/** Bad command-line usage: exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
