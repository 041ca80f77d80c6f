/**
 * The answer form's logic: for any object schema of the supported shapes, the fields filled as a person would fill
 * them make exactly the intended answer, which the server's check (the recorded JSON Schema rebuilt by zod) accepts;
 * an empty required field is a problem at its own JSON pointer; server problems land at the field they name.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildAnswer, hasSecretField, initialRaws, isSecretField, keyOfPointer, kindOf, problemsByField, type FieldProblem, type Raw } from '../../src/studio/page/schema-answer.js';
import { answerProblems } from '../../src/studio/steer.js';
import { trials } from '../support/soak.js';

type Shape = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'strings' | 'integers';

const SCHEMAS: Record<Shape, Record<string, unknown>> = {
  string: { type: 'string' },
  number: { type: 'number' },
  integer: { type: 'integer' },
  boolean: { type: 'boolean' },
  enum: { type: 'string', enum: ['low', 'normal', 'high'] },
  strings: { type: 'array', items: { type: 'string' } },
  integers: { type: 'array', items: { type: 'integer' } },
};

/** A value a person can enter for `shape` (optional fields: one that is not left empty). */
function valueOf(shape: Shape, required: boolean): fc.Arbitrary<unknown> {
  const finite = fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => (Object.is(x, -0) ? 0 : x));
  switch (shape) {
    case 'string':
      return fc.string({ minLength: required ? 0 : 1 });
    case 'number':
      return finite;
    case 'integer':
      return fc.integer();
    case 'boolean':
      return fc.boolean();
    case 'enum':
      return fc.constantFrom('low', 'normal', 'high');
    case 'strings':
      return fc.array(fc.string({ minLength: 1 }), { minLength: required ? 0 : 1, maxLength: 4 });
    case 'integers':
      return fc.array(fc.integer(), { minLength: required ? 0 : 1, maxLength: 4 });
  }
}

/** What the field of `shape` holds once `value` is entered. */
function rawOf(shape: Shape, value: unknown): Raw {
  if (shape === 'boolean') return value as boolean;
  if (shape === 'strings' || shape === 'integers') return (value as unknown[]).map(String);
  return String(value);
}

const KEYS = ['approved', 'note', 'a/b', 'c~d', 'copies', 'tags', 'x y'];
const field = fc.record({ shape: fc.constantFrom(...(Object.keys(SCHEMAS) as Shape[])), required: fc.boolean(), present: fc.boolean() });
const form = fc.uniqueArray(fc.tuple(fc.constantFrom(...KEYS), field), { minLength: 1, maxLength: 6, selector: ([k]) => k }).chain((fields) =>
  fc.tuple(fc.constant(fields), fc.tuple(...fields.map(([, f]) => valueOf(f.shape, f.required)))),
);

const pointer = (key: string): string => `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;

describe('the answer form', () => {
  it('fields filled as a person would make exactly the intended answer, which the server accepts', () => {
    fc.assert(
      fc.property(form, ([fields, values]) => {
        const schema = {
          type: 'object',
          properties: Object.fromEntries(fields.map(([k, f]) => [k, SCHEMAS[f.shape]])),
          required: fields.filter(([, f]) => f.required).map(([k]) => k),
          additionalProperties: false,
        };
        expect(kindOf(schema)).toBe('object');
        const raws = initialRaws(schema, '', new Map());
        const expected: Record<string, unknown> = {};
        fields.forEach(([key, f], i) => {
          if (!f.required && !f.present) return; // left empty: not in the answer
          expected[key] = values[i];
          raws.set(pointer(key), rawOf(f.shape, values[i]));
        });
        const problems: FieldProblem[] = [];
        const answer = buildAnswer(schema, '', raws, true, problems);
        // A required field left empty is the only way to get a problem here.
        const emptyRequired = fields.filter(([k, f]) => f.required && !(k in expected));
        expect(emptyRequired).toEqual([]);
        expect(problems).toEqual([]);
        expect(answer).toEqual(expected);
        expect(answerProblems(schema, answer)).toEqual([]);
      }),
      { numRuns: trials(200, 5000) },
    );
  });

  it('an empty required field is a problem at its own pointer; bad numbers and JSON are named too', () => {
    const schema = {
      type: 'object',
      properties: { 'a/b': { type: 'integer' }, flag: { type: 'boolean' }, any: { type: 'object' }, nested: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } },
      required: ['a/b', 'flag', 'any', 'nested'],
    };
    expect(kindOf(schema.properties.any)).toBe('json');
    const raws = initialRaws(schema, '', new Map());
    const problems: FieldProblem[] = [];
    buildAnswer(schema, '', raws, true, problems);
    expect(problems.map((p) => p.path)).toEqual(['/a~1b', '/flag', '/any', '/nested/n']);
    raws.set('/a~1b', '1.5').set('/flag', false).set('/any', '{"x":').set('/nested/n', 'ten');
    const again: FieldProblem[] = [];
    buildAnswer(schema, '', raws, true, again);
    expect(again.map((p) => `${p.path}: ${p.message}`)).toEqual(['/a~1b: must be a whole number', expect.stringMatching(/^\/any: not valid JSON/), '/nested/n: must be a number']);
  });

  it("places the server's problems at the field they name, or the nearest field above it", () => {
    const schema = { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } }, copies: { type: 'integer' } } };
    const placed = problemsByField(schema, [
      { path: '/copies', message: 'Too big: expected number to be <=10' },
      { path: '/tags/1', message: 'Invalid input' },
      { path: '', message: 'Unrecognized key: "extra"' },
      { path: '/nowhere/deep', message: 'odd' },
    ]);
    expect(Object.fromEntries(placed)).toEqual({
      '/copies': ['Too big: expected number to be <=10'],
      '/tags': ['/1: Invalid input'],
      '': ['Unrecognized key: "extra"', '/nowhere/deep: odd'],
    });
  });

  it('starts from the defaults', () => {
    const schema = { type: 'object', properties: { p: { type: 'string', enum: ['a', 'b'], default: 'b' }, n: { type: 'integer', default: 3 }, t: { type: 'array', items: { type: 'string' }, default: ['x'] }, ok: { type: 'boolean', default: true } } };
    expect(Object.fromEntries(initialRaws(schema, '', new Map()))).toEqual({ '/p': 'b', '/n': '3', '/t': ['x'], '/ok': true });
    expect(buildAnswer(schema, '', initialRaws(schema, '', new Map()), true, [])).toEqual({ p: 'b', n: 3, t: ['x'], ok: true });
  });
});

describe('secret fields of an answer', () => {
  it('a field named like a secret, writeOnly, or of format password is one; others are not', () => {
    expect(isSecretField({ type: 'string' }, 'password')).toBe(true);
    expect(isSecretField({ type: 'string' }, 'apiKey')).toBe(true);
    expect(isSecretField({ type: 'string', writeOnly: true }, 'pin')).toBe(true);
    expect(isSecretField({ type: 'string', format: 'password' }, 'code')).toBe(true);
    expect(isSecretField({ type: 'string' }, 'user')).toBe(false);
    expect(isSecretField({ type: 'string' }, undefined)).toBe(false);
  });
  it('hasSecretField finds one nested in objects, and keyOfPointer reads escaped keys', () => {
    expect(hasSecretField({ type: 'object', properties: { db: { type: 'object', properties: { host: { type: 'string' }, token: { type: 'string' } } } } })).toBe(true);
    expect(hasSecretField({ type: 'object', properties: { user: { type: 'string' }, approved: { type: 'boolean' } } })).toBe(false);
    expect(hasSecretField(undefined)).toBe(false);
    expect(keyOfPointer('/db/a~1b~0c')).toBe('a/b~c');
    expect(keyOfPointer('')).toBeUndefined();
  });
});
