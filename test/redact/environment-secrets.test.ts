/**
 * The values of the process's secret-named environment variables are secrets wherever they appear, whatever their
 * shape (a self-hosted endpoint's key, a password a flow file pulled in with `${DB_PASSWORD}`, a key a node read from
 * the environment): a redactor takes them when it is made. Short values and other variables are left alone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { KNOWN_MIN_LENGTH, REDACTED, Redactor } from '../../src/redact/index.js';

const set: string[] = [];
function setEnv(name: string, value: string): void {
  process.env[name] = value;
  set.push(name);
}
afterEach(() => {
  for (const name of set.splice(0)) delete process.env[name];
});

describe('values of secret-named environment variables', () => {
  it('are redacted in text, values and keys, whatever their shape; short values and other variables are not', () => {
    setEnv('BPF_TEST_DB_PASSWORD', 'plain lower case words');
    setEnv('BPF_TEST_SELFHOSTED_API_KEY', 'zq4711selfhostedkeyzq');
    setEnv('BPF_TEST_SHORT_TOKEN', 'x'.repeat(KNOWN_MIN_LENGTH - 1));
    setEnv('BPF_TEST_GREETING', 'hello there friend');
    const redactor = new Redactor();
    expect(redactor.redactText('connect with plain lower case words now')).toBe(`connect with ${REDACTED} now`);
    const { value } = redactor.redact({ note: 'key=zq4711selfhostedkeyzq;', zq4711selfhostedkeyzq: 1, list: ['hello there friend', 'xxxxxxx'] });
    expect(value).toEqual({ note: `key=${REDACTED};`, [redactor.storedKey('zq4711selfhostedkeyzq')]: 1, list: ['hello there friend', 'xxxxxxx'] });
    expect(redactor.storedKey('zq4711selfhostedkeyzq')).toMatch(/^\[REDACTED\] #[0-9a-f]{12}$/);
  });

  it('a value that holds another is replaced whole (longest first)', () => {
    setEnv('BPF_TEST_OUTER_SECRET', 'abcdefgh-ijklmnop');
    setEnv('BPF_TEST_INNER_SECRET', 'abcdefgh');
    expect(new Redactor().redactText('x abcdefgh-ijklmnop y abcdefgh z')).toBe(`x ${REDACTED} y ${REDACTED} z`);
  });
});
