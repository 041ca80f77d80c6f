import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { REDACTED, Redactor, containsSecrets, isSecretKey, redact } from '../../src/redact/index.js';
import { SECRETS } from '../store/helpers.js';

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
    const item = { value: 'plain secret', metadata: { timestamp: 1, version: 2, tags: ['auth', secret], sourceNodeId: 'login', sourceNamespace: 'app.login' } };
    const delta = { metadata: { timestamp: 1, version: 2, tags: [], sourceNodeId: 'login' }, value: { r: 'plain secret' } };
    // Not items: a metadata that is not an item's (a Kubernetes Secret's own), fields an item does not have.
    const k8s = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', annotations: { note: 'cGFzc3dvcmQ=' } }, data: { password: 'cGFzc3dvcmQ=' } };
    const { value } = redact({ items: { apiKey: item }, set: { apiKey: delta }, other: { apiKey: { metadata: 'not an object', note: 'x' } }, secret: k8s });
    expect(value.items.apiKey).toEqual({
      value: REDACTED,
      metadata: { timestamp: 1, version: 2, tags: ['auth', REDACTED], sourceNodeId: 'login', sourceNamespace: 'app.login' },
    });
    expect(value.set.apiKey).toEqual({ metadata: { timestamp: 1, version: 2, tags: [], sourceNodeId: 'login' }, value: { r: REDACTED } });
    expect(value.other.apiKey).toEqual({ metadata: REDACTED, note: REDACTED });
    expect(value.secret).toEqual({ apiVersion: REDACTED, kind: REDACTED, metadata: { name: REDACTED, annotations: { note: REDACTED } }, data: { password: REDACTED } });
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

  it('replaces secret-looking object keys, Map keys and Set members, and blanks values under secret-named Map keys', () => {
    const secret = 'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi';
    const input = {
      [secret]: 1,
      [`${secret} #2`]: 2,
      map: new Map<unknown, unknown>([[secret, 'v'], ['password', 'hunter2'], ['plain', 'ok']]),
      set: new Set([secret, 'ok']),
      pairs: [['apiKey', 'plain-secret'], ['name', 'ok']],
    };
    const { value, redacted } = redact(input);
    expect(redacted).toBe(true);
    // A key holding a secret is stored as its redacted text and a keyed digest of the key (the same key, the same
    // name, wherever it sits), never the key itself.
    const names = Object.keys(value);
    expect(names.slice(2)).toEqual(['map', 'set', 'pairs']);
    expect(names[0]).toMatch(/^\[REDACTED\] #[0-9a-f]{12}$/);
    expect(names[1]).toMatch(/^\[REDACTED\] #2 #[0-9a-f]{12}$/);
    expect(redact({ other: 0, [secret]: 1 }).value).toEqual({ other: 0, [names[0]!]: 1 });
    expect([...value.map]).toEqual([[REDACTED, 'v'], ['password', REDACTED], ['plain', 'ok']]);
    expect([...value.set]).toEqual([REDACTED, 'ok']);
    expect(value.pairs).toEqual([['apiKey', REDACTED], ['name', 'ok']]);
    expect(input.map.get('password')).toBe('hunter2');
  });

  it('blanks the summary of an entry whose key field names a secret (the backpack.packed event)', () => {
    const { value } = redact({ key: 'openaiApiKey', version: 1, valueSummary: '"plain"' });
    expect(value).toEqual({ key: 'openaiApiKey', version: 1, valueSummary: REDACTED });
    expect(redact({ key: 'topic', valueSummary: '"tides"' }).redacted).toBe(false);
  });

  it('replaces the start of a secret cut short by a summary', () => {
    expect(redact(`"${'x'.repeat(60)} ghp_R8kL2m…`).value).toBe(`"${'x'.repeat(60)} ${REDACTED}…`);
    expect(redact(`"${'x'.repeat(60)} wJalrXUt…`).value).toBe(`"${'x'.repeat(60)} ${REDACTED}…`);
    expect(redact(`"${'x'.repeat(60)} Hello…`).redacted).toBe(false);
  });

  it('keeps the user name of a URL and the name of an assignment readable', () => {
    expect(redact('postgres://admin:Pg5ecret@db/app').value).toBe(`postgres://admin:${REDACTED}@db/app`);
    expect(redact('AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\nDB_PASSWORD="hunter2"').value).toBe(
      `AWS_SECRET_ACCESS_KEY=${REDACTED}\nDB_PASSWORD="${REDACTED}"`,
    );
  });

  it('takes patterns and secret key names of the user', () => {
    const redactor = new Redactor({ patterns: [/\bACME-[0-9]{6}\b/], secretKeys: ['pin'] });
    expect(redactor.redact({ note: 'id ACME-123456 here', userPin: '1234', PIN: 'x' }).value).toEqual({ note: `id ${REDACTED} here`, userPin: REDACTED, PIN: REDACTED });
    expect(redact({ note: 'id ACME-123456 here', userPin: '1234' }).redacted).toBe(false);
    expect(() => new Redactor({ patterns: [/x*/] })).toThrow(/matches the empty string/);
    expect(() => new Redactor({ secretKeys: ['--'] })).toThrow(/secretKeys/);
  });

  it('containsSecrets answers as redact does, for secrets in values, keys, Map keys, Set members, pairs and under secret-named keys', () => {
    const secret = fc.constantFrom('ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi', 'postgres://admin:Pg5ecret@db/app', 'sk-proj-Q7vLx2Rk9TmWp4ZsN8bYc3HjD6fGa1Ke');
    const text = fc.oneof(fc.string({ maxLength: 20 }), secret);
    const key = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('password', 'apiKey', 'key', 'valueSummary'), secret);
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.integer(),
        fc.dictionary(key, tie('value'), { maxKeys: 4 }),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.array(fc.tuple(key, tie('value')), { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(key, tie('value')), { maxLength: 3 }).map((entries) => new Map(entries)),
        fc.array(text, { maxLength: 3 }).map((members) => new Set(members)),
      ),
    }));
    const redactor = new Redactor();
    fc.assert(
      fc.property(value, (input) => {
        const expected = redactor.redact(input).redacted;
        expect(redactor.containsSecrets(input)).toBe(expected);
        // An early answer leaves the redactor as it was: redact still returns the whole redacted copy.
        expect(redactor.redact(input).redacted).toBe(expected);
      }),
      { numRuns: 300 },
    );
    const deep: unknown[] = [];
    let inner = deep;
    for (let i = 0; i < 6000; i++) inner.push((inner = []));
    expect(() => redactor.containsSecrets(deep)).toThrow(RangeError);
    expect(redactor.containsSecrets({ s: 'ok' })).toBe(false);
  });

  it('refuses a value nested too deep to check rather than writing it unchecked', () => {
    let deep: unknown = 'sk-proj-Q7vLx2Rk9TmWp4ZsN8bYc3HjD6fGa1Ke';
    for (let i = 0; i < 6000; i++) deep = [deep];
    expect(() => redact(deep)).toThrow(RangeError);
  });
});
