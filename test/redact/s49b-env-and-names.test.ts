/**
 * Review s49b: (1) the values of secret-named environment variables are taken once per process by the shared default
 * redactor, so a variable set or rotated after the first run (dotenv loaded late, a secret fetched from a vault at
 * start-up after a warm-up run, a rotation) is written as it is by later runs; (2) secret names the key rule misses.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { Redactor } from '../../src/redact/index.js';
import { filesHolding } from '../support/files.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-audit-s49b-env-'));
afterAll(() => {
  delete process.env['AUDIT_S49B_SERVICE_PASSWORD'];
  rmSync(dir, { recursive: true, force: true });
});

async function packAndGrep(runId: string, key: string, value: () => unknown, secret: string): Promise<string[]> {
  const flow = new Flow({ namespace: 'audit' });
  class Pack extends BackpackNode {
    override post(b: BackpackHandle) {
      b.pack(key, value());
      return undefined;
    }
  }
  flow.addNode(Pack, { id: 'pack' });
  const dataDir = join(dir, runId);
  await runFlow(flow, { dataDir, runId, durability: 'never' });
  return filesHolding(dataDir, secret);
}

describe('review s49b: environment values and secret names', () => {
  it('M-6 a secret-named environment variable set after the first run of the process is redacted in later runs', async () => {
    // A first run in this process (a warm-up, a health check): the shared redactor is made here.
    await packAndGrep('warm-up', 'note', () => 'hello', 'nothing');
    // Then the secret arrives in the environment (dotenv.config(), a vault fetch, a rotation).
    const secret = 'correct horse battery staple';
    process.env['AUDIT_S49B_SERVICE_PASSWORD'] = secret;
    // A redactor made now knows it (the rule works):
    expect(new Redactor().redactText(`login with ${secret}`)).not.toContain(secret);
    // The node reads the variable and reports what it used, under an ordinary key.
    const leaked = await packAndGrep('after-env', 'status', () => `connected to billing with ${process.env['AUDIT_S49B_SERVICE_PASSWORD']}`, secret);
    expect(leaked).toEqual([]);
  }, 20_000);

  it.each([
    ['passcode', 'answer of a "Enter your passcode" interrupt'],
    ['privkey', 'a wallet or tool config'],
    ['mnemonic', 'a 12-word wallet recovery phrase'],
    ['seed_phrase', 'a wallet recovery phrase'],
    ['client_assertion', 'an OAuth client assertion'],
  ])('L-7 a value under %s (%s) is not stored', async (name) => {
    const value = 'abandon ability able about above absent absorb abstract';
    const leaked = await packAndGrep(`name-${name.replace(/_/g, '-')}`, 'form', () => ({ user: 'bob', [name]: value }), value);
    expect(leaked).toEqual([]);
  }, 20_000);

  it('a session id is no secret name (a chat session, a run session are ids; a session cookie is blanked as a cookie header, and its value by the catalogue where it has a secret shape)', () => {
    expect(new Redactor().isSecretKey('sessionid')).toBe(false);
    expect(new Redactor().isSecretKey('session_id')).toBe(false);
  });

  it('Redactor.renewEnvironment: a variable set later is known; a rotated value stays known; unchanged, nothing changes', () => {
    const redactor = new Redactor();
    const name = 'S49B_RENEW_API_TOKEN';
    try {
      process.env[name] = 'first value of the token';
      expect(redactor.redactText('x first value of the token x')).toBe('x first value of the token x');
      redactor.renewEnvironment();
      expect(redactor.redactText('x first value of the token x')).toBe('x [REDACTED] x');
      process.env[name] = 'second value, rotated';
      redactor.renewEnvironment();
      expect(redactor.redactText('a second value, rotated; b first value of the token')).toBe('a [REDACTED]; b [REDACTED]');
      redactor.renewEnvironment();
      expect(redactor.redactText('second value, rotated')).toBe('[REDACTED]');
    } finally {
      delete process.env[name];
    }
  });
});
