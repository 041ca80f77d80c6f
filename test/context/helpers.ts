import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { ContextEngine, type ContextEngineOptions } from '../../src/context/index.js';
import { delay } from '../../src/flow/index.js';
import { runMerkleInProcess } from '../cli/in-process.js';
import { plainEnv } from '../support/env.js';
import { makeTempDir } from '../support/temp.js';

/** A fresh temp directory, removed after the test. */
export function tempDir(prefix = 'merkle-test-'): string {
  return makeTempDir(prefix, 'test');
}

/** Writes `files` (path → content; a path ending in '/' is an empty directory) under `root`. */
export function writeTree(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    if (path.endsWith('/')) {
      mkdirSync(join(root, path), { recursive: true });
      continue;
    }
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/**
 * Sets the mtime of `root` and of everything under it (but `.merkle/`, which it creates first, so that the first
 * scan's lock does not touch the root again) to `secondsAgo` seconds before now. A workspace written moments before
 * its scan has entries in the racy window of that scan (changed after it began: see racyInstant), which scans read again
 * (see ScanResult.racy); tests of the stat cache start from a settled workspace instead.
 */
export function settle(root: string, secondsAgo = 60): void {
  mkdirSync(join(root, '.merkle'), { recursive: true });
  const at = Math.floor(Date.now() / 1000) - secondsAgo;
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (dir === root && entry.name === '.merkle') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      if (!entry.isSymbolicLink()) utimesSync(path, at, at);
    }
    utimesSync(dir, at, at);
  };
  visit(root);
}

/**
 * Waits past the filesystem's timestamp tick: a change made just before a scan that writes the tree falls in the
 * tree's racy window, and the scan after that reads it again. Tests that count what a later scan reads call this
 * between their change and the scan that records it.
 */
export function afterTick(): Promise<void> {
  return delay(15);
}

/**
 * Runs `fn` with `Date` (only: timers run as usual) stopped at `ms`: a scan in it began then, so the racy instant
 * it records (see `racyInstant`) is that time's. Real time is back when `fn` settles.
 */
export async function atTime<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['Date'], now: ms });
  try {
    return await fn();
  } finally {
    vi.useRealTimers();
  }
}

/**
 * Dates `paths` under `root` `secondsAgo` seconds back (as {@link settle} dates a workspace): an edit made well before
 * the next scan, outside the racy window of the scan that records it, which later scans then trust without reading.
 */
export function backdate(root: string, paths: readonly string[], secondsAgo = 30): void {
  const at = Math.floor(Date.now() / 1000) - secondsAgo;
  for (const path of paths) utimesSync(join(root, path), at, at);
}

/** The small workspace most tests use. */
export const SAMPLE: Record<string, string> = {
  'README.md': '# sample\n',
  'src/main.ts': 'export const main = 1;\n',
  'src/util/strings.ts': 'export const s = "x";\n',
  'src/util/numbers.ts': 'export const n = 2;\n',
  'docs/guide.md': 'guide\n',
  'empty/': '',
};

/** A temp workspace with `files`, scanned, with a writer `w`, a synthesis agent `s` and a reader `r`. */
export async function openSample(
  files: Record<string, string> = SAMPLE,
  options: ContextEngineOptions = {},
): Promise<{ root: string; engine: ContextEngine }> {
  const root = tempDir();
  writeTree(root, files);
  settle(root);
  const engine = await ContextEngine.open(root, options);
  await engine.scan();
  await engine.registerAgent({ agentId: 'w', role: 'writer' });
  await engine.registerAgent({ agentId: 's', role: 'synthesis' });
  await engine.registerAgent({ agentId: 'r', role: 'reader' });
  return { root, engine };
}

/** Every file of `.merkle/` (lock excluded) with the SHA-256 of its bytes: equal snapshots mean a byte-identical store. */
export function snapshotStore(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, rel: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(join(dir, entry.name), path);
      else if (path !== 'lock') out[path] = createHash('sha256').update(readFileSync(join(dir, entry.name))).digest('hex');
    }
  };
  try {
    walk(join(root, '.merkle'), '');
  } catch {
    // no store yet
  }
  return out;
}

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The built CLI, as the package `bin` runs it. */
export const MERKLE_BIN = join(repoRoot, 'dist', 'cli', 'merkle.js');

/**
 * Runs the built context command line with `args` in `cwd`, in this process (a fresh instance of the bundle each call,
 * see test/cli/in-process.ts): the output and exit code of `node dist/cli/merkle.js`, without a process start.
 */
export function runMerkle(args: readonly string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return runMerkleInProcess(repoRoot, args, cwd, plainEnv());
}

/** Runs the built `merkle` binary as a child process; never rejects. */
export function runMerkleProcess(args: readonly string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MERKLE_BIN, ...args], { cwd, env: plainEnv() }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs the built CLI with `--json` and parses its output; throws with stderr on a non-zero exit. */
export async function json(args: string[], cwd: string): Promise<any> {
  const r = await runMerkle([...args, '--json'], cwd);
  if (r.code !== 0) throw new Error(`merkle ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** A scanned sample workspace with agents `w` (writer) and `s` (synthesis), set up through the CLI or (faster) the API. */
export async function workspace(viaCli = false): Promise<string> {
  const root = tempDir();
  writeTree(root, SAMPLE);
  // Written long before the scan: a file changed in the moments before a scan is read again by the next (its racy
  // window), which then records that, and these workspaces serve tests of other things.
  settle(root);
  if (viaCli) {
    await json(['scan'], root);
    await json(['agent', 'add', 'w', '--role', 'writer'], root);
    await json(['agent', 'add', 's', '--role', 'synthesis'], root);
    return root;
  }
  const engine = await ContextEngine.open(root);
  await engine.scan();
  await engine.registerAgent({ agentId: 'w', role: 'writer' });
  await engine.registerAgent({ agentId: 's', role: 'synthesis' });
  return root;
}
