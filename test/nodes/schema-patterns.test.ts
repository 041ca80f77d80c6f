/**
 * JSON Schemas from outside the process are checked without their regular expressions (src/nodes/schema-patterns.ts):
 * each `pattern` keyword is dropped at any depth, and nothing else changes: property names, `$defs` names and data
 * called `pattern` stay as written.
 */
import { describe, expect, it } from 'vitest';
import { checkAnswer, recordedSchemaCheck, schemaFromJson } from '../../src/nodes/index.js';
import { MAX_EXPANDED_SUBSCHEMAS, expandsBeyond, withoutPatterns } from '../../src/nodes/schema-patterns.js';

describe('withoutPatterns', () => {
  it('drops every pattern keyword, at any depth and in every kind of subschema', () => {
    const schema = {
      type: 'object',
      pattern: '^a',
      properties: { name: { type: 'string', pattern: '^(a+)+$' }, list: { type: 'array', items: { type: 'string', pattern: 'x' } } },
      anyOf: [{ pattern: 'y' }, { not: { pattern: 'z' } }],
      $defs: { word: { type: 'string', pattern: '^w' } },
    };
    expect(withoutPatterns(schema)).toEqual({
      type: 'object',
      properties: { name: { type: 'string' }, list: { type: 'array', items: { type: 'string' } } },
      anyOf: [{}, { not: {} }],
      $defs: { word: { type: 'string' } },
    });
  });

  it('keeps a property, a $defs entry and data named pattern or patternProperties', () => {
    const schema = {
      type: 'object',
      properties: { pattern: { type: 'string', pattern: '^p' }, patternProperties: { type: 'number' } },
      $defs: { pattern: { type: 'boolean' } },
      enum: [{ pattern: 'kept' }],
      const: { pattern: 'kept' },
      default: { pattern: 'kept' },
      examples: [{ pattern: 'kept' }],
    };
    expect(withoutPatterns(schema)).toEqual({
      type: 'object',
      properties: { pattern: { type: 'string' }, patternProperties: { type: 'number' } },
      $defs: { pattern: { type: 'boolean' } },
      enum: [{ pattern: 'kept' }],
      const: { pattern: 'kept' },
      default: { pattern: 'kept' },
      examples: [{ pattern: 'kept' }],
    });
  });

  it('turns patternProperties into open additionalProperties, even where additionalProperties refused others', () => {
    expect(withoutPatterns({ type: 'object', patternProperties: { '^x': { type: 'string' } } })).toEqual({ type: 'object', additionalProperties: true });
    // Else an answer with a property the patterns allowed would be refused here.
    expect(withoutPatterns({ type: 'object', additionalProperties: false, patternProperties: { '^x': {} } })).toEqual({ type: 'object', additionalProperties: true });
    const schema = schemaFromJson({ type: 'object', patternProperties: { '^x': { type: 'string' } }, additionalProperties: false });
    expect(checkAnswer(schema, { x1: 'kept' }).ok).toBe(true);
  });

  it('drops a pattern whatever its value (zod compiles an array holding a regular expression too)', () => {
    expect(withoutPatterns({ type: 'string', pattern: ['^(.*.*)*x$'] })).toEqual({ type: 'string' });
    expect(withoutPatterns({ type: 'string', pattern: { source: 'x' } })).toEqual({ type: 'string' });
    expect(checkAnswer(schemaFromJson({ type: 'object', properties: { name: { type: 'string', pattern: ['^x$'] } } }), { name: 'not x' }).ok).toBe(true);
  });
});

describe("a question's recorded schema", () => {
  it("is checked without its patterns (the node checks them with its own schema) and with everything else", () => {
    // A pattern that would reject the answer: not evaluated here, so a catastrophic one cannot block the process
    // (test/studio/hostile-run.test.ts runs one against a real Studio).
    const schema = schemaFromJson({ type: 'object', properties: { name: { type: 'string', pattern: '^x$' }, age: { type: 'integer' } }, required: ['name', 'age'] });
    expect(checkAnswer(schema, { name: 'not x', age: 3 }).ok).toBe(true);
    const wrong = checkAnswer(schema, { name: 'a', age: 'three' });
    expect(wrong.ok).toBe(false);
    if (!wrong.ok) expect(wrong.problems.map((problem) => problem.path)).toEqual(['/age']);
  });
});

/** `$defs` entries that each refer twice to the next one: a check walks 2^depth paths. */
function doubling(depth: number, kind: 'anyOf' | 'oneOf' | 'allOf'): Record<string, unknown> {
  const $defs: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) $defs[`a${i}`] = { [kind]: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
  $defs[`a${depth}`] = { type: 'string' };
  return { $defs, type: 'object', properties: { name: { $ref: '#/$defs/a0' } }, required: ['name'] };
}

describe('a recorded schema too large to check here', () => {
  it('is measured by what its $refs expand to, not by its size in bytes, and the count stops at the bound', () => {
    expect(expandsBeyond(doubling(8, 'anyOf'))).toBe(false);
    // 1.6 KB that a check of one answer would walk 2^40 times: found at once (the count stops at the bound).
    expect(expandsBeyond(doubling(40, 'anyOf'))).toBe(true);
    expect(expandsBeyond({ $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } }, $ref: '#/$defs/node' })).toBe(true);
    expect(expandsBeyond({ type: 'array', items: { type: 'string' } })).toBe(false);
    expect(MAX_EXPANDED_SUBSCHEMAS).toBe(10_000);
  });

  it('is not checked before the resume (the node checks with its own schema); a small one is', () => {
    for (const kind of ['anyOf', 'oneOf', 'allOf'] as const) expect(recordedSchemaCheck(doubling(40, kind))).toBeUndefined();
    const small = recordedSchemaCheck(doubling(4, 'anyOf'));
    expect(small).toBeDefined();
    expect(checkAnswer(small!, { name: 'x' }).ok).toBe(true);
    expect(checkAnswer(small!, { name: 3 }).ok).toBe(false);
  });
});
