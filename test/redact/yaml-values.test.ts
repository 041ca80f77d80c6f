/**
 * Secret values YAML writes on the lines after their key (`password:` then an indented value, block scalars, lists
 * of scalars): replaced wherever text is redacted, without swallowing a nested mapping's keys or touching values of
 * keys that are not secret-named. And a quoted value with blanks that the catalogue replaced in part is replaced whole.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/index.js';

const text = (value: string): string => redact(value).value;

describe('YAML values on the lines after a secret-named key', () => {
  it.each([
    ['a plain scalar on the next line', 'password:\n  hunter2-Correct-Horse\nuser: bob', 'password:\n  [REDACTED]\nuser: bob'],
    ['nested, with CRLF line ends', 'db:\r\n  password:\r\n    hunter2-Correct-Horse\r\n  user: bob', 'db:\r\n  password:\r\n    [REDACTED]\r\n  user: bob'],
    ['a literal block scalar', 'client_secret: |\n  first line\n  second line\nnext: 1', 'client_secret: [REDACTED]\n  [REDACTED]\n  [REDACTED]\nnext: 1'],
    ['a folded block scalar with a blank line inside', 'password: >-\n  folded\n\n  text\nuser: x', 'password: [REDACTED]\n  [REDACTED]\n\n  [REDACTED]\nuser: x'],
    ['a list of scalars', 'password:\n  - first-one\n  - second-one\nuser: x', 'password:\n  - [REDACTED]\n  - [REDACTED]\nuser: x'],
    ['a key in a list item', '- password:\n    s3cret-value\n- user: x', '- password:\n    [REDACTED]\n- user: x'],
    ['a comment after the key', 'password: # rotated monthly\n  s3cret-value', 'password: [REDACTED] rotated monthly\n  [REDACTED]'],
    ['a list at the key\'s own indentation', 'password:\n- first-one\n- second-one\nuser: x', 'password:\n- [REDACTED]\n- [REDACTED]\nuser: x'],
    ['a list at the key\'s own indentation, nested', 'db:\n  api_key:\n  - first-one\n  user: x', 'db:\n  api_key:\n  - [REDACTED]\n  user: x'],
  ])('%s', (_name, input, expected) => {
    expect(text(input)).toBe(expected);
  });

  it.each([
    ['a nested mapping keeps its keys', 'password:\n  nested: 1\n  other: 2'],
    ['a key that is not secret-named', 'description:\n  a long text\n  on two lines'],
    ['a secret-named key whose value is on its own line at the same indentation', 'password:\nuser: bob'],
    ['a secret-named key in a list item, before a sibling item', '- password:\n- user-bob'],
    ['a list of mappings at the key\'s own indentation keeps its keys', 'password:\n- name: a\n- name: b'],
  ])('%s: unchanged', (_name, input) => {
    expect(text(input)).toBe(input);
  });

  it('no value written under a secret-named key in any of these forms reaches the output (property)', () => {
    const name = fc.constantFrom('password', 'api_key', 'client_secret', 'accessToken', 'DB_PASSWORD', 'private_key');
    const value = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.@+=-]{7,40}$/);
    const form = fc.constantFrom('plain', 'literal', 'folded', 'list', 'flush list', 'nested');
    fc.assert(
      fc.property(name, fc.array(value, { minLength: 1, maxLength: 3 }), form, fc.nat(4), fc.boolean(), (key, values, shape, depth, crlf) => {
        const pad = '  '.repeat(depth);
        const eol = crlf ? '\r\n' : '\n';
        const body =
          shape === 'list'
            ? values.map((v) => `${pad}  - ${v}`)
            : shape === 'flush list'
              ? values.map((v) => `${pad}- ${v}`)
            : shape === 'nested'
              ? [`${pad}  ${key}:`, ...values.map((v) => `${pad}    ${v}`)]
              : values.map((v) => `${pad}  ${v}`);
        const head = shape === 'nested' ? `${pad}outer:` : `${pad}${key}:${shape === 'literal' ? ' |' : shape === 'folded' ? ' >' : ''}`;
        const yaml = [`${pad}name: service`, head, ...body, `${pad}port: 8080`].join(eol);
        const out = text(yaml);
        for (const v of values) expect(out, yaml).not.toContain(v);
        expect(out).toContain('name: service');
        expect(out).toContain('port: 8080');
      }),
    );
  });
});

describe('a quoted value with blanks under a name the catalogue takes', () => {
  it('is replaced whole, not just its first word', () => {
    expect(text('pwd: "correct horse battery staple"')).toBe('pwd: "[REDACTED]"');
    expect(text("pwd='correct horse battery staple'")).toBe("pwd='[REDACTED]'");
    expect(text('password: "correct horse battery staple"')).toBe('password: "[REDACTED]"');
  });
});
