import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { plainEnv } from '../support/env.js';
import { makeTempDir } from '../support/temp.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The built CLI, run as a user would. */
export const BIN = join(root, 'dist', 'cli', 'backpackflow.js');
export const FIXTURES = join(root, 'test', 'cli', 'fixtures');
export const MODULES = join(FIXTURES, 'nodes.mjs');

/** What a CLI process did. */
export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with `args` (NO_COLOR, so the text has no ANSI codes). */
export function cli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? root, env: plainEnv(options.env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Runs the CLI with `--json` appended, expects exit 0 and one JSON document on stdout. */
export async function cliJson<T = any>(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<T> {
  const result = await cli([...args, '--json'], options);
  if (result.code !== 0) throw new Error(`backpackflow ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A temp directory removed after the file's tests. */
export function tempDir(): string {
  return makeTempDir('bpf-cli-', 'file');
}
