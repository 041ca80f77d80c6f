import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../src/redact/redactor.js';

/** The redactor's `name: value` pass and the check that lets a text skip it (private: reached for this test). */
interface NamedPass {
  mayReplaceAssigned(text: string): boolean;
  replaceAssigned(text: string): string;
}

/** Pieces of text around assignments: names secret or not (the user's too), marks, quotes at any depth, blanks, values. */
const piece = fc.constantFrom(
  'password', 'apiKey', 'db_pw', 'token', 'sessionSecret', 'myName', 'budget', 'url', 'a.b-c', '$x', '9lives', 'keyboard',
  ':', '=', '=>', ' ', '\t', '\n', '"', "'", '\\', '\\"', '\\\\"', ',', ';', '{', '}', '[', ']', '-', '.',
  'hunter2', 'x y', '[REDACTED]', '[REDACTED', '"[REDACTED] and more"', "'[REDACTED]x'", 'é', 'ſ', '\u{1F600}',
);

describe("redaction's check before the `name: value` pass", () => {
  it('lets a text skip the pass only when the pass would leave it as it is (property)', () => {
    for (const redactor of [new Redactor(), new Redactor({ secretKeys: ['myName'] })]) {
      const pass = redactor as unknown as NamedPass;
      fc.assert(
        fc.property(fc.array(piece, { maxLength: 14 }), (pieces) => {
          const text = pieces.join('');
          return pass.mayReplaceAssigned(text) || pass.replaceAssigned(text) === text;
        }),
        { numRuns: 3000 },
      );
    }
  });

  it('skips prose whose colons follow plain words, and still redacts a secret-named field in it', () => {
    const redactor = new Redactor();
    const pass = redactor as unknown as NamedPass;
    const prose = 'The model answered the question about the basic token budget: use fewer words. '.repeat(50);
    expect(pass.mayReplaceAssigned(prose)).toBe(false);
    expect(redactor.redactText(prose)).toBe(prose);
    const withSecret = `${prose}config: { "password" : "hunter2 and more" } ${prose}`;
    expect(pass.mayReplaceAssigned(withSecret)).toBe(true);
    expect(redactor.redactText(withSecret)).not.toContain('hunter2');
  });
});
