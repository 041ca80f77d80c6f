import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LiteralSet, literalsOf } from '../../src/redact/literal-set.js';
import { DEFAULT_SECRET_PATTERNS } from '../../src/redact/patterns.js';
import { trials } from '../support/soak.js';

/** Characters a case-insensitive match could confuse with ASCII letters, or that break a match in the middle. */
const TRICKY = ['ſ', 'K', 'İ', 'ı', 'é', 'ß', '\u{1F600}', '\u0000', '\n', ' '];

/** A text built from pieces of `literals` (in any case, cut anywhere), ASCII and {@link TRICKY} characters. */
function textAround(literals: readonly string[]): fc.Arbitrary<string> {
  const piece = fc.oneof(
    fc.tuple(fc.constantFrom(...literals), fc.nat(), fc.nat(), fc.boolean()).map(([literal, a, b, upper]) => {
      const cut = literal.slice(Math.min(a, b) % (literal.length + 1), 1 + (Math.max(a, b) % (literal.length + 1)));
      return upper ? cut.toUpperCase() : cut;
    }),
    fc.constantFrom(...literals),
    fc.constantFrom(...TRICKY),
    fc.string({ unit: 'binary-ascii', maxLength: 4 }),
  );
  return fc.array(piece, { maxLength: 12 }).map((pieces) => pieces.join(''));
}

/** A regular expression source in the subset literalsOf reads: characters, escaped punctuation, classes, groups, `?`, `|`. */
const literalSource: fc.Arbitrary<string> = fc.letrec((tie) => ({
  alternatives: fc.array(tie('sequence') as fc.Arbitrary<string>, { minLength: 1, maxLength: 3 }).map((seqs) => seqs.join('|')),
  sequence: fc.array(tie('quantified') as fc.Arbitrary<string>, { minLength: 1, maxLength: 4 }).map((atoms) => atoms.join('')),
  quantified: fc.tuple(tie('atom') as fc.Arbitrary<string>, fc.nat(3)).map(([atom, optional]) => (optional === 0 ? `${atom}?` : atom)),
  atom: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    fc.constantFrom('a', 'B', 'k', 's', 'x', '3', '_', ':', '-', '/', ' '),
    fc.constantFrom('\\.', '\\/', '\\-', '\\:'),
    fc.uniqueArray(fc.constantFrom('a', 'b', 'K', 's', '_', '3'), { minLength: 1, maxLength: 4 }).map((chars) => `[${chars.join('')}]`),
    tie('group') as fc.Arbitrary<string>,
  ),
  group: (tie('alternatives') as fc.Arbitrary<string>).map((inner) => `(?:${inner})`),
})).alternatives as fc.Arbitrary<string>;

describe('LiteralSet', () => {
  it('answers as the case-insensitive regular expression of its sources, for the redactor gates, on any text (property)', () => {
    const gates = DEFAULT_SECRET_PATTERNS.flatMap((p) => (p.gate ? [p.gate.source] : []));
    const named = 'key|secret|pass|pw|token|cookie|credential|authorization';
    for (const sources of [gates, [named], ...gates.map((g) => [g])]) {
      const set = LiteralSet.of(sources);
      // Every built-in gate spells literals: the redactor never falls back to its regular expression for them.
      expect(set, sources.join('|')).toBeDefined();
      const regex = new RegExp(sources.join('|'), 'i');
      fc.assert(
        fc.property(textAround(literalsOf(sources)!), (text) => set!.test(text) === regex.test(text)),
        { numRuns: 300 },
      );
    }
  });

  it('answers as the case-insensitive regular expression for any source of literals, on any text (property)', () => {
    fc.assert(
      fc.property(literalSource, fc.array(fc.constantFrom('a', 'A', 'b', 'B', 'k', 'K', 's', 'S', 'x', '3', '_', ':', '-', '/', '.', ' ', ...TRICKY), { maxLength: 16 }), (source, chars) => {
        const set = LiteralSet.of([source]);
        // Sources that spell more than a few thousand literals are left to their regular expression.
        fc.pre(set !== undefined);
        const regex = new RegExp(source, 'i');
        const literals = literalsOf([source])!;
        expect(literals.length).toBeGreaterThan(0);
        // A text made of the alphabet, and one holding a literal of the set in changed case.
        const text = chars.join('');
        const holding = `${text.slice(0, 3)}${(literals[chars.length % literals.length] ?? '').toUpperCase()}${text.slice(3)}`;
        return set!.test(text) === regex.test(text) && set!.test(holding) === regex.test(holding);
      }),
      // Each run builds a set of up to a few thousand literals: 150 in `npm test`, 2000 in the soak.
      { numRuns: trials(150, 2000) },
    );
    // 6 s alone in the soak; 30 s was exceeded when the soak's other files loaded both cores.
  }, 120_000);

  it('spells the literals of a source, and refuses anything else (then the caller keeps its regular expression)', () => {
    expect(literalsOf(['gh[pousr]_'])).toEqual(['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_']);
    expect(literalsOf(['api_?key'])).toEqual(['api_key', 'apikey']);
    expect(literalsOf(['(?:a|b)c?', 'hooks\\.slack'])).toEqual(['ac', 'a', 'bc', 'b', 'hooks.slack']);
    for (const source of ['a.b', 'a*', 'a+', 'a{2}', '[a-z]', '[^a]', '\\d', '\\w', '(a)', '(?=a)', 'a??', '^a', 'a$', 'é', '[', '(?:a', 'a)']) {
      expect(literalsOf([source]), source).toBeUndefined();
    }
    // The empty literal is in every text, as the regular expression says.
    expect(LiteralSet.of(['a?'])!.test('')).toBe(true);
    expect(new RegExp('a?', 'i').test('')).toBe(true);
  });
});
