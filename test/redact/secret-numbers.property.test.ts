/**
 * A number right under a secret-named key is the secret itself (a numeric password, a PIN, a key of the user's own
 * `secretKeys`): it is replaced as a string is, wherever the key is (an object, a Map, a `[key, value]` pair, a
 * Backpack item or a state delta under the key, its replacement `{ r: n }` in a delta or a patch, a `{ name, value }`
 * record, an object whose JSON form is a number); the numbers of a structure under such a key (a port, a TTL) are kept
 * (reviews s31, s32 and s35: the number was written to keyframes and deltas in clear).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor } from '../../src/redact/index.js';
import { trials } from '../support/soak.js';

const redactor = new Redactor({ secretKeys: ['pin', 'ssn'] });
const SECRET_KEYS = ['password', 'apiKey', 'DB_PASS', 'pin', 'ssn', 'client_secret', 'OPENAI_API_KEY'];
const PLAIN_KEYS = ['port', 'count', 'ttl', 'id', 'version'];

/** Places `n` right under secret-named key `key` in one of the forms the redactor knows. */
const placements: [string, (key: string, n: number) => unknown][] = [
  ['object field', (key, n) => ({ [key]: n })],
  ['nested object field', (key, n) => ({ config: { db: { [key]: n, host: 'db' } } })],
  ['Map entry', (key, n) => new Map<string, unknown>([[key, n]])],
  ['[key, value] pair', (key, n) => ({ env: [[key, n]] })],
  ['Backpack item', (key, n) => ({ items: { [key]: { value: n, metadata: { timestamp: 1, version: 1, tags: [], sourceNodeId: 'a' } } } })],
  ['name/value record', (key, n) => ({ env: [{ name: key, value: n }] })],
  ['state delta entry', (key, n) => ({ set: { [key]: { metadata: { timestamp: 1, version: 2, tags: [], sourceNodeId: 'a' }, value: { r: n } } } })],
  ['patch of a nested key', (key, n) => ({ set: { customer: { metadata: { timestamp: 1, version: 2, tags: [], sourceNodeId: 'a' }, value: { o: { [key]: { r: n } } } } } })],
  ['field inside a secret-named structure', (key, n) => ({ credentials: { user: 'ann', [key]: n } })],
  ['pair inside a secret-named structure', (key, n) => ({ secrets: [[key, n]] })],
  ['Map entry inside a secret-named structure', (key, n) => ({ secrets: new Map<string, unknown>([[key, n]]) })],
  ['BigInt-sized number in an encoded Map', (key, n) => ({ config: { $bp: 'map', v: [[key, n]] } })],
  ['object written as a number (toJSON)', (key, n) => ({ [key]: { toJSON: () => n } })],
  ['boxed number', (key, n) => ({ [key]: new Number(n) })],
  ["Backpack item's value in a value summary", (key, n) => ({ key, valueSummary: `{value: ${n}, metadata: {version: 1}}` })],
];

function numbersIn(value: unknown, out: number[] = []): number[] {
  if (typeof value === 'number') out.push(value);
  else if (value instanceof Map) {
    for (const [k, v] of value) {
      numbersIn(k, out);
      numbersIn(v, out);
    }
  }
  else if (Array.isArray(value)) for (const v of value) numbersIn(v, out);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) numbersIn(v, out);
  return out;
}

describe('numbers under secret-named keys', () => {
  it('a number right under a secret-named key never survives redaction, in any placement', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SECRET_KEYS),
        fc.constantFrom(...placements),
        fc.oneof(fc.integer({ min: 1000, max: Number.MAX_SAFE_INTEGER }), fc.double({ min: 1000, max: 1e12, noNaN: true })),
        (key, [, place], n) => {
          const { value, redacted } = redactor.redact(place(key, n));
          expect(redacted).toBe(true);
          expect(numbersIn(value)).not.toContain(n);
          const text = JSON.stringify(value, (_k, v: unknown) => (v instanceof Map ? [...v] : v));
          expect(text).not.toContain(String(n));
          expect(text).toContain(REDACTED);
        },
      ),
      { numRuns: trials(200, 2000) },
    );
  });

  it('numbers under plain keys, and inside a structure under a secret-named key, are kept', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PLAIN_KEYS), fc.integer(), (key, n) => {
        expect(redactor.redact({ [key]: n }).value).toEqual({ [key]: n });
        expect(redactor.redact({ credentials: { user: 'me', [key]: n } }).value).toEqual({ credentials: { user: REDACTED, [key]: n } });
      }),
      { numRuns: trials(100, 1000) },
    );
  });
});
