/**
 * Review s49b: secret formats the structural walk misses, written by an ordinary durable run to its event log,
 * keyframes and projection. Each test packs one value and greps every byte the run wrote for the secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesHolding } from '../support/files.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-audit-s49b-walk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a one-node flow that packs `value` under `key`; resolves to the files of the run that hold `secret`. */
async function packAndGrep(runId: string, key: string, value: unknown, secret: string): Promise<string[]> {
  const flow = new Flow({ namespace: 'audit' });
  class Pack extends BackpackNode {
    override post(b: BackpackHandle) {
      b.pack(key, value);
      return undefined;
    }
  }
  flow.addNode(Pack, { id: 'pack' });
  const dataDir = join(dir, runId);
  await runFlow(flow, { dataDir, runId, durability: 'never', keyframeInterval: 1 } as never);
  return filesHolding(dataDir, secret);
}

describe('review s49b: structural formats the walk misses', () => {
  it('H/M-1 Node http.request options: auth as "user:password" (the documented form of that option) is not stored', async () => {
    const password = 'Tr0ub4dor-and-3-horses';
    const leaked = await packAndGrep('node-http-auth', 'request', { hostname: 'api.example.com', path: '/v1', auth: `deploy:${password}` }, password);
    expect(leaked).toEqual([]);
  }, 20_000);

  it('M-2 a JWK private key (RFC 7517/7518: d, p, q, dp, dq, qi) is not stored', async () => {
    // An EC P-256 private JWK as crypto.subtle.exportKey('jwk', privateKey) returns it.
    const d = 'Hndv7ZZjs_ke8o9zXYo3iq-Yr8SewI5vrqd0pAvEPqg';
    const jwk = { kty: 'EC', crv: 'P-256', x: 'zCQ5BPHPCLZYgdpo1n-x_90P2Ij52d53YVwTh3ZdiMo', y: 'pDfQTUx0-OiZc5ZuKMcA7v2Q7ZPKsQwzB58bft0JTko', d, ext: true, key_ops: ['sign'] };
    const leaked = await packAndGrep('jwk', 'signer', jwk, d);
    expect(leaked).toEqual([]);
  }, 20_000);

  it('M-3 a flat header list as Node rawHeaders holds it: the value after X-Api-Key is not stored', async () => {
    const key = 'a8f5f167f44f4964e6c998dee827110c';
    const leaked = await packAndGrep('raw-headers', 'request', { rawHeaders: ['Host', 'api.example.com', 'X-Api-Key', key, 'Accept', '*/*'] }, key);
    expect(leaked).toEqual([]);
  }, 20_000);

  it('M-3b a flat header list: the session cookie after Cookie is not stored', async () => {
    const sid = 's%3AQk9xq2x7Zr0fS1b2C3d4.E5f6G7h8I9j0';
    const leaked = await packAndGrep('raw-cookie', 'request', { rawHeaders: ['Host', 'app.example.com', 'Cookie', `connect.sid=${sid}`] }, sid);
    expect(leaked).toEqual([]);
  }, 20_000);
});
