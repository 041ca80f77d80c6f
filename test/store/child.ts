import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** Spawns `node --import tsx test/store/fixtures/<script> ...args`. */
export function spawnFixture(script: string, args: string[]): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'fixtures', script), ...args], {
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
