/**
 * An object whose `$schema` names a json-schema.org dialect is walked as a JSON Schema (an interrupt's answer schema
 * must keep a `password` field's subschema), but only JSON Schema's keywords are exempt from the key rule: a config
 * object that names its schema keeps its secrets blanked, a value under `properties.password` is data, and a secret
 * field's subschema reached through `$ref` has its data keywords blanked. Found by the review of the day's fixes.
 */
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/redact/index.js';

const S = 'https://json-schema.org/draft/2020-12/schema';
const json = (v: unknown) => JSON.stringify(redact(v as never).value);

describe('the JSON Schema exemption of the key rule', () => {
  it("a secret-named key that is not a schema keyword is blanked even beside a '$schema'", () => {
    expect(json({ config: { $schema: S, token: 'tok-plain-value', password: 'hunter2-plain' } })).not.toMatch(/tok-plain-value|hunter2-plain/);
  });
  it('a value (not a subschema) under properties.<secret-name> is blanked', () => {
    expect(json({ $schema: S, properties: { password: 'hunter2-plain' } })).not.toContain('hunter2-plain');
  });
  it("a secret-named field's subschema reached by $ref keeps its data keywords blanked", () => {
    expect(json({ $schema: S, properties: { password: { $ref: '#/$defs/Login' } }, $defs: { Login: { type: 'string', default: 'ref-default-plain', examples: ['ref-ex-plain'] } } })).not.toMatch(/ref-default-plain|ref-ex-plain/);
  });
});
