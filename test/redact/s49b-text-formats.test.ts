/**
 * Review s49b: secrets in text the text pass misses or cuts wrongly, written by a durable run whose node fails with
 * an error message holding them (run.failed / error events in events.jsonl, run.meta.json). Error messages quote
 * values in Node's util.inspect form (template literals with inspect(), assert, console-style formatting).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow } from '../../src/index.js';
import { REDACTED, redactorFor } from '../../src/redact/index.js';
import { filesHolding } from '../support/files.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-audit-s49b-text-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a one-node flow whose exec throws `message`; resolves to the files of the run that hold `secret`. */
async function failAndGrep(runId: string, message: string, secret: string): Promise<string[]> {
  const flow = new Flow({ namespace: 'audit' });
  class Fails extends BackpackNode {
    override async exec() {
      throw new Error(message);
    }
  }
  flow.addNode(Fails, { id: 'fails' });
  const dataDir = join(dir, runId);
  await expect(runFlow(flow, { dataDir, runId, durability: 'never' })).rejects.toThrow();
  return filesHolding(dataDir, secret);
}

const S = 'Zq7wXk2mPv9rLt4s';

describe('review s49b: text forms the text pass misses', () => {
  it('M-4a util.inspect of a Set under a secret-named key: the member is not stored', async () => {
    const message = `bad config ${inspect({ region: 'eu', secrets: new Set([S]) })}`;
    expect(await failAndGrep('inspect-set', message, S)).toEqual([]);
  }, 20_000);

  it('M-4a (wrong cut) redactText does not blank the word "Set(1" and leave the secret after it', () => {
    const out = redactorFor().redactText(inspect({ secrets: new Set([S]) }));
    expect(out).not.toContain(S);
    expect(out).not.toBe(`{ secrets: ${REDACTED}) { '${S}' } }`);
  });

  it('M-4b util.inspect of Object.entries (a [name, value] pair with a secret name): the value is not stored', async () => {
    const message = `unexpected settings ${inspect(Object.entries({ region: 'eu', apiKey: S }))}`;
    expect(await failAndGrep('inspect-entries', message, S)).toEqual([]);
  }, 20_000);

  it('M-4c util.inspect of rawHeaders with X-Api-Key: the value is not stored', async () => {
    const message = `request failed: ${inspect(['Host', 'api.example.com', 'X-Api-Key', S])}`;
    expect(await failAndGrep('inspect-raw', message, S)).toEqual([]);
  }, 20_000);

  it('L-5 an XML element named password (SOAP fault, settings.xml, web.config): its text is not stored', async () => {
    const message = `SOAP fault for request <auth><username>svc</username><password>${S}</password></auth>`;
    expect(await failAndGrep('xml-password', message, S)).toEqual([]);
  }, 20_000);
});
