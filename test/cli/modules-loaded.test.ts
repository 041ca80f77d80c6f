import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

/** The files (as file: URLs) a built command loads, seen by a module loader hook that reports every load. */
function modulesLoaded(args: string[]): string[] {
  const hook = 'data:text/javascript,export async function load(url, context, next) { process.stderr.write(`LOADED ${url}\\n`); return next(url, context); }';
  const result = spawnSync(process.execPath, ['--no-warnings', '--experimental-loader', hook, BIN, ...args], { encoding: 'utf8' });
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
});
