import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

const REQUIRES = join(import.meta.dirname, 'fixtures', 'log-requires.cjs');
const hook = 'data:text/javascript,export async function load(url, context, next) { process.stderr.write(`LOADED ${url}\\n`); return next(url, context); }';

/** A process started once: tests that look at the same command share its result. */
const started = new Map<string, Promise<{ status: number | null; stderr: string }>>();

/**
 * The files (as file: URLs) a built command (or `script`) loads, seen by a module loader hook that reports every load.
 * The tests run concurrently, so their processes run side by side.
 */
async function modulesLoaded(args: string[], script: string[] = [BIN]): Promise<string[]> {
  // ES modules through the loader hook, CommonJS ones (packages the bundled command lines require) through a preload.
  const argv = ['--no-warnings', '--require', REQUIRES, '--experimental-loader', hook, ...script, ...args];
  const key = JSON.stringify(argv);
  let result = started.get(key);
  if (result === undefined) {
    result = new Promise((resolve, reject) => {
      execFile(process.execPath, argv, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (error, _stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') reject(error);
        else resolve({ status: error === null ? 0 : (error.code as number), stderr });
      });
    });
    started.set(key, result);
  }
  const { status, stderr } = await result;
  expect(status, stderr).toBe(0);
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('LOADED file:'))
    .map((line) => line.slice('LOADED '.length));
}

describe.concurrent('the built command line loads what a command uses', () => {
  it('--help loads the program and commander, not the stores, zod or the LLM packages', async () => {
    const loaded = await modulesLoaded(['--help']);
    expect(loaded.some((url) => url.endsWith('/cli/backpackflow/program.js'))).toBe(true);
    expect(loaded.filter((url) => /\/dist\/(store|runtime|nodes|events|serialization)\/|\/node_modules\/(zod|ai|@opentelemetry)\//.test(url))).toEqual([]);
    // Ours: the binary, its output guard, the program, its runner, its errors (commander's own files are not counted).
    expect(loaded.filter((url) => !url.includes('/node_modules/')).length).toBeLessThanOrEqual(5);
  });

  it("a command's help loads its definition, not what its action runs (the runtime, the stores, zod)", async () => {
    for (const loaded of await Promise.all(['run', 'validate'].map((command) => modulesLoaded([command, '--help'])))) {
      expect(loaded.some((url) => url.endsWith('/cli/backpackflow/flow-commands.js'))).toBe(true);
      expect(loaded.filter((url) => /\/dist\/(store\/index|runtime|serialization\/index|nodes)|\/cli\/backpackflow\/flow-actions|\/node_modules\/zod\//.test(url))).toEqual([]);
    }
  });

  it('context commands load the one bundled context module, not the run store or the unbundled context modules', async () => {
    const loaded = await modulesLoaded(['context', '--help']);
    expect(loaded.some((url) => url.endsWith('/cli/context-program.js'))).toBe(true);
    expect(loaded.filter((url) => /\/dist\/(store|runtime|context)\/|\/node_modules\/(zod|commander)\//.test(url))).toEqual([]);
  });

  it('the runs commands that read, and the memory commands, load the one bundled store module, not the library or zod module by module, nor the PostgreSQL driver', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bf-modules-'));
    try {
      for (const args of [['runs', 'list'], ['runs', 'show', '--help'], ['runs', 'verify', '--help'], ['memory', 'search', 'anything']]) {
        const loaded = await modulesLoaded([...args, '--data-dir', dataDir]);
        // The loader module; it reads and compiles the bundle itself (see code-cache.ts).
        expect(loaded.some((url) => url.endsWith('/cli/store-program.js'))).toBe(true);
        expect(loaded.filter((url) => /\/dist\/(store|runtime|events|backpack|nodes)\/|\/node_modules\/(zod|postgres|ai|@ai-sdk)\//.test(url))).toEqual([]);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('runs resume and runs fork run unbundled: the flow modules they load share the library with them', async () => {
    for (const command of ['resume', 'fork']) {
      const loaded = await modulesLoaded(['runs', command, '--help']);
      expect(loaded.some((url) => url.endsWith('/cli/backpackflow/runs.js'))).toBe(true);
      expect(loaded.filter((url) => url.includes('/cli/store-program'))).toEqual([]);
    }
  });

  it('the AI SDK is loaded by the first model call, not by importing the library or by a command that calls no model', async () => {
    const index = pathToFileURL(join(dirname(BIN), '..', 'index.js')).href;
    // validate --help builds the command whose module registers the built-in LLM node classes.
    const [help, loaded] = await Promise.all([modulesLoaded(['validate', '--help']), modulesLoaded([], ['--input-type=module', '-e', `await import(${JSON.stringify(index)})`])]);
    expect(help.filter((url) => /\/node_modules\/(ai|@ai-sdk)\//.test(url))).toEqual([]);
    expect(loaded.some((url) => url.endsWith('/dist/nodes/llm/llm-node.js'))).toBe(true);
    expect(loaded.filter((url) => /\/node_modules\/(ai|@ai-sdk)\//.test(url))).toEqual([]);
  });
});
