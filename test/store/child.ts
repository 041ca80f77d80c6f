import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleScripts } from '../support/bundle.js';

const here = dirname(fileURLToPath(import.meta.url));

/** A running fixture script and the lines it printed so far. */
export interface Child {
  process: ChildProcess;
  lines: string[];
  /** Resolves when the child printed a line equal to `line`. */
  waitFor(line: string): Promise<void>;
  /** Resolves when the child exited. */
  exited: Promise<void>;
}

/** Bundles fixture scripts (with the store sources) into `outDir` as `<name>.mjs` (see {@link bundleScripts}). */
export async function bundleFixtures(scripts: string[], outDir: string): Promise<void> {
  await bundleScripts(scripts.map((s) => join(here, 'fixtures', s)), outDir);
}

/**
 * Spawns a fixture: `node --import tsx test/store/fixtures/<script> ...args`, or, when `bundleDir` is given, the
 * bundle {@link bundleFixtures} wrote there.
 */
export function spawnFixture(script: string, args: string[], bundleDir?: string): Child {
  const entry = bundleDir === undefined ? ['--import', 'tsx', join(here, 'fixtures', script)] : [join(bundleDir, script.replace(/\.ts$/, '.mjs'))];
  const child = spawn(process.execPath, [...entry, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: Array<{ line: string; resolve: () => void }> = [];
  let buffer = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffer += chunk;
    let nl = buffer.indexOf('\n');
    while (nl !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      lines.push(line);
      for (const w of waiters.filter((w) => w.line === line)) w.resolve();
      nl = buffer.indexOf('\n');
    }
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    process: child,
    lines,
    exited,
    waitFor: (line) =>
      new Promise<void>((resolve, reject) => {
        if (lines.includes(line)) return resolve();
        waiters.push({ line, resolve });
        void exited.then(() => reject(new Error(`${script} exited before printing ${line}: ${stderr}`)));
      }),
  };
}
