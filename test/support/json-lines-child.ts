/** A child process that reports as JSON lines, run under a timeout: for what could hang a test's own process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll } from 'vitest';

const running = new Set<ChildProcess>();
// A child still running when its test file ends (the test timed out first) is killed.
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

/** What {@link runJsonLinesChild} collected: the lines of stdout that are JSON objects, parsed, and the raw output. */
export interface ChildReport<Line> {
  lines: Line[];
  stdout: string;
  stderr: string;
  /** The child was killed at the timeout. */
  timedOut: boolean;
}

/** Runs `node <args>` and resolves when it exits, or once it was killed after `timeoutMs`. */
export function runJsonLinesChild<Line>(args: readonly string[], timeoutMs = 60_000): Promise<ChildReport<Line>> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(proc);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill('SIGKILL');
    }, timeoutMs);
    proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    proc.once('exit', () => {
      clearTimeout(timer);
      running.delete(proc);
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Line);
      resolve({ lines, stdout, stderr, timedOut });
    });
  });
}
