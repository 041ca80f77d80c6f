/**
 * The run store's files as its readers open them (src/fs's primitives): anything but a regular file in a file's
 * place (a link planted to a file elsewhere, a FIFO, a folder) is damage of the run, an {@link EventStoreError} naming
 * the path and what is there, so that listings, the Studio and the CLI report it as they report any other damage
 * (one such run never breaks a listing), and nothing is read through it.
 */
import { NotRegularFileError, openFileForReading, openIfExists, readTextIfExists } from '../fs/index.js';
import { EventStoreError } from './errors.js';

/** `error` as the store reports it: a {@link NotRegularFileError} becomes an {@link EventStoreError}. */
function asDamage(error: unknown): unknown {
  return error instanceof NotRegularFileError ? new EventStoreError(error.message, { path: error.path, cause: error }) : error;
}

/** openFileForReading for a file of a run (see the module comment). */
export function openRunFile(path: string): number {
  try {
    return openFileForReading(path);
  } catch (error) {
    throw asDamage(error);
  }
}

/** openIfExists for a file of a run (see the module comment). */
export function openRunFileIfExists(path: string): number | undefined {
  try {
    return openIfExists(path);
  } catch (error) {
    throw asDamage(error);
  }
}

/** readTextIfExists for a file of a run (see the module comment). */
export async function readRunTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readTextIfExists(path);
  } catch (error) {
    throw asDamage(error);
  }
}
