/**
 * The credentials of an Authorization header quoted or bracketed in text (Markdown backticks, curly quotes, `<…>`,
 * `(…)`), and a token that starts with a date, are redacted; a date alone is not (review s36, finding 2).
 */
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/redact/index.js';

const T = 'f3a9c2b1d4e5f60718293a4b5c6d7e8a';
const out = (text: string): string => String(redact(text).value);

describe('Authorization credentials in quoted header text', () => {
  it('controls: bare and ASCII-quoted', () => {
    expect(out(`Authorization: Token ${T}`)).not.toContain(T);
    expect(out(`authorization: 'Token ${T}'`)).not.toContain(T);
    expect(out(`authorization: "Token ${T}"`)).not.toContain(T);
  });
  it.each([
    ['Markdown backticks', `Send \`Authorization: Token ${T}\` with each call, or authorization: \`Token ${T}\``],
    ['typographic double quotes', `Authorization: “Token ${T}”`],
    ['typographic single quotes', `Authorization: ‘Token ${T}’`],
    ['angle brackets', `Authorization: <Token ${T}>`],
    ['parentheses', `Authorization: (Token ${T})`],
    ['a token that starts with a date', `Authorization: Token 2024-06-01T${T}`],
  ])('%s', (_name, text) => {
    expect(out(text)).not.toContain(T);
  });
});
