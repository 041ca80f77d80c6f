/**
 * A reader that closes the CLI's output early (`backpackflow runs show r --json | head -3`): the process ends quietly
 * with exit code 0 (src/cli/closed-output.ts), not with an unhandled EPIPE stack trace. Real child processes of the
 * built entries (dist/cli, as a user runs them; test/global-setup.ts builds them) whose stdout pipe is closed before
 * they write to it.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { plainEnv } from '../support/env.js';
import { makeTempDir } from '../support/temp.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Runs `dist/cli/<entry>` with `args`, closes the read end of its stdout at once, and collects its stderr and exit code. */
function withClosedStdout(entry: string, args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'dist', 'cli', entry), ...args], { cwd: root, env: plainEnv() });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe('a CLI whose output is closed by its reader', () => {
  it('exits 0 without a word on stderr, for data commands, help and the context command line', async () => {
    const dataDir = makeTempDir('bpf-epipe-', 'file');
    const cases: Array<[string, string[]]> = [
      ['backpackflow.js', ['runs', 'list', '--json', '--data-dir', dataDir]],
      ['backpackflow.js', ['runs', 'list', '--data-dir', dataDir]],
      ['backpackflow.js', ['--help']],
      ['backpackflow.js', ['context', '--help']],
      ['merkle.js', ['--help']],
    ];
    const results = await Promise.all(cases.map(([entry, args]) => withClosedStdout(entry, args)));
    for (const [i, result] of results.entries()) expect(result, cases[i]!.join(' ')).toEqual({ code: 0, signal: null, stderr: '' });
  });
});
