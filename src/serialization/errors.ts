/** One problem of a flow config: where (a JSON pointer like `/nodes/2/params/apiKey`) and what. */
export interface ConfigProblem {
  path: string;
  message: string;
}

/** A flow config that cannot be loaded or exported; `errors` lists every problem with its JSON path. */
export class FlowConfigError extends Error {
  override name = 'FlowConfigError';
  constructor(
    readonly errors: ConfigProblem[],
    summary = 'Invalid flow config',
  ) {
    super(`${summary} (${errors.length} problem${errors.length === 1 ? '' : 's'}):\n${errors.map((e) => `  ${e.path || '/'}: ${e.message}`).join('\n')}`);
  }
}

/** JSON pointer of a path (RFC 6901 escaping). */
export { jsonPointer as pointer } from '../backpack/nesting.js';
