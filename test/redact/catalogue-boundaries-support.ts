/**
 * What the catalogue tests share (catalogue.test.ts, catalogue-boundaries-placement.test.ts): a token generator for
 * every pattern and vendor format of the catalogue, and the matches a pattern accepts in a text.
 */
import fc from 'fast-check';
import { DEFAULT_SECRET_PATTERNS, type SecretPattern } from '../../src/redact/index.js';
import { VENDOR_TOKEN_FORMATS } from '../../src/redact/vendor-patterns.js';

/**
 * A regex fast-check can generate from: the same language without word boundaries, lookarounds (at any depth),
 * names and `i`.
 */
function generatorOf(regex: RegExp): RegExp {
  const source = withoutLookarounds(regex.source.replace(/\\b/g, '')).replace(/\(\?<[A-Za-z]+>/g, '(');
  return new RegExp(`^(?:${source})$`);
}

/** `source` without its lookaround groups (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`), escapes and classes read as such. */
function withoutLookarounds(source: string): string {
  let out = '';
  for (let i = 0; i < source.length; ) {
    const head = /^\(\?<?[=!]/.exec(source.slice(i, i + 4));
    if (head === null) {
      const end = source[i] === '\\' ? i + 2 : i + 1;
      out += source.slice(i, end);
      i = end;
      continue;
    }
    // Skip to the parenthesis that closes the lookaround.
    let depth = 0;
    let inClass = false;
    for (; i < source.length; i++) {
      const c = source[i];
      if (c === '\\') i++;
      else if (inClass) inClass = c !== ']';
      else if (c === '[') inClass = true;
      else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) break;
    }
    i++;
  }
  return out;
}

/** The matches of a pattern in `text` that it accepts (given the character before each, as the redactor gives it). */
export function secretsIn(text: string, pattern: { regex: RegExp; accept?: (match: string, before: string) => boolean }): string[] {
  const regex = new RegExp(pattern.regex.source, pattern.regex.flags.includes('g') ? pattern.regex.flags : `${pattern.regex.flags}g`);
  const out: string[] = [];
  for (const m of text.matchAll(regex)) {
    if (pattern.accept !== undefined && !pattern.accept(m[0], m.index > 0 ? text[m.index - 1]! : '')) continue;
    out.push(m[0]);
  }
  return out;
}

/** One format to generate tokens of: a pattern of the catalogue, or one vendor format of the vendor-token pattern. */
export interface CatalogueCase {
  readonly name: string;
  /** The language of its tokens, for fc.stringMatching. */
  readonly generate: RegExp;
  readonly pattern: SecretPattern;
}

export const CATALOGUE_CASES: readonly CatalogueCase[] = [
  ...DEFAULT_SECRET_PATTERNS.map((p) => ({ name: `pattern ${p.id}`, generate: generatorOf(p.regex), pattern: p })),
  ...VENDOR_TOKEN_FORMATS.map((f) => ({
    name: `vendor format ${f.source}`,
    generate: generatorOf(f.regex),
    pattern: DEFAULT_SECRET_PATTERNS.find((p) => p.id === 'vendor-token')!,
  })),
];

const tokenArbitraries = new WeakMap<CatalogueCase, fc.Arbitrary<string>>();

/**
 * `fc.stringMatching(format.generate)`, built once per case in a test process and shared by the tests that generate
 * its tokens (an arbitrary holds no state: each run draws from its own seed). Building one takes milliseconds (fast-check
 * tries its list of dangerous strings against every character class), which was 40% of catalogue.test.ts.
 */
export function tokensOf(format: CatalogueCase): fc.Arbitrary<string> {
  let tokens = tokenArbitraries.get(format);
  if (tokens === undefined) {
    tokens = fc.stringMatching(format.generate);
    tokenArbitraries.set(format, tokens);
  }
  return tokens;
}
