import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { bundleId, codeCacheFile, loadBundle } from '../../src/cli/code-cache.js';

const root = join(import.meta.dirname, '..', '..');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A CommonJS bundle with the build's header: a counter per instance, its URL, and whether it runs strict. */
function bundle(id: string, body = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'code-cache-'));
  dirs.push(dir);
  const file = join(dir, 'bundle.cjs');
  writeFileSync(
    file,
    `"use strict";/* bundle ${id} */\nlet n = 0;\nmodule.exports = { next: () => ++n, url: __bundleUrl, dir: __dirname, strict: (function () { return this === undefined; })(), exportsIsThis: this === exports };\n${body}`,
  );
  return file;
}

type Counter = { next(): number; url: string; dir: string; strict: boolean; exportsIsThis: boolean };
const ID = 'a'.repeat(32);

describe('the context bundle loads with its code cache', () => {
  it('reads the id of a bundle from its first line only', () => {
    expect(bundleId(`"use strict";/* bundle ${ID} */\nrest`)).toBe(ID);
    expect(bundleId(`\n"use strict";/* bundle ${ID} */`)).toBeUndefined();
    expect(bundleId(`"use strict";/* bundle ${'A'.repeat(32)} */`)).toBeUndefined();
  });

  it('runs a bundle as a strict CommonJS module; each instance has its own state and the same compiled code', () => {
    const file = bundle(ID);
    const compiled = loadBundle<Counter>(file);
    expect(compiled.cache).toBe('absent');
    const a = compiled.instantiate();
    const b = compiled.instantiate();
    expect([a.next(), a.next(), b.next()]).toEqual([1, 2, 1]);
    expect(a.url).toBe(pathToFileURL(file).href);
    expect(a.dir).toBe(join(file, '..'));
    expect(a.strict).toBe(true);
    expect(a.exportsIsThis).toBe(true);
  });

  it('uses a cache made for the same bundle, and ignores one of another build or one V8 refuses', () => {
    const file = bundle(ID);
    const made = loadBundle<Counter>(file);
    made.instantiate().next();
    const cache = made.codeCache();
    expect(cache.toString('latin1', 0, 32)).toBe(ID);

    writeFileSync(codeCacheFile(file), cache);
    const cached = loadBundle<Counter>(file);
    expect(cached.cache).toBe('used');
    expect(cached.instantiate().next()).toBe(1);

    // The same cache beside a bundle of another build (another id, the same length): not offered to V8 at all.
    const other = bundle('b'.repeat(32));
    writeFileSync(codeCacheFile(other), cache);
    expect(loadBundle<Counter>(other).cache).toBe('other build');

    // Bytes V8 cannot use (damaged, made by another Node.js version, or for other code under the same id): compiled
    // as usual. (A source this isolate compiled before comes from V8's own cache without reading the bytes, so each
    // case is a source of its own.)
    const damaged = bundle(ID, '// damaged');
    writeFileSync(codeCacheFile(damaged), Buffer.concat([Buffer.from(ID, 'latin1'), createHash('sha256').update(readFileSync(damaged, 'utf8')).digest(), Buffer.alloc(64, 7)]));
    const refused = loadBundle<Counter>(damaged);
    expect(refused.cache).toBe('rejected');
    expect(refused.instantiate().next()).toBe(1);
    const edited = bundle(ID, '// edited after the cache was made');
    writeFileSync(codeCacheFile(edited), cache);
    expect(loadBundle<Counter>(edited).cache).toBe('rejected');
    // Edited in place to the same length (V8 checks only the length): the cache is not used, the new code runs.
    const sameLength = bundle(ID, 'module.exports.value = 1111;');
    const made1111 = loadBundle<Counter & { value: number }>(sameLength);
    made1111.instantiate();
    const cache1111 = made1111.codeCache();
    writeFileSync(sameLength, readFileSync(sameLength, 'utf8').replace('1111', '2222'));
    writeFileSync(codeCacheFile(sameLength), cache1111);
    const reloaded = loadBundle<Counter & { value: number }>(sameLength);
    expect(reloaded.cache).toBe('rejected');
    expect(reloaded.instantiate().value).toBe(2222);
  });

  it.each([
    ['context-program', 'runContextCli'],
    ['store-program', 'runStoreCli'],
  ])('the built command line %s finds the cache the build made for it, and the bundle calls no import()', (name, entryPoint) => {
    const file = join(root, 'dist', 'cli', `${name}.cjs`);
    expect(readFileSync(codeCacheFile(file), 'latin1').slice(0, 32)).toBe(bundleId(readFileSync(file, 'utf8')));
    expect(readFileSync(file, 'utf8')).not.toMatch(/\bimport\(/);
    const entry = pathToFileURL(join(root, 'dist', 'cli', `${name}.js`)).href;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(entry)}); console.log(m.codeCacheUse, typeof m.${entryPoint})`], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('used function');
  });
});
