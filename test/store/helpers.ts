import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, vi } from 'vitest';
import type { StreamEvent, StreamEventTypeValue } from '../../src/events/types.js';

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
