/**
 * Review s50b: secrets the s49b rules promise to keep off disk, written by an ordinary durable run (event log,
 * keyframes, projection). Each test greps every byte the run wrote.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, renewEnvironmentSecrets, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesHolding } from '../support/files.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-audit-s50b-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a one-node flow that packs each [key, value]; resolves to the files of the run that hold `secret`. */
async function packAndGrep(runId: string, entries: [string, unknown][], secret: string, before?: () => void): Promise<string[]> {
  const flow = new Flow({ namespace: 'audit' });
  class Pack extends BackpackNode {
    override post(b: BackpackHandle) {
      before?.();
      for (const [key, value] of entries) b.pack(key, value);
      return undefined;
    }
  }
  flow.addNode(Pack, { id: 'pack' });
  const dataDir = join(dir, runId);
  await runFlow(flow, { dataDir, runId, durability: 'never', keyframeInterval: 1 });
  return filesHolding(dataDir, secret);
}

const WORDS = 'legal winner thank year wave sausage worth useful legal winner thank yellow';

describe('review s50b: run-level leaks of the s49b rules', () => {
  it('H2a a wallet mnemonic under `mnemonic` (a documented secret name) is not stored (the packed event\'s value summary)', async () => {
    expect(await packAndGrep('mnemonic', [['wallet', { chain: 'eth', mnemonic: WORDS }]], 'sausage')).toEqual([]);
  }, 20_000);

  it('H2b a seed phrase under `seedPhrase` is not stored', async () => {
    expect(await packAndGrep('seed-phrase', [['wallet', { seedPhrase: WORDS }]], 'sausage')).toEqual([]);
  }, 20_000);

  it('H2c a PKCE code verifier under `code_verifier` is not stored', async () => {
    const verifier = 'dBjftJeZ4CVPmB92K27uhbUJU1p1rwW1gFWFOEjXk';
    expect(await packAndGrep('code-verifier', [['pkce', { client_id: 'cli', code_verifier: verifier }]], verifier)).toEqual([]);
  }, 20_000);

  it('H3a an Ed25519 private JWK as KeyObject.export({ format: "jwk" }) writes it ({ crv, d, x, kty }): d is not stored', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const jwk = privateKey.export({ format: 'jwk' }) as { d: string };
    expect(await packAndGrep('jwk-ed25519', [['signer', jwk]], jwk.d)).toEqual([]);
  }, 20_000);

  it('H3b a symmetric JWK (`kty: "oct"`, secret `k`) is not stored (its value summary)', async () => {
    const k = 'GawgguFyGrWKav7AX4VKUg';
    expect(await packAndGrep('jwk-oct', [['signer', { kty: 'oct', k, alg: 'HS256' }]], k)).toEqual([]);
  }, 20_000);

  it('M1 auth "user:password" with an e-mail user (Jira/Atlassian basic auth) is not stored', async () => {
    const token = 'Tr0ub4dor-and-3-horses';
    expect(await packAndGrep('auth-email', [['request', { hostname: 'acme.atlassian.net', auth: `bot@acme.com:${token}` }]], token)).toEqual([]);
  }, 20_000);

  it('M6 a secret env variable a node sets during the run (fetched from a vault), then renewEnvironmentSecrets(), is not stored', async () => {
    const secret = 'vault-fetched-0d9c2b7e5a41';
    try {
      const leaked = await packAndGrep('env-mid-run', [['connection', `postgres connection ready (${secret})`]], secret, () => {
        process.env['AUDIT_S50B_DB_PASSWORD'] = secret;
        renewEnvironmentSecrets();
      });
      expect(leaked).toEqual([]);
    } finally {
      delete process.env['AUDIT_S50B_DB_PASSWORD'];
    }
  }, 20_000);
});
