import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, vi } from 'vitest';
import type { StreamEvent, StreamEventTypeValue } from '../../src/events/types.js';
import { loadHashBackend } from '../../src/hash/blake3.js';
import { chainOf, genesis, sealBatch } from '../../src/store/chain.js';

/** A fresh temp directory; `cleanup()` removes it. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-store-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A valid event of run `runId` with sequence number `seq`. */
export function makeEvent(runId: string, seq: number, overrides: Partial<StreamEvent> & { type?: StreamEventTypeValue } = {}): StreamEvent {
  return {
    v: 1,
    id: `evt-${seq}`,
    seq,
    timestamp: 1_700_000_000_000 + seq,
    runId,
    type: 'custom',
    payload: { n: seq },
    ...overrides,
  };
}

/** One of each secret kind that must never reach disk. */
export const SECRETS = {
  openai: 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789',
  bearer: 'Bearer abcdefghijklmnop.qrstuvwx',
  privateKey: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
};

/**
 * For a test file: a fresh temp dir before each test, and every process warning recorded as `<type>: <message>`
 * (not printed); both undone after each test. Read the returned object's fields inside the tests.
 */
export function tempDirAndWarnings(): { tmp: ReturnType<typeof tempDir>; warnings: string[] } {
  const state = { tmp: undefined as unknown as ReturnType<typeof tempDir>, warnings: [] as string[] };
  beforeEach(() => {
    state.tmp = tempDir();
    state.warnings = [];
    vi.spyOn(process, 'emitWarning').mockImplementation((warning, type) => void state.warnings.push(`${String(type)}: ${String(warning)}`));
  });
  afterEach(() => {
    vi.restoreAllMocks();
    state.tmp.cleanup();
  });
  return state;
}

/**
 * Rewrites the event log at `eventsPath` (of run `sessionKey/runId`) as a writer before line numbers were hashed
 * into the chain would have written it (chain format 'v1', see src/store/chain.ts): the same lines and batches,
 * each sealed line's chain hash recomputed without its number. The file keeps its size.
 */
export async function rewriteAsChainV1(eventsPath: string, sessionKey: string, runId: string): Promise<void> {
  const backend = await loadHashBackend('wasm');
  const stored = readFileSync(eventsPath, 'utf8').split('\n').slice(0, -1);
  let head = genesis(backend, sessionKey, runId);
  let out = '';
  let batch: string[] = [];
  stored.forEach((line, i) => {
    const sealed = chainOf(Buffer.from(line)) !== undefined;
    batch.push(sealed ? `${line.slice(0, line.lastIndexOf(',"chain":"'))}}` : line);
    if (!sealed) return;
    const done = sealBatch(backend, head, batch, false, { line: i + 1 - batch.length, format: 'v1' });
    head = done.head;
    out += done.pieces.map((piece) => piece.toString()).join('');
    batch = [];
  });
  for (const line of batch) out += `${line}\n`;
  writeFileSync(eventsPath, out);
}
