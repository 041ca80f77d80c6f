import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** How long a temp directory lives: until the end of the current test, or of the current test file. */
export type TempLifetime = 'test' | 'file';

const created: Record<TempLifetime, string[]> = { test: [], file: [] };

/**
 * A fresh directory under the system temp dir, removed after the current test or test file by the hooks that
 * `test/support/setup.ts` registers for every test file. (Test files share a worker's module cache, so a helper
 * module's own top-level hooks would register only for the first file that imports it.)
 */
export function makeTempDir(prefix: string, lifetime: TempLifetime): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created[lifetime].push(dir);
  return dir;
}

/** Removes the temp directories of `lifetime` made so far. */
export function removeTempDirs(lifetime: TempLifetime): void {
  for (const dir of created[lifetime].splice(0)) rmSync(dir, { recursive: true, force: true });
}
