/**
 * Where a secret with a vendor prefix starts and ends in a text: the boundaries the catalogue's patterns share
 * (patterns.ts, vendor-patterns.ts).
 */

/**
 * The left boundary of a token with a vendor prefix: not right after a letter or digit. `_`, `-`, `.` and other
 * punctuation separate a token from what precedes it (`OPENAI_sk-proj-…`, `x_ghp_…`, an object key `k_sk-…`), where
 * `\b` took `_` for part of a word and let the whole token through.
 */
export const START = '(?<![A-Za-z0-9])';
/** The right boundary of a token of fixed length or alphabet: not followed by a letter or digit (`_` may follow). */
export const END = '(?![A-Za-z0-9])';

/**
 * The `accept` check (SecretPattern.accept) of the tokens with a vendor prefix: a token right after `_` or `-` (characters that
 * join words in identifiers) is taken for a secret only when it holds an upper-case letter or a digit, as every
 * generated token does; so `read_github_pat_from_the_environment` or `my-sk-long-kebab-name` is not cut in the middle.
 */
export function standsApart(match: string, before: string): boolean {
  return (before !== '_' && before !== '-') || /[A-Z0-9]/.test(match);
}
