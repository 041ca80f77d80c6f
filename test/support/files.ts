/** The files a test wrote, for tests that look at every byte a run left on disk (secrets, damage). */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Every file (not folder) under `dir`, at any depth. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

/** Every file under `dir` whose bytes hold `needle`. */
export function filesHolding(dir: string, needle: string): string[] {
  return filesUnder(dir).filter((path) => readFileSync(path).includes(needle));
}
