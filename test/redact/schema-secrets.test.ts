/**
 * blankSchemaSecrets: the parts of an answer its JSON Schema marks secret (writeOnly, format 'password') are blanked
 * wherever the schema puts them (properties, additional and pattern properties, items and prefix items, $ref, allOf /
 * anyOf / oneOf), and nothing else is touched.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { blankSchemaSecrets, isSecretSchema } from '../../src/redact/index.js';

const R = '[REDACTED]';
const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input' });
const secret = z.string().meta({ writeOnly: true });

describe('blankSchemaSecrets', () => {
  it('blanks what each construct of a schema marks, and keeps the rest as it is', () => {
    const cases: [string, unknown, unknown, unknown][] = [
      ['a whole answer', json(z.string().meta({ format: 'password' })), 'hunter2', R],
      ['a property', json(z.object({ user: z.string(), pin: secret })), { user: 'ann', pin: '7733' }, { user: 'ann', pin: R }],
      ['a number, blanked whole', json(z.object({ pin: z.number().meta({ writeOnly: true }) })), { pin: 7733 }, { pin: R }],
      ['a nested object marked whole', json(z.object({ creds: z.object({ a: z.string() }).meta({ writeOnly: true }) })), { creds: { a: 'x' } }, { creds: R }],
      ['list items', json(z.array(secret)), ['a', 'b'], [R, R]],
      ['a tuple element', json(z.tuple([z.string(), secret])), ['a', 'b'], ['a', R]],
      ['record values (additionalProperties)', json(z.record(z.string(), secret)), { x: 'a', y: 'b' }, { x: R, y: R }],
      ['a union branch (anyOf)', json(z.union([z.object({ pin: secret }), z.object({ card: z.string() })])), { pin: '1', card: 'c' }, { pin: R, card: 'c' }],
      ['an intersection (allOf)', json(z.intersection(z.object({ a: z.string() }), z.object({ pin: secret }))), { a: 'x', pin: 'y' }, { a: 'x', pin: R }],
      ['patternProperties', { type: 'object', patternProperties: { '^pin': { type: 'string', writeOnly: true } } }, { pin1: 'a', name: 'b' }, { pin1: R, name: 'b' }],
      ['nothing marked', json(z.object({ user: z.string(), note: z.string() })), { user: 'ann', note: 'hi' }, { user: 'ann', note: 'hi' }],
    ];
    for (const [what, schema, value, expected] of cases) {
      const out = blankSchemaSecrets(value, schema);
      expect(out.value, what).toEqual(expected);
      expect(out.blanked, what).toBe(JSON.stringify(expected) !== JSON.stringify(value));
    }
  });

  it('follows $ref into $defs (a schema zod writes with a reused or recursive part)', () => {
    const Pin = secret.meta({ id: 'Pin' });
    const schema = json(z.object({ first: Pin, second: Pin }));
    expect(JSON.stringify(schema)).toContain('$ref');
    expect(blankSchemaSecrets({ first: 'a', second: 'b' }, schema).value).toEqual({ first: R, second: R });
    interface Node { pin: string; next?: Node }
    const Tree: z.ZodType<Node> = z.lazy(() => z.object({ pin: secret, next: Tree.optional() }));
    expect(blankSchemaSecrets({ pin: 'a', next: { pin: 'b', next: { pin: 'c' } } }, json(Tree)).value).toEqual({ pin: R, next: { pin: R, next: { pin: R } } });
  });

  it('blanks what a $ref it cannot follow might mark, when the schema marks anything secret', () => {
    const schema = { type: 'object', properties: { a: { $ref: 'https://example.com/s.json' }, b: { type: 'string', writeOnly: true } } };
    expect(blankSchemaSecrets({ a: 'x', b: 'y' }, schema).value).toEqual({ a: R, b: R });
    expect(blankSchemaSecrets({ a: 'x' }, { type: 'object', properties: { a: { $ref: '#/nowhere' } } }).value).toEqual({ a: 'x' });
  });

  it('never touches a value outside the marked parts, and never leaves a marked string (property)', () => {
    const leaf = fc.record({ secret: fc.boolean(), text: fc.string({ minLength: 4 }).map((s) => `v-${s}`) });
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.array(leaf, { maxLength: 4 }), { maxKeys: 5 }), (fields) => {
        const schema = {
          type: 'object',
          properties: Object.fromEntries(Object.entries(fields).map(([k, items]) => [k, { type: 'array', prefixItems: items.map((l) => ({ type: 'string', ...(l.secret ? { writeOnly: true } : {}) })) }])),
        };
        const value = Object.fromEntries(Object.entries(fields).map(([k, items]) => [k, items.map((l) => l.text)]));
        const out = blankSchemaSecrets(value, schema).value as Record<string, string[]>;
        for (const [k, items] of Object.entries(fields)) {
          items.forEach((l, i) => expect(out[k]![i]).toBe(l.secret ? R : l.text));
        }
      }),
    );
  });

  it('walks a value once however many branches describe it: a recursive union nested 300 levels (review s39: 2^depth)', () => {
    interface Filter { op: 'and' | 'or'; pin?: string; args: Filter[] }
    const Filter: z.ZodType<Filter> = z.union([
      z.object({ op: z.literal('and'), pin: secret.optional(), get args() { return z.array(Filter); } }),
      z.object({ op: z.literal('or'), pin: secret.optional(), get args() { return z.array(Filter); } }),
    ]);
    const schema = json(Filter);
    let value: Filter = { op: 'and', pin: 'p-0', args: [] };
    for (let i = 1; i <= 300; i++) value = { op: i % 2 ? 'or' : 'and', pin: `p-${i}`, args: [value] };
    const started = performance.now();
    const out = blankSchemaSecrets(value, schema);
    // Linear: a few ms. The bound is far above that and far below what doubling per level costs (16 levels: 0.4 s).
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(out.blanked).toBe(true);
    expect(JSON.stringify(out.value)).not.toMatch(/p-\d/);
  });

  it('isSecretSchema is the mark the Studio masks: writeOnly or format password', () => {
    expect(isSecretSchema({ type: 'string', writeOnly: true })).toBe(true);
    expect(isSecretSchema({ type: 'string', format: 'password' })).toBe(true);
    expect(isSecretSchema({ type: 'string', format: 'email' })).toBe(false);
    expect(isSecretSchema(null)).toBe(false);
  });
});
