import { resolve } from 'node:path';
import { assertValidId, type RedactionOptions } from '../store/index.js';

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
}

const DEFAULT_DATA_DIR = '.backpackflow';
const DEFAULT_SESSION = 'default';

/** The absolute data directory of `options` (default `.backpackflow` in the working directory). */
export function resolveDataDir(options: RunLocation): string {
  return resolve(options.dataDir ?? DEFAULT_DATA_DIR);
}

/** The data directory and the (validated) session of `options`. */
export function locate(options: RunLocation): { dataDir: string; sessionKey: string } {
  const sessionKey = options.sessionKey ?? DEFAULT_SESSION;
  assertValidId(sessionKey, 'sessionKey');
  return { dataDir: resolveDataDir(options), sessionKey };
}
