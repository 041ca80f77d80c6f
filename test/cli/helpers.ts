import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { plainEnv } from '../support/env.js';
import { makeTempDir } from '../support/temp.js';
import { runInProcess, type Result } from './in-process.js';

export type { Result } from './in-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The built CLI, run as a user would. */
export const BIN = join(root, 'dist', 'cli', 'backpackflow.js');
export const FIXTURES = join(root, 'test', 'cli', 'fixtures');
export const MODULES = join(FIXTURES, 'nodes.mjs');

/** Where and how a CLI command runs. */
export interface CliOptions {
  cwd?: string;
  /** Added to the test process's environment (with NO_COLOR set and FORCE_COLOR removed). */
  env?: Record<string, string>;
}

/**
 * Runs the built CLI's `main` with `args` (NO_COLOR, so the text has no ANSI codes) in this process: the same output
 * and exit code as the binary, without a process start (./in-process.ts). `context ...` keeps its command tree for the
 * life of a process, so it always runs in a child process.
 */
export function cli(args: string[], options: CliOptions = {}): Promise<Result> {
  const named = args.findIndex((a) => !a.startsWith('-'));
  if (args[named] === 'context' || (args[named] === 'help' && args[named + 1] === 'context')) return cliProcess(args, options);
  return runInProcess(root, args, options.cwd ?? root, plainEnv(options.env));
}

/** Runs the built binary, `node dist/cli/backpackflow.js`, with `args` as a child process (NO_COLOR). */
export function cliProcess(args: string[], options: CliOptions = {}): Promise<Result> {
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
export async function cliJson<T = any>(args: string[], options: CliOptions = {}): Promise<T> {
  const result = await cli([...args, '--json'], options);
  if (result.code !== 0) throw new Error(`backpackflow ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A temp directory removed after the file's tests. */
export function tempDir(): string {
  return makeTempDir('bpf-cli-', 'file');
}
