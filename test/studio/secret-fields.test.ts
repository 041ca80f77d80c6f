/**
 * The Studio treats as secret what the run's log blanks: an answer whose schema marks a secret anywhere (a nullable
 * field, one reached by $ref, a list of objects, a discriminated union, a record or catchall, a tuple) is never put on
 * a command line the page shows (it was when the page looked at `properties` only).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { blankSchemaSecrets } from '../../src/redact/index.js';
import { hasSecretField } from '../../src/studio/page/schema-answer.js';

const pin = () => z.string().meta({ writeOnly: true });
const cases: [string, z.ZodType, unknown][] = [
  ['a nullable secret field', z.object({ pin: pin().nullable() }), { pin: '7733' }],
  ['a secret field by id ($ref)', z.object({ code: z.string().meta({ id: 'S39Code', format: 'password' }) }), { code: '7733' }],
  ['a list of objects with a secret field', z.object({ accounts: z.array(z.object({ name: z.string(), pin: pin() })) }), { accounts: [{ name: 'a', pin: '7733' }] }],
  ['a discriminated union', z.discriminatedUnion('kind', [z.object({ kind: z.literal('pin'), pin: pin() }), z.object({ kind: z.literal('none') })]), { kind: 'pin', pin: '7733' }],
  ['a record of secrets', z.object({ pins: z.record(z.string(), pin()) }), { pins: { door: '7733' } }],
  ['a catchall of secrets', z.object({ name: z.string() }).catchall(pin()), { name: 'a', door: '7733' }],
  ['a tuple', z.object({ pair: z.tuple([z.string(), pin()]) }), { pair: ['door', '7733'] }],
];

describe('the Studio masks what the log blanks', () => {
  for (const [what, schema, answer] of cases) {
    it(`${what}`, () => {
      const json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
      const recorder = blankSchemaSecrets(answer, json).blanked;
      expect(recorder).toBe(true);
      // Promised: the page treats the answer as holding a secret too (masked; the command reads it from a file).
      expect(hasSecretField(json)).toBe(true);
    });
  }
});
