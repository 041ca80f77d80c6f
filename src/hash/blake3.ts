/**
 * BLAKE3 for every module that hashes (DESIGN section 5): the context engine's identifiers and the event log's
 * chain hashes. A ground-floor module: it imports nothing else of ours.
 *
 * @module
 */

/** A BLAKE3 implementation: one-shot digests and incremental hashers, all synchronous once loaded. */
export interface HashBackend {
  /** `'native'` (@napi-rs/blake-hash) or `'wasm'` (hash-wasm). */
  readonly name: 'native' | 'wasm';
  /** The 32-byte BLAKE3 digest of `data`. */
  digest(data: Uint8Array): Buffer;
  /** An incremental hasher for data that does not fit in one buffer (large files). */
  hasher(): { update(data: Uint8Array): void; digest(): Buffer };
}

async function loadNative(): Promise<HashBackend> {
  const mod = await import('@napi-rs/blake-hash');
  return {
    name: 'native',
    digest: (data) => mod.blake3(asBuffer(data)),
    hasher: () => {
      const h = new mod.Blake3Hasher();
      return { update: (data) => void h.update(asBuffer(data)), digest: () => h.digestBuffer() };
    },
  };
}

/** A Buffer view of `data` without copying (the native binding takes Buffers). */
function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

async function loadWasm(): Promise<HashBackend> {
  const { createBLAKE3 } = await import('hash-wasm');
  // One wasm instance serves every call: all use of it is synchronous, so calls never interleave.
  const instance = await createBLAKE3(256);
  return {
    name: 'wasm',
    digest: (data) => Buffer.from(instance.init().update(data).digest('binary')),
    hasher: () => {
      const parts: Uint8Array[] = [];
      return {
        update: (data) => void parts.push(Uint8Array.from(data)),
        digest: () => {
          instance.init();
          for (const part of parts) instance.update(part);
          return Buffer.from(instance.digest('binary'));
        },
      };
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

let shared: Promise<HashBackend> | undefined;

/** The process-wide backend (native, else wasm), loaded once. */
export function sharedHashBackend(): Promise<HashBackend> {
  shared ??= loadHashBackend().catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  return shared;
}
