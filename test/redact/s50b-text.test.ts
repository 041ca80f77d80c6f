/**
 * Review s50b: the s49b text rules (inspect tags and bytes, listed headers, XML elements, new secret names) and the
 * walk rules (JWK, auth, rawHeaders) on inputs a user stores. Each test asserts the correct behaviour and fails on
 * the code under review.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REDACTED, redactorFor } from '../../src/redact/index.js';

const r = redactorFor();
const S = 'Zq7wXk2mPv9rLt4s';


describe('review s50b (HIGH): regressions and leaks of the s49b text rules', () => {
  it('H4 (regression) a capitalised secret followed by " {" or " [" is still replaced (the INSPECT_TAG lookahead skips it)', () => {
    // Before s49b both were `[REDACTED] …`; now the value is taken for an inspect tag and left, and the bracket after it blanked.
    expect(r.redactText('password: Hunter22 {attempt: 1}')).toBe(`password: ${REDACTED} {attempt: 1}`);
    expect(r.redactText('password=Summer2024 [staging]')).toBe(`password=${REDACTED} [staging]`);
    // The catalogue's pattern has the `i` flag, so its INSPECT_TAG lookahead takes any word: a name only it knows loses the rule in lower case too.
    expect(r.redactText('pwd=hunter22 [prod]')).toBe(`pwd=${REDACTED} [prod]`);
  });

  it('H2d the new names mnemonic / seed phrase / recovery phrase / code verifier are secret names in text too', () => {
    const words = 'legal winner thank year wave sausage worth useful';
    for (const text of [
      `{mnemonic: "${words}"}`,
      `{"seedPhrase":"${words}"}`,
      `recovery_phrase: "${words}"`,
      `code_verifier=dBjftJeZ4CVPmB92K27uhbUJU1p1rwW1gFWFOEjXk&client_id=app`,
    ]) {
      const out = r.redactText(text);
      expect(out, text).toContain(REDACTED);
      expect(out, text).not.toMatch(/sausage|dBjftJeZ4CVPmB92/);
    }
  });

  it('H3c a JWK as JSON text or util.inspect text (a string field, an env var read as JSON, an error message) loses its d / k', () => {
    const d = 'Hndv7ZZjs_ke8o9zXYo3iq-Yr8SewI5vrqd0pAvEPqg';
    expect(r.redactText(JSON.stringify({ kty: 'EC', crv: 'P-256', d }))).not.toContain(d);
    expect(r.redactText(`bad key ${inspect({ kty: 'EC', crv: 'P-256', d })}`)).not.toContain(d);
    expect(r.redactText(JSON.stringify({ kty: 'oct', k: 'GawgguFyGrWKav7AX4VKUg', alg: 'HS256' }))).not.toContain('GawgguFyGrWKav7AX4VKUg');
  });
});

describe('review s50b (MEDIUM)', () => {
  it('M2b XML elements with a namespace prefix, attributes or CDATA (WS-Security UsernameToken) are redacted', () => {
    const soap = `<wsse:UsernameToken><wsse:Username>svc</wsse:Username><wsse:Password Type="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText">${S}</wsse:Password></wsse:UsernameToken>`;
    expect(r.redactText(soap)).not.toContain(S);
    expect(r.redactText(`<password encrypted="false">${S}</password>`)).not.toContain(S);
    expect(r.redactText(`<password><![CDATA[${S}]]></password>`)).not.toContain(S);
  });

  it('M1b auth "user:password" is blanked when the user is an e-mail (Atlassian basic auth), also in text', () => {
    expect(r.redact({ auth: `bot@acme.com:${S}` }).value).toEqual({ auth: REDACTED });
    expect(r.redactText(`auth: bot@acme.com:${S}`)).toBe(`auth: ${REDACTED}`);
  });

  it('M5 FALSE POSITIVE: a list of header names (CORS allowedHeaders, a logger\'s sensitive-header list) keeps the names after X-Api-Key / Cookie', () => {
    const cors = { allowedHeaders: ['Content-Type', 'X-Api-Key', 'X-Request-Id'] };
    expect(r.redact(cors).value).toEqual(cors);
    const logger = { sensitiveHeaders: ['Authorization', 'Cookie', 'X-Api-Key', 'Set-Cookie', 'X-Request-Id'] };
    expect(r.redact(logger).value).toEqual(logger);
    expect(r.redactText(`allowedHeaders: ['Content-Type', 'X-Api-Key', 'X-Request-Id']`)).toBe(`allowedHeaders: ['Content-Type', 'X-Api-Key', 'X-Request-Id']`);
  });

  it('M5b FALSE POSITIVE: an ordinary list holding the word Cookie keeps the next element', () => {
    const menu = { desserts: ['Cookie', 'Brownie', 'Muffin'] };
    expect(r.redact(menu).value).toEqual(menu);
  });
});
