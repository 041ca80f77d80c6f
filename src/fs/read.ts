import { promises as fsp, readFileSync } from 'node:fs';

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/** Reads a file as UTF-8, or undefined when it does not exist. Other errors (a directory, no permission) propagate. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/** {@link readTextIfExists} for synchronous callers. */
export function readTextIfExistsSync(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}
