import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

/** The files (as file: URLs) a built command (or `script`) loads, seen by a module loader hook that reports every load. */
function modulesLoaded(args: string[], script: string[] = [BIN]): string[] {
  const hook = 'data:text/javascript,export async function load(url, context, next) { process.stderr.write(`LOADED ${url}\\n`); return next(url, context); }';
  const result = spawnSync(process.execPath, ['--no-warnings', '--experimental-loader', hook, ...script, ...args], { encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return result.stderr
    .split('\n')
    .filter((line) => line.startsWith('LOADED file:'))
    .map((line) => line.slice('LOADED '.length));
}

describe('the built command line loads what a command uses', () => {
  it('--help loads the program and commander, not the stores, zod or the LLM packages', () => {
    const loaded = modulesLoaded(['--help']);
    expect(loaded.some((url) => url.endsWith('/cli/backpackflow/program.js'))).toBe(true);
    expect(loaded.filter((url) => /\/dist\/(store|runtime|nodes|events|serialization)\/|\/node_modules\/(zod|ai|@opentelemetry)\//.test(url))).toEqual([]);
    expect(loaded.length).toBeLessThanOrEqual(6);
  });

  it("a command's help loads its definition, not what its action runs (the runtime, the stores, zod)", () => {
    for (const command of ['run', 'validate']) {
      const loaded = modulesLoaded([command, '--help']);
      expect(loaded.some((url) => url.endsWith('/cli/backpackflow/flow-commands.js'))).toBe(true);
      expect(loaded.filter((url) => /\/dist\/(store\/index|runtime|serialization\/index|nodes)|\/cli\/backpackflow\/flow-actions|\/node_modules\/zod\//.test(url))).toEqual([]);
    }
  });

  it('context commands load the one bundled context module, not the run store or the unbundled context modules', () => {
    const loaded = modulesLoaded(['context', '--help']);
    expect(loaded.some((url) => url.endsWith('/cli/context-program.js'))).toBe(true);
    expect(loaded.filter((url) => /\/dist\/(store|runtime|context)\/|\/node_modules\/(zod|commander)\//.test(url))).toEqual([]);
  });

  it('a command on a data directory does not load the PostgreSQL driver', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bf-modules-'));
    try {
      const loaded = modulesLoaded(['runs', 'list', '--data-dir', dataDir]);
      expect(loaded.some((url) => url.includes('/dist/store/'))).toBe(true);
      expect(loaded.filter((url) => url.includes('/node_modules/postgres/'))).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('the AI SDK is loaded by the first model call, not by importing the library or by a command that calls no model', () => {
    // validate --help builds the command whose module registers the built-in LLM node classes.
    expect(modulesLoaded(['validate', '--help']).filter((url) => /\/node_modules\/(ai|@ai-sdk)\//.test(url))).toEqual([]);
    const index = pathToFileURL(join(dirname(BIN), '..', 'index.js')).href;
    const loaded = modulesLoaded([], ['--input-type=module', '-e', `await import(${JSON.stringify(index)})`]);
    expect(loaded.some((url) => url.endsWith('/dist/nodes/llm/llm-node.js'))).toBe(true);
    expect(loaded.filter((url) => /\/node_modules\/(ai|@ai-sdk)\//.test(url))).toEqual([]);
  });
});
