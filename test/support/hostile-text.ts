/** Text made to attack a terminal: for the tests of terminalText and of every renderer that prints stored text. */
import fc from 'fast-check';

const codePoints = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i),
  0x61c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069,
];

/** Every character a terminal may act on: C0, DEL, C1, and the bidirectional and line-separator format characters. */
// eslint-disable-next-line no-control-regex
export const ACTS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

/** The same without newline: what a renderer's output may hold only as the newlines it writes itself. */
// eslint-disable-next-line no-control-regex
export const ACTS_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

/** Text mixing those characters with ordinary text, ANSI look-alikes, backslashes and CRLF. */
export function hostileText(options: { minLength?: number } = {}): fc.Arbitrary<string> {
  const piece = fc.oneof(
    fc.constantFrom(...codePoints).map((c) => String.fromCharCode(c)),
    fc.constantFrom('\u001b[2K\r', '\u001b]52;c;eA==\u0007', '\u001b]8;;https://x\u001b\\', '\u009b8m', '\r\n', '[2K', '\\', '\\u001b', '✓', 'a', ' '),
    fc.string({ maxLength: 3 }),
  );
  return fc.array(piece, { minLength: options.minLength ?? 0, maxLength: 16 }).map((parts) => parts.join(''));
}

/**
 * `text` as a harmless twin: every character a terminal acts on replaced by `?`, except newlines when `multiLine`
 * (a CRLF counting as one). A renderer prints as many lines for a report of twins as for the report itself.
 */
export function twin(text: string, multiLine = false): string {
  return multiLine ? text.replace(/\r\n/g, '\n').replace(new RegExp(ACTS_BUT_NEWLINE.source, 'g'), '?') : text.replace(new RegExp(ACTS.source, 'g'), '?');
}
