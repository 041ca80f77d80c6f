/**
 * Audit s21 (findings 1-4): data shapes that held secrets and reached disk in clear. Plural secret names
 * (`secrets`, `passwords`, `apiKeys`, `accessTokens`), records that name their value in another field
 * (`{ name: 'OPENAI_API_KEY', value }`), credential files quoted in text (.netrc, a kubeconfig's base64 private key,
 * ~/.docker/config.json's `auth`), and a quoted passphrase whose closing quote a summary cut off. Each rule has the
 * ordinary data next to it that must be kept.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { summarizeValue } from '../../src/backpack/codec.js';
import { REDACTED, Redactor, isSecretKey, redact } from '../../src/redact/index.js';
import { trials } from '../support/soak.js';

const redactor = new Redactor();
const PW = 'hunter2passQ7x';

/** Every string in `value` (not object keys). */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

/** A name in one of the spellings keys come in: camelCase, snake_case, SCREAMING_SNAKE, kebab-case. */
function spell(words: readonly string[], style: number): string {
  if (style === 0) return words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('');
  if (style === 1) return words.join('_');
  if (style === 2) return words.join('_').toUpperCase();
  return words.join('-');
}

/** A nested value whose strings hold no secret-looking text (so only the key rule can blank them). */
const nested = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.stringMatching(/^[a-z0-9 ]{1,12}$/),
    fc.integer(),
    fc.boolean(),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('db', 'prod', 'a', 'note', 'user'), tie('value'), { maxKeys: 3 }),
  ),
})).value;

describe('finding 1: plural secret names', () => {
  const PLURALS: readonly (readonly string[])[] = [
    ['secrets'], ['passwords'], ['passphrases'], ['cookies'], ['apikeys'], ['credentials'], ['client', 'secrets'], ['db', 'passwords'],
    ['api', 'keys'], ['private', 'keys'], ['ssh', 'keys'], ['openai', 'api', 'keys'], ['access', 'tokens'], ['github', 'tokens'], ['refresh', 'tokens'],
  ];

  it('for any secret-named plural key, in any spelling, no string under it survives (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PLURALS), fc.integer({ min: 0, max: 3 }), nested, (words, style, value) => {
        const key = spell(words, style);
        const out = redact({ [key]: value, kept: 'plain' }).value as Record<string, unknown>;
        expect(out['kept']).toBe('plain');
        for (const s of strings(out[key])) expect(s, `${key}: ${JSON.stringify(value)}`).toBe(REDACTED);
        // The same in a value summary (the text of a backpack.packed event).
        const summary = summarizeValue({ [key]: value }, 10_000);
        const text = redactor.redactText(summary);
        for (const s of strings(value)) if (s.length >= 4 && !summary.replace(JSON.stringify(s), '').includes(s)) expect(text, summary).not.toContain(JSON.stringify(s));
      }),
      { numRuns: trials(300, 3000) },
    );
  });

  it('keeps the counts and settings of LLM tokens, and structural lists of keys', () => {
    const counters = ['maxTokens', 'inputTokens', 'outputTokens', 'totalTokens', 'promptTokens', 'completionTokens', 'reasoningTokens', 'cachedTokens',
      'cachedInputTokens', 'maxOutputTokens', 'max_new_tokens', 'max_completion_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens',
      'cacheReadTokens', 'noCacheTokens', 'textTokens', 'accepted_prediction_tokens', 'budget_tokens', 'x-ratelimit-remaining-tokens', 'stopTokens', 'special_tokens', 'tokens'];
    const structural = ['keys', 'sortKeys', 'cacheKeys', 'sessionKeys', 'primaryKeys', 'partitionKeys', 'objectKeys', 'requiredKeys', 'allowedKeys', 'omitKeys', 'headerKeys', 'translationKeys', 'hotKeys', 'publicKeys', 'ParameterKey'];
    for (const name of [...counters, ...structural]) expect(isSecretKey(name), name).toBe(false);
    const usage = { inputTokens: 12, outputTokens: 40, totalTokens: 52, stopTokens: ['</s>'], sortKeys: ['name', 'date'], requiredKeys: ['id'] };
    expect(redact(usage).redacted).toBe(false);
    const summary = summarizeValue(usage);
    expect(redactor.redactText(summary)).toBe(summary);
  });

  it('blanks the values in text too: a .env line, JSON, a YAML flow list', () => {
    expect(redactor.redactText(`API_KEYS=${PW}`)).toBe(`API_KEYS=${REDACTED}`);
    expect(redactor.redactText(`{"secrets":{"db":"${PW}","port":5432}}`)).toBe(`{"secrets":{"db":"${REDACTED}","port":5432}}`);
    expect(redactor.redactText(`passwords: [${PW}, other, 3]`)).toBe(`passwords: [${REDACTED}, ${REDACTED}, 3]`);
    expect(redactor.redactText(`{credentials: {user: "bob", pass: "${PW}"}}`)).toBe(`{credentials: {user: "${REDACTED}", pass: "${REDACTED}"}}`);
    expect(redactor.redactText('{tokens: [1, 2], notes: ["a", "b"]}')).toBe('{tokens: [1, 2], notes: ["a", "b"]}');
  });
});

describe('finding 2: records that name their value in another field', () => {
  const SECRET_NAMES = ['OPENAI_API_KEY', 'DB_PASSWORD', 'X-Api-Key', 'Authorization', 'Cookie', 'clientSecret', 'DbPassword'];
  const PLAIN_NAMES = ['USER', 'PORT', 'Content-Type', 'Name', 'region', 'InstanceType'];
  const SHAPES: readonly [string, string][] = [['name', 'value'], ['Name', 'Value'], ['Key', 'Value'], ['ParameterKey', 'ParameterValue'], ['header', 'value'], ['key', 'value']];

  it('blanks the value of a record whose name field holds a secret name, and keeps any other (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SHAPES), fc.constantFrom(...SECRET_NAMES), fc.constantFrom(...PLAIN_NAMES), nested, (shape, secretName, plainName, value) => {
        const [nameField, valueField] = shape;
        const input = { list: [{ [nameField]: secretName, [valueField]: value }, { [nameField]: plainName, [valueField]: 'kept value' }] };
        const out = redact(input).value.list as Record<string, unknown>[];
        expect(out[0]![nameField]).toBe(secretName);
        for (const s of strings(out[0]![valueField])) expect(s).toBe(REDACTED);
        expect(out[1]).toEqual(input.list[1]);
      }),
      { numRuns: trials(200, 2000) },
    );
  });

  it('is narrow: a record without such a pair, or with a name field of another kind, is walked as any other', () => {
    const input = {
      field: { name: 'token', description: 'the token to send', type: 'string' },
      mismatched: { name: 'DB_PASSWORD', Value: 'kept one' },
      tag: { Key: 'Name', Value: 'web-1' },
      param: { ParameterKey: 'InstanceType', ParameterValue: 't3.micro' },
    };
    const result = redact(input);
    expect(result.redacted).toBe(false);
    expect(result.value).toBe(input);
  });

  it('blanks the value in text: a value summary, JSON, a HAR header list, YAML env entries', () => {
    expect(redactor.redactText(summarizeValue({ env: [{ name: 'DB_PASSWORD', value: PW }, { name: 'USER', value: 'bob' }] }, 1000))).toBe(
      `{env: [{name: "DB_PASSWORD", value: "${REDACTED}"}, {name: "USER", value: "bob"}]}`,
    );
    expect(redactor.redactText(`{"headers":[{"name":"X-Api-Key","value":"${PW}"},{"name":"Accept","value":"json"}]}`)).toBe(
      `{"headers":[{"name":"X-Api-Key","value":"${REDACTED}"},{"name":"Accept","value":"json"}]}`,
    );
    expect(redactor.redactText(`env:\n- name: OPENAI_API_KEY\n  value: ${PW}\n- name: PORT\n  value: "8080"\n`)).toBe(
      `env:\n- name: OPENAI_API_KEY\n  value: ${REDACTED}\n- name: PORT\n  value: "8080"\n`,
    );
    const plain = '{"name":"Content-Type","value":"application/json"}';
    expect(redactor.redactText(plain)).toBe(plain);
  });
});

describe('finding 3: credential files quoted in text', () => {
  const KEY_PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzXk2b9QxLmT4\n-----END RSA PRIVATE KEY-----\n';
  const CERT_PEM = '-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq\n-----END CERTIFICATE-----\n';

  it('.netrc: the password after `machine <host> login <user>`, one line or several', () => {
    expect(redactor.redactText(`machine api.example.com login bob password hunter2\n`)).toBe(`machine api.example.com login bob password ${REDACTED}\n`);
    expect(redactor.redactText('machine h.io\n  login x\n  account y\n  password "two words"\nmachine g.io login z password p9')).toBe(
      `machine h.io\n  login x\n  account y\n  password ${REDACTED}\nmachine g.io login z password ${REDACTED}`,
    );
  });

  it('.netrc: a `default` entry, and a password written before the login', () => {
    expect(redactor.redactText('default login anonymous password me@example.com\n')).toBe(`default login anonymous password ${REDACTED}\n`);
    expect(redactor.redactText('machine h.io password hunter2 login bob\n')).toBe(`machine h.io password ${REDACTED} login bob\n`);
    expect(redactor.redactText('default password p9 port 21')).toBe(`default password ${REDACTED} port 21`);
  });

  it('.netrc: prose with the words machine, login and password is kept', () => {
    for (const prose of [
      'the machine learning password is secret, enter your login and password',
      'log in to the machine with your login and password before noon',
      'machine translation: login password reset flow is broken',
      'the default password is printed on the label; change it at first login',
      'by default password prompts time out, see login docs',
      'machine learning password strength models',
    ]) {
      expect(redactor.redactText(prose)).toBe(prose);
    }
  });

  it('a private key in base64 (kubeconfig client-key-data, a Kubernetes secret), on one line or wrapped', () => {
    const data = Buffer.from(KEY_PEM).toString('base64');
    expect(redactor.redactText(`users:\n- name: admin\n  user:\n    client-key-data: ${data}\n    token: x\n`)).toBe(
      `users:\n- name: admin\n  user:\n    client-key-data: ${REDACTED}\n    token: ${REDACTED}\n`,
    );
    const wrapped = data.match(/.{1,40}/g)!.join('\n');
    expect(redactor.redactText(`tls.key: |\n${wrapped}\nnext: 1`)).not.toMatch(/[A-Za-z0-9+/]{16}/);
    for (const type of ['', 'EC ', 'DSA ', 'OPENSSH ', 'ENCRYPTED ', 'PGP ']) {
      const encoded = Buffer.from(`-----BEGIN ${type}PRIVATE KEY-----\nAAAA\n`).toString('base64');
      expect(redactor.redactText(`{"data":{"key":"${encoded}"}}`), type).toBe(`{"data":{"key":"${REDACTED}"}}`);
    }
  });

  it('keeps a certificate in base64 and ordinary base64', () => {
    const text = `certificate-authority-data: ${Buffer.from(CERT_PEM).toString('base64')}\nimage: ${Buffer.from('hello world, this is a plain text blob of some length').toString('base64')}`;
    expect(redactor.redactText(text)).toBe(text);
  });

  it('~/.docker/config.json: a base64 user:password under auth, in the object and in its text', () => {
    const auth = Buffer.from(`bob:${PW}`).toString('base64');
    const config = { auths: { 'https://index.docker.io/v1/': { auth }, 'ghcr.io': { auth: Buffer.from('x:y').toString('base64') } } };
    expect(redact(config).value).toEqual({ auths: { 'https://index.docker.io/v1/': { auth: REDACTED }, 'ghcr.io': { auth: REDACTED } } });
    expect(redactor.redactText(JSON.stringify(config))).toBe(JSON.stringify({ auths: { 'https://index.docker.io/v1/': { auth: REDACTED }, 'ghcr.io': { auth: REDACTED } } }));
    expect(redactor.redactText(`auth: ${auth}`)).toBe(`auth: ${REDACTED}`);
  });

  it('keeps auth settings and base64 under auth that is no user:password', () => {
    const settings = { auth: 'none', a: { auth: 'true' }, b: { auth: 'oauth2' }, c: { auth: 'basic' }, d: { auth: Buffer.from('no colon here').toString('base64') }, e: { auth: { type: 'oauth' } } };
    expect(redact(settings).redacted).toBe(false);
    const text = JSON.stringify(settings);
    expect(redactor.redactText(text)).toBe(text);
    expect(redactor.redactText('auth: none, author: Ym9iOnNlY3JldA==')).toBe('auth: none, author: Ym9iOnNlY3JldA==');
  });

  it('any base64 user:password under auth is blanked; base64 of text without a colon is only checked as text (property)', () => {
    const part = fc.stringMatching(/^[!-9;-~]{1,20}$/);
    fc.assert(
      fc.property(part, part, fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !s.includes(':') && ![...s].some((c) => c.charCodeAt(0) < 0x20)), (user, pass, plain) => {
        const cred = Buffer.from(`${user}:${pass}`).toString('base64');
        expect(redact({ auth: cred }).value).toEqual({ auth: REDACTED });
        expect(redactor.redactText(`{"auth":"${cred}"}`)).toBe(`{"auth":"${REDACTED}"}`);
        // Any other base64 under auth is text like any other (the rules for all text still apply to it).
        const other = Buffer.from(plain, 'latin1').toString('base64');
        expect(redact({ auth: other }).value.auth).toBe(redactor.redactText(other));
      }),
      { numRuns: trials(200, 2000) },
    );
  });
});

describe('finding 4: a quoted value cut short by a summary', () => {
  it('a passphrase under a secret-named key is blanked whole when the summary cut its closing quote', () => {
    const summary = summarizeValue({ user: 'bob', note: 'x'.repeat(30), password: 'correct horse battery staple' });
    expect(summary.endsWith('…')).toBe(true);
    const out = redactor.redactText(summary);
    expect(out).toBe(`{user: "bob", note: "${'x'.repeat(30)}", password: "${REDACTED}…`);
    expect(redactor.redactText('{\\"pw\\":\\"correct horse …')).toBe(`{\\"pw\\":\\"${REDACTED}…`);
    expect(redactor.redactText("{'secret': 'correct horse …")).toBe(`{'secret': '${REDACTED}…`);
  });

  it('for any passphrase, wherever the cut falls, no word after the first survives (property)', () => {
    const wordArb = fc.stringMatching(/^[a-z]{5,9}$/);
    fc.assert(
      fc.property(fc.array(wordArb, { minLength: 2, maxLength: 6 }), fc.integer({ min: 0, max: 40 }), (words, pad) => {
        const summary = summarizeValue({ note: 'n'.repeat(pad), passphrase: words.join(' ') });
        const out = redactor.redactText(summary);
        for (const w of words) if (!'note passphrase'.includes(w) && !'n'.repeat(pad).includes(w)) expect(out, summary).not.toContain(w);
      }),
      { numRuns: trials(200, 2000) },
    );
  });

  it('keeps a cut value under another key, and a closed quote ends the value as before', () => {
    const summary = summarizeValue({ user: 'bob', note: 'correct horse battery staple and many more words to cut' });
    expect(redactor.redactText(summary)).toBe(summary);
    expect(redactor.redactText('password: "a b" and more text…')).toBe(`password: "${REDACTED}" and more text…`);
  });
});
