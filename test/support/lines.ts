import { existsSync, readFileSync } from 'node:fs';

/**
 * Lines of the file at `path` so far (0 while it does not exist): how far a child process has written a log, which
 * crash tests wait on before they kill it (its progress, not a fixed time).
 */
export function linesOf(path: string): number {
  if (!existsSync(path)) return 0;
  const text = readFileSync(path, 'utf8');
  let lines = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
  return lines;
}
