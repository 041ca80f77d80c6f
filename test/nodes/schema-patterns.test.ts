/**
 * JSON Schemas from outside the process are checked without their regular expressions (src/nodes/schema-patterns.ts):
 * each `pattern` keyword is dropped at any depth, and nothing else changes: property names, `$defs` names and data
 * called `pattern` stay as written.
 */
import { describe, expect, it } from 'vitest';
import { checkAnswer, schemaFromJson } from '../../src/nodes/index.js';
import { withoutPatterns } from '../../src/nodes/schema-patterns.js';

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
