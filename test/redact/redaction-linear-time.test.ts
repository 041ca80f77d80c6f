/**
 * Reviews s50b (H1, L6) and s51b (H1): redaction stays linear in the text on inputs built against its regular expressions. A
 * quadratic pattern takes seconds on 256 KB here (the header-list rule's lookbehind over a run of blanks took 1.1 s
 * on 64 KB; the catalogue's assignment rule over a dashed run ending in `password`, 0.6 s); linear, tens of ms. The
 * bound is far above linear and far below quadratic, so machine load does not decide the result.
 */
import { describe, expect, it } from 'vitest';
import { redactorFor } from '../../src/redact/index.js';

const redactor = redactorFor();
const SIZE = 262_144;

function ms(text: string): number {
  const start = performance.now();
  redactor.redactText(text);
  return performance.now() - start;
}

describe('redaction time on adversarial text (256 KB)', () => {
  it.each([
    ['a run of blanks after `[` in text that names a header', () => 'x-api-key [' + ' '.repeat(SIZE)],
    ['a run of line breaks after `,`', () => 'X-Api-Key ,\n' + '\n'.repeat(SIZE)],
    ['a dashed run ending in a secret word', () => 'a-'.repeat(SIZE / 2) + 'password'],
    ['a dotted run ending in a secret word', () => 'a.'.repeat(SIZE / 2) + 'token'],
    ['quoted header names after commas', () => "token " + "'X-Api-Key', ".repeat(SIZE / 13)],
    ['XML-like openings with no close', () => '<password>' + 'a'.repeat(8000) + '<password>'.repeat(SIZE / 10)],
    ['CDATA openings with no close', () => 'x…' + '<password><![CDATA['.repeat(SIZE / 19)],
    // Review s51b H1: lookbehinds that did not exclude `\` made every backslash of a run a start.
    ['a run of backslashes after a kty field', () => 'kty: 1 ' + '\\'.repeat(SIZE / 2)],
    ['a run of backslashes before a kty field', () => '\\'.repeat(SIZE / 2) + ' kty:'],
    ['a run of backslashes after a name/value record', () => 'password: x, value: y ' + '\\'.repeat(SIZE / 2)],
    ['`_-` and a secret word repeated', () => '_-Token'.repeat(SIZE / 7)],
  ])('%s: well under 2 s (quadratic would take many)', (_name, make) => {
    redactor.redactText('warm X-Api-Key [ ] a-password');
    expect(ms(make())).toBeLessThan(2000);
  }, 60_000);
});
