import { resolve } from 'node:path';
import { FileRunStore, assertValidId, type RedactionOptions, type RunStore } from '../store/index.js';

/** Where runs are stored. */
export interface RunLocation {
  /** Data directory (default `.backpackflow` in the working directory). */
  dataDir?: string;
  /** Session the run belongs to (default `'default'`). */
  sessionKey?: string;
  /**
   * Secrets of your own (patterns, secret key names) redacted from everything the run writes, on top of the
   * built-in catalogue (see the README's Redaction section).
   */
  redaction?: RedactionOptions;
  /**
   * Where runs are stored: a {@link RunStore} such as `new PostgresRunStore({ url })` (shared by many workers). Default:
   * the files of `dataDir`. The caller keeps it open and closes it.
   */
  store?: RunStore;
}

const DEFAULT_DATA_DIR = '.backpackflow';
const DEFAULT_SESSION = 'default';

/** The absolute data directory of `options` (default `.backpackflow` in the working directory). */
export function resolveDataDir(options: RunLocation): string {
  return resolve(options.dataDir ?? DEFAULT_DATA_DIR);
}

/** The run store of `options` (its `store`, else the files of its data directory) and the (validated) session. */
export function locateStore(options: RunLocation): { store: RunStore; sessionKey: string } {
  const sessionKey = options.sessionKey ?? DEFAULT_SESSION;
  assertValidId(sessionKey, 'sessionKey');
  return { store: options.store ?? new FileRunStore(resolveDataDir(options)), sessionKey };
}
