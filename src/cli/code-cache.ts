/**
 * Loads a bundled command line (`dist/cli/context-program.cjs` and `dist/cli/store-program.cjs`, made by
 * `scripts/bundle-cli.mjs`) with V8's code cache for it. Without the cache, every process parses the bundle and
 * compiles each function it calls (commander's, the engine's, the stores') before running it: about a tenth of the
 * CPU of an unchanged `context scan` on 100,000 files. The build stores the compiled code of a few representative runs
 * beside the bundle; a process that finds it deserializes that code instead. Node.js 20 offers no such cache for ES
 * modules or `require`, hence the bundle is CommonJS run as a `vm.Script`, which takes one.
 *
 * The cache is used only when it belongs to this very bundle (the build writes the same random id into both), was
 * made from exactly this text (it holds the SHA-256 of the source it was made from: V8 itself checks only the
 * source's length, and would run the old code of a bundle edited in place to the same length), and V8 accepts it
 * (same V8 version and flags; otherwise it is rejected and everything is compiled as usual). Nothing is ever written
 * at run time.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Script } from 'node:vm';

/** What became of the code cache of a bundle. */
export type CodeCacheUse = 'used' | 'rejected' | 'absent' | 'other build';

/** A CommonJS bundle compiled once (see {@link loadBundle}). */
export interface CompiledBundle<T> {
  /** A new instance of the bundle's module: its top-level code run again, sharing the compiled code. */
  instantiate(): T;
  /** Whether the code cache served this compilation. */
  readonly cache: CodeCacheUse;
  /** The code cache of every function compiled so far, with the bundle's id and the source's digest in front (what the build stores). */
  codeCache(): Buffer;
}

/** The first line of a bundle: its directive and the random id of its build. */
const HEADER = /^"use strict";\/\* bundle ([0-9a-f]{32}) \*\//;
const ID_BYTES = 32;
/** After the id: the SHA-256 of the source the cache was made from. */
const DIGEST_BYTES = 32;

function digestOf(source: string): Buffer {
  return createHash('sha256').update(source).digest();
}

/** The id a bundle's header names, or undefined. */
export function bundleId(source: string): string | undefined {
  return HEADER.exec(source)?.[1];
}

/** Where the build stores the code cache of the bundle at `file`. */
export function codeCacheFile(file: string): string {
  return `${file}.cache`;
}

/**
 * Compiles the CommonJS bundle at `file` (with the header above) with its code cache when there is one for it. The
 * bundle sees `require`, `module`, `exports`, `__filename`, `__dirname` as in a CommonJS module, and `__bundleUrl`
 * (its file URL, for what the sources read as `import.meta.url`). It must not call `import()` (a script compiled
 * with a code cache has no way to Node's ES module loader): the build turns those calls into `require`.
 */
export function loadBundle<T>(file: string): CompiledBundle<T> {
  const source = readFileSync(file, 'utf8');
  const id = bundleId(source);
  let cachedData: Buffer | undefined;
  let cache: CodeCacheUse = 'absent';
  try {
    const stored = readFileSync(codeCacheFile(file));
    if (id === undefined || stored.length <= ID_BYTES + DIGEST_BYTES || stored.toString('latin1', 0, ID_BYTES) !== id) cache = 'other build';
    // This build's cache, made from other text (the bundle was edited since): never offered to V8.
    else if (!stored.subarray(ID_BYTES, ID_BYTES + DIGEST_BYTES).equals(digestOf(source))) cache = 'rejected';
    else cachedData = stored.subarray(ID_BYTES + DIGEST_BYTES);
  } catch {
    // No cache: compiled as usual.
  }
  // The same wrapper as Node's for a CommonJS module, plus the bundle's URL.
  const script = new Script(`(function (exports, require, module, __filename, __dirname, __bundleUrl) {${source}\n})`, {
    filename: file,
    cachedData,
  });
  if (cachedData !== undefined) cache = script.cachedDataRejected === true ? 'rejected' : 'used';
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  const require = createRequire(file);
  const url = pathToFileURL(file).href;
  return {
    cache,
    instantiate() {
      const module = { exports: {} as T };
      wrapper.call(module.exports, module.exports, require, module, file, dirname(file), url);
      return module.exports;
    },
    codeCache() {
      if (id === undefined) throw new Error(`${file} has no bundle id in its first line`);
      return Buffer.concat([Buffer.from(id, 'latin1'), digestOf(source), script.createCachedData()]);
    },
  };
}
