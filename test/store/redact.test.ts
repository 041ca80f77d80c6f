import { describe, expect, it } from 'vitest';
import { REDACTED, containsSecrets, isSecretKey, redact } from '../../src/store/index.js';
import { SECRETS } from './helpers.js';

describe('redact', () => {
  it('redacts a secret held under an own __proto__ key', () => {
    const secret = `sk-${'a'.repeat(40)}`;
    const input = JSON.parse(`{"__proto__": "${secret}", "nested": {"__proto__": {"apiKey": "x"}}}`) as Record<string, unknown>;
    const { value, redacted } = redact(input);
    expect(redacted).toBe(true);
    expect(JSON.stringify(value)).not.toContain(secret);
    expect(JSON.stringify(value)).toBe(`{"__proto__":"${REDACTED}","nested":{"__proto__":{"apiKey":"${REDACTED}"}}}`);
  });

  it.each(Object.entries(SECRETS))('replaces a %s inside a nested string value', (_name, secret) => {
    const input = { a: { list: [`prefix ${secret} suffix`] } };
    const { value, redacted } = redact(input);
    expect(redacted).toBe(true);
    expect(JSON.stringify(value)).not.toContain(secret.slice(10, 30));
    expect(value.a.list[0]).toBe(`prefix ${REDACTED} suffix`);
    expect(input.a.list[0]).toContain(secret);
  });

  it('a Backpack item under a secret-named key keeps its provenance; only its value (and secret-looking metadata) is blanked', () => {
    const secret = `sk-${'b'.repeat(40)}`;
    const item = { value: 'plain secret', metadata: { sourceNodeId: 'login', sourceNamespace: 'app.login', version: 2, tags: ['auth', secret] } };
    const delta = { metadata: { sourceNodeId: 'login' }, value: { r: 'plain secret' } };
    const { value } = redact({ items: { apiKey: item }, set: { apiKey: delta }, other: { apiKey: { metadata: 'not an object', note: 'x' } } });
    expect(value.items.apiKey).toEqual({
      value: REDACTED,
      metadata: { sourceNodeId: 'login', sourceNamespace: 'app.login', version: 2, tags: ['auth', REDACTED] },
    });
    expect(value.set.apiKey).toEqual({ metadata: { sourceNodeId: 'login' }, value: { r: REDACTED } });
    expect(value.other.apiKey).toEqual({ metadata: REDACTED, note: REDACTED });
  });

  it('replaces values under secret-named keys, keeping numbers and the shape', () => {
    const { value, redacted } = redact({
      apiKey: 'plain',
      OPENAI_API_KEY: 'plain',
      password: 'hunter2',
      auth: { accessToken: 'abc', clientSecret: 'xyz' },
      Authorization: 'Basic abc',
      credentials: { user: 'me', ttl: 5 },
    });
    expect(redacted).toBe(true);
    expect(value).toEqual({
      apiKey: REDACTED,
      OPENAI_API_KEY: REDACTED,
      password: REDACTED,
      auth: { accessToken: REDACTED, clientSecret: REDACTED },
      Authorization: REDACTED,
      credentials: { user: REDACTED, ttl: 5 },
    });
  });

  it('keeps structural names that only look secret', () => {
    for (const key of ['key', 'keys', 'keywords', 'sessionKey', 'cacheKey', 'tokens', 'inputTokens', 'tokenUsage', 'maxTokens', 'monkey']) {
      expect(isSecretKey(key)).toBe(false);
    }
    for (const key of ['apiKey', 'api_key', 'x-api-key', 'privateKey', 'token', 'refresh_token', 'secret', 'PASSWORD', 'apikey']) {
      expect(isSecretKey(key)).toBe(true);
    }
  });

  it('returns the input itself when nothing is secret', () => {
    const input = { message: 'hello', nested: [{ n: 1, s: 'a plain sentence about keys and tokens' }], sessionKey: 'abc' };
    const result = redact(input);
    expect(result.redacted).toBe(false);
    expect(result.value).toBe(input);
    expect(containsSecrets(input)).toBe(false);
  });

  it('does not flag short look-alikes', () => {
    expect(redact({ s: 'sk-short', b: 'Bearer x', e: 'eyJ.eyJ.' }).redacted).toBe(false);
  });
});
