/**
 * BLAKE3 for every module that hashes (DESIGN section 5): the context engine's identifiers and the event log's
 * chain hashes. A ground-floor module: it imports nothing else of ours.
 *
 * @module
 */
import { createRequire } from 'node:module';

/** A BLAKE3 implementation: one-shot digests and incremental hashers, all synchronous once loaded. */
export interface HashBackend {
  /** `'native'` (@napi-rs/blake-hash) or `'wasm'` (hash-wasm). */
  readonly name: 'native' | 'wasm';
  /** The 32-byte BLAKE3 digest of `data`. */
  digest(data: Uint8Array): Buffer;
  /** An incremental hasher for data that does not fit in one buffer (large files). */
  hasher(): { update(data: Uint8Array): void; digest(): Buffer };
  /** The digest of the parts one after another (strings as UTF-8), in one call: no buffer is built to hold them. */
  digestOf(parts: ReadonlyArray<Uint8Array | string>): Buffer;
}

/** The exports of @napi-rs/blake-hash this module uses. */
interface NativeBlake {
  blake3(data: Buffer): Buffer;
  Blake3Hasher: new () => { update(data: Buffer | string): void; digestBuffer(): Buffer };
}

/** The binding package @napi-rs/blake-hash installs for this platform (glibc on Linux), by `platform-arch`. */
const BINDINGS: Record<string, string> = {
  'linux-x64': 'linux-x64-gnu',
  'linux-arm64': 'linux-arm64-gnu',
  'darwin-x64': 'darwin-x64',
  'darwin-arm64': 'darwin-arm64',
  'win32-x64': 'win32-x64-msvc',
};

/**
 * The native binding. Its package's own loader first asks `process.report` whether the C library is musl, which
 * costs tens of milliseconds at every start of a command; so the platform's binding package is required directly
 * (resolved from the main package, which depends on it), and the package's loader is the fallback (musl, other
 * platforms).
 */
function requireNative(): NativeBlake {
  const require = createRequire(import.meta.url);
  const binding = BINDINGS[`${process.platform}-${process.arch}`];
  if (binding !== undefined) {
    try {
      return createRequire(require.resolve('@napi-rs/blake-hash'))(`@napi-rs/blake-hash-${binding}`) as NativeBlake;
    } catch {
      // Not installed, or not loadable here (a glibc binding on musl): the package's loader decides.
    }
  }
  return require('@napi-rs/blake-hash') as NativeBlake;
}

async function loadNative(): Promise<HashBackend> {
  const mod = requireNative();
  return {
    name: 'native',
    digest: (data) => mod.blake3(asBuffer(data)),
    hasher: () => {
      const h = new mod.Blake3Hasher();
      return { update: (data) => void h.update(asBuffer(data)), digest: () => h.digestBuffer() };
    },
    digestOf: (parts) => {
      const h = new mod.Blake3Hasher();
      for (const part of parts) h.update(typeof part === 'string' ? part : asBuffer(part));
      return h.digestBuffer();
    },
  };
}

/** A Buffer view of `data` without copying (the native binding takes Buffers). */
function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * hash-wasm's build of BLAKE3 alone (22 KB), not its package entry (all of its algorithms, 284 KB): loading the
 * entry and making the hasher took 69-76 ms of a command's start here, this file 8-13 ms.
 */
const HASH_WASM_BLAKE3 = 'hash-wasm/dist/blake3.umd.min.js';

async function loadWasm(): Promise<HashBackend> {
  const { createBLAKE3 } = createRequire(import.meta.url)(HASH_WASM_BLAKE3) as Pick<typeof import('hash-wasm'), 'createBLAKE3'>;
  // One wasm instance serves every call: all use of it is synchronous, so calls never interleave.
  const instance = await createBLAKE3(256);
  return {
    name: 'wasm',
    digest: (data) => Buffer.from(instance.init().update(data).digest('binary')),
    hasher: () => {
      const parts: Uint8Array[] = [];
      return {
        update: (data) => void parts.push(new Uint8Array(data)),
        digest: () => {
          instance.init();
          for (const part of parts) instance.update(part);
          return Buffer.from(instance.digest('binary'));
        },
      };
    },
    digestOf: (parts) => {
      instance.init();
      for (const part of parts) instance.update(part);
      return Buffer.from(instance.digest('binary'));
    },
  };
}

/**
 * Loads a BLAKE3 backend: the native one unless it fails to load (or `prefer` is `'wasm'`), then hash-wasm.
 * Both produce identical digests.
 */
export async function loadHashBackend(prefer: 'native' | 'wasm' = 'native'): Promise<HashBackend> {
  if (prefer === 'native') {
    try {
      return await loadNative();
    } catch {
      // The prebuilt native binary is missing for this platform: use the portable implementation.
    }
  }
  return loadWasm();
}

/**
 * Inputs at least this long are hashed by the native binding in a {@link HashPreference} of `'by-size'`. Hot, the
 * native binding wins from about 2 KB on (2.3 KB in 2.4 µs against hash-wasm's 3.1; 16 KB in 7.5 against 22). But in
 * a run that waits for an fdatasync at every step, steps whose 2-3 KB batch it hashed cost 5-10 µs more CPU time
 * than with hash-wasm (5 of 5 paired runs here, on a Xeon with AVX-512, whose wide vector units are slow to wake),
 * which only inputs of about 16 KB and more repay.
 */
export const NATIVE_FROM_BYTES = 16_384;

/**
 * Which backend {@link sharedHashBackend} gives: `'native'` (the default, falling back to wasm) is the faster for
 * large inputs (files); `'wasm'` for small ones; `'by-size'` picks per call, for a mix of both (the event log's chain
 * hashes: a step's batch of events is usually a few kilobytes, a model's answer can be hundreds).
 */
export type HashPreference = 'native' | 'wasm' | 'by-size';

/** `small` for inputs shorter than {@link NATIVE_FROM_BYTES} bytes in all, `large` for the others. */
function bySize(small: HashBackend, large: HashBackend): HashBackend {
  if (small === large || large.name === small.name) return small;
  const partsLength = (parts: ReadonlyArray<Uint8Array | string>): number => {
    let length = 0;
    for (const part of parts) length += part.length;
    return length;
  };
  return {
    name: large.name,
    digest: (data) => (data.length < NATIVE_FROM_BYTES ? small : large).digest(data),
    hasher: () => large.hasher(),
    // A string's length in UTF-16 units is at most its length in bytes: a long text goes to `large`, as it should.
    digestOf: (parts) => (partsLength(parts) < NATIVE_FROM_BYTES ? small : large).digestOf(parts),
  };
}

const shared = new Map<HashPreference, Promise<HashBackend>>();

/**
 * A process-wide backend, loaded once per preference (see {@link HashPreference}). All give the same digests.
 */
export function sharedHashBackend(prefer: HashPreference = 'native'): Promise<HashBackend> {
  let backend = shared.get(prefer);
  if (backend === undefined) {
    backend = (prefer === 'by-size' ? Promise.all([sharedHashBackend('wasm'), sharedHashBackend('native')]).then(([small, large]) => bySize(small, large)) : loadHashBackend(prefer)).catch((error: unknown) => {
      shared.delete(prefer);
      throw error;
    });
    shared.set(prefer, backend);
  }
  return backend;
}
