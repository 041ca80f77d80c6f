/**
 * Review s51b (1): secrets in the shapes the s50b fix addressed that still reach disk. Each test packs a value in an
 * ordinary `runFlow` run (durability 'never', a keyframe at every step) and greps every byte of the data directory
 * (event log with its value summaries, keyframes, projection).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesHolding, filesUnder } from '../support/files.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-audit-s51b-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function packAndGrep(runId: string, entries: [string, unknown][], secret: string): Promise<string[]> {
  const flow = new Flow({ namespace: 'audit' });
  class Pack extends BackpackNode {
    override post(b: BackpackHandle) {
      for (const [key, value] of entries) b.pack(key, value);
      return undefined;
    }
  }
  flow.addNode(Pack, { id: 'pack' });
  const dataDir = join(dir, runId);
  await runFlow(flow, { dataDir, runId, durability: 'never', keyframeInterval: 1 });
  expect(filesUnder(dataDir).some((f) => readFileSync(f).includes('"backpack.packed"'))).toBe(true);
  return filesHolding(dataDir, secret);
}

describe('review s51b: formats that reached disk', () => {
  it('H2 util.inspect of a Map subclass under a secret name (`secrets: SecretStore(1) [Map] {…}`, an error message) is not stored', async () => {
    class SecretStore extends Map<string, string> {}
    const secret = 'Hunter2-vault-0d9c2b';
    const message = `config rejected: ${inspect({ secrets: new SecretStore([['db', secret]]) })}`;
    expect(message).toContain('SecretStore(1) [Map] {');
    expect(await packAndGrep('map-subclass', [['error', message]], secret)).toEqual([]);
  }, 20_000);

  it('H2b util.inspect of a Set subclass under a secret name (`Vault(1) [Set] {…}`) is not stored', async () => {
    class Vault extends Set<string> {}
    const secret = 'Hunter2-vault-7a41ce';
    expect(await packAndGrep('set-subclass', [['error', `bad input ${inspect({ secrets: new Vault([secret]) })}`]], secret)).toEqual([]);
  }, 20_000);

  it('H3 an XML password in CDATA holding `]` (a generated password) is not stored', async () => {
    const xml = '<settings><servers><server><id>nexus</id><username>deploy</username><password><![CDATA[Xk9]q#2vLp!7zR&w]]></password></server></servers></settings>';
    expect(await packAndGrep('cdata-bracket', [['settingsXml', xml]], 'q#2vLp')).toEqual([]);
  }, 20_000);

  it('H4 a symmetric JWK whose kty comes after k and a kid (sorted keys, as Go and jq -S write JSON): k is not stored (value summary cut before kty)', async () => {
    const k = 'Q3J5cHRvZ3JhcGhpY2FsbHlSYW5kb21LZXlCeXRlcw';
    const jwk = JSON.parse(JSON.stringify({ alg: 'HS256', k, kid: 'hmac-signing-2024-01', kty: 'oct', use: 'sig' }));
    expect(await packAndGrep('jwk-sorted', [['signer', jwk]], k)).toEqual([]);
  }, 20_000);

  it('M1 util.inspect of a circular object under a secret name (`secrets: <ref *1> {…}`) is not stored', async () => {
    const secret = 'Hunter2-circular-51b';
    const config: Record<string, unknown> = { db: secret };
    config['self'] = config;
    expect(await packAndGrep('inspect-ref', [['error', `invalid: ${inspect({ secrets: config })}`]], secret)).toEqual([]);
  }, 20_000);

  it('M2 an XML password whose CDATA sits on its own line (pretty-printed XML) is not stored', async () => {
    const xml = '<server>\n  <password>\n    <![CDATA[Xk9q#2vLp!7zR&w]]>\n  </password>\n</server>';
    expect(await packAndGrep('cdata-indented', [['settingsXml', xml]], 'Xk9q#2vLp')).toEqual([]);
  }, 20_000);

  it('M3 a .NET appSettings entry naming its value in an attribute (`<add key="StripeApiKey" value="…"/>`) is not stored', async () => {
    const secret = 'Hunter2-appsetting-51b';
    const xml = `<configuration><appSettings><add key="StripeApiKey" value="${secret}" /></appSettings></configuration>`;
    expect(await packAndGrep('appsettings', [['webConfig', xml]], secret)).toEqual([]);
  }, 20_000);

});
