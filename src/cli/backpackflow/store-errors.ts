/** The stores' errors as the command line reports them (kept apart from errors.ts, which `--help` loads). */
import { InvalidIdError, StoreError } from '../../store/errors.js';
import { CliError, UsageError } from './errors.js';

/**
 * Runs `work`, turning the stores' and the runtime's own errors about a run (a taken id, a bad step) into CLI errors;
 * an id the stores refuse (a path separator, a secret-looking run id or session) is bad usage (exit code 2).
 */
export async function storeErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof InvalidIdError) throw new UsageError(error.message);
    if (error instanceof StoreError) throw new CliError(error.message, { cause: error });
    throw error;
  }
}
