/** The stores' errors as the command line reports them (kept apart from errors.ts, which `--help` loads). */
import { StoreError } from '../../store/errors.js';
import { CliError } from './errors.js';

/** Runs `work`, turning the stores' and the runtime's own errors about a run (a taken id, a bad step) into CLI errors. */
export async function storeErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof StoreError) throw new CliError(error.message);
    throw error;
  }
}
