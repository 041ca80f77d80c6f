/**
 * An HTTP `Authorization` (or `Proxy-Authorization`) header quoted in text (curl -v output, a request log, a tool
 * result, a header bag in JSON or JSON inside a string) loses its credentials whatever the scheme and its case
 * (review s31, finding 2: the named-value pass blanked the scheme, the first word, and kept the credential after it
 * for every scheme but `Bearer` and `Basic`), and in the other shapes headers take (review s33, finding 6).
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { REDACTED, Redactor } from '../../src/redact/index.js';
import { filesHolding } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

const DRF = '9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b'; // Django REST framework's TokenAuthentication, as its docs show it
const OKTA = '00QCjAl4MlV-WPXM-AbCdEfGhIjKlMnOpQrStUvWx'; // an Okta API token (SSWS scheme)
const ELASTIC = 'VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw'; // an Elasticsearch ApiKey
const LOWER = 'abcdefghij0123456789abcdefghij'; // a bearer token, its scheme written in lower case
const DIGEST = '6629fae49393a05397450978507c4ef1';

const redactor = new Redactor();

describe('Authorization headers in text', () => {
  it.each([
    ['Token (DRF, GitHub)', `> GET /api/items HTTP/1.1\n> Authorization: Token ${DRF}\n> Accept: */*`, DRF],
    ['SSWS (Okta)', `> Authorization: SSWS ${OKTA}\n`, OKTA],
    ['ApiKey (Elasticsearch), the name in lower case', `authorization: ApiKey ${ELASTIC}`, ELASTIC],
    ['bearer in lower case', `Authorization: bearer ${LOWER}`, LOWER],
    ['Proxy-Authorization', `Proxy-Authorization: Token ${DRF}`, DRF],
    ['as CGI names it', `HTTP_AUTHORIZATION=Token ${DRF}`, DRF],
    ['Digest auth-params', `Authorization: Digest username="Mufasa", realm="http-auth@example.org", response="${DIGEST}"`, DIGEST],
    ['in a JSON string', JSON.stringify({ headers: `Authorization: Token ${DRF}` }), DRF],
    ['a header bag in JSON', JSON.stringify({ Authorization: `ApiKey ${ELASTIC}` }), ELASTIC],
    ['Digest in JSON inside a string', JSON.stringify(JSON.stringify({ h: `Authorization: Digest username="a", response="${DIGEST}"` })), DIGEST],
  ])('%s: the credentials are replaced, the rest kept', (_name, text, secret) => {
    const out = redactor.redactText(text);
    expect(out).not.toContain(secret);
    expect(out).toContain(REDACTED);
    expect(out.toLowerCase()).toContain('authorization');
  });

  it.each([
    ['[name, value] pairs', [['authorization', `Token ${DRF}`]]],
    ["a flat list of names and values (Node's rawHeaders)", { rawHeaders: ['Host', 'api.example.com', 'Authorization', `Token ${DRF}`] }],
    ['the same list as JSON text, in lower case', JSON.stringify(['host', 'api.example.com', 'authorization', `token ${DRF}`])],
    ['a Python list of tuples (ASGI headers)', `[(b'host', b'api.example.com'), (b'authorization', b'Token ${DRF}')]`],
    ['a credential holding a colon', `Authorization: Token abc:${DRF}`],
    ['a quoted credential', `Authorization: Token "${DRF}"`],
  ])('%s: the credential is not kept (review s33, finding 6)', (_name, value) => {
    expect(JSON.stringify(redactor.redact(value).value)).not.toContain(DRF);
  });

  it('prose and code about authorization keep their words: only a credential (a digit and a letter, not a date; or 24 characters) is blanked', () => {
    const out = redactor.redactText('Prior authorization: required before surgery; insurance authorization = pending approval today');
    expect(out).toContain('before surgery');
    expect(out).toContain('approval today');
    // (The first word after the name is the named-value pass's, as for any secret-named field: not asserted.)
    for (const [text, word] of [
      ['Prior authorization: submitted 03/14/2024 to Aetna, approved two days later.', '03/14/2024'],
      ['const authorization = await fetchToken(user1);', 'fetchToken(user1)'],
      ['authorization: expires 2025-12-31T00:00:00Z', '2025-12-31T00:00:00Z'],
      // Dates of any length (review s35, finding 3): `Date#toISOString()`, offsets, day-month-year.
      ['authorization: expires 2025-12-31T00:00:00.000Z', '2025-12-31T00:00:00.000Z'],
      ['authorization: expires 2025-12-31T00:00:00+00:00', '2025-12-31T00:00:00+00:00'],
      ['Prior authorization: approved 14-Mar-2024 by Aetna', '14-Mar-2024'],
    ]) {
      expect(redactor.redactText(text!), text).toContain(word);
    }
  });

  it('a list keeps the label after "Authorization", and loses a credential there, with a scheme or without (review s34, findings 5 and 7)', () => {
    const row = ['Patient', 'Authorization', 'Date of service', 'Amount billed'];
    expect(redactor.redact({ row }).value.row).toEqual(row);
    expect(redactor.redact(['Authorization', '2025-12-31T00:00:00.000Z']).value).toEqual(['Authorization', '2025-12-31T00:00:00.000Z']);
    expect(redactor.redact(['authorization', 'billing']).value).toEqual(['authorization', 'billing']);
    const KEY = '7f3a9c2e5b8d1f4a6c0e9b2d5f8a1c3e';
    expect(JSON.stringify(redactor.redact({ rawHeaders: ['Host', 'api.example.com', 'Authorization', KEY] }).value)).not.toContain(KEY);
    expect(JSON.stringify(redactor.redact({ headers: { Authorization: KEY } }).value)).not.toContain(KEY);
  });

  it('a header name right after another is not taken for a scheme: the credentials after the second are blanked (found by the placement property)', () => {
    const credential = '*-#*--?-#*#*---#*-*-*#?0';
    expect(redactor.redactText(`Authorization: authorization :a7+]*!* ${credential}_`)).not.toContain(credential.slice(0, 8));
    expect(redactor.redactText(`Authorization: Authorization: Token ${DRF}`)).not.toContain(DRF.slice(0, 8));
  });

  it('credentials starting with = or : are blanked too (the rule above refuses only a header name as the scheme; review s39)', () => {
    const secret = '9f8e7d6c5b4a39281706f5e4d3c2b1a0';
    for (const text of [`Authorization: Bearer =${secret}`, `Authorization: Basic :${secret}`, `Authorization: Bearer "=${secret}"`, `Authorization: Bearer ':${secret}'`]) {
      expect(JSON.stringify(redactor.redact({ log: text }).value), text).not.toContain(secret);
    }
  });

  it('the lines around a header are kept', () => {
    expect(redactor.redactText(`> Authorization: Token ${DRF}\n> Accept: */*`)).toBe(`> Authorization: ${REDACTED} ${REDACTED}\n> Accept: */*`);
  });

  it('a packed trace: the credential is on no file of the run', async () => {
    class Pack extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('httpTrace', `> Authorization: SSWS ${OKTA}\n> Proxy-Authorization: Token ${DRF}`);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Pack, { id: 'pack' });
    const dataDir = makeTempDir('bf-authorization-', 'test');
    await runFlow(flow, { dataDir, runId: 'r1', keyframeInterval: 1 });
    expect([...filesHolding(dataDir, OKTA), ...filesHolding(dataDir, DRF)]).toEqual([]);
  });
});
