import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { terminalText } from '../../src/events/terminal-text.js';
import { ACTS, hostileText } from '../support/hostile-text.js';
import { trials } from '../support/soak.js';

describe('terminalText', () => {
  it('leaves no character a terminal acts on, keeps text that has none as it is, and shows each one as its JSON escape', () => {
    fc.assert(
      fc.property(hostileText(), (text) => {
        const shown = terminalText(text);
        expect(shown).not.toMatch(ACTS);
        if (!ACTS.test(text)) expect(shown).toBe(text);
        // What JSON escapes (C0) reads the same; JSON leaves DEL, C1 and the format characters, shown here as \uXXXX.
        const json = JSON.stringify(text)
          .slice(1, -1)
          .replace(/\\(["\\])/g, '$1')
          .replace(/[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
        expect(shown).toBe(json);
        expect(terminalText(shown)).toBe(shown);
      }),
      { numRuns: trials(500, 5000) },
    );
  });

  it('multi-line: keeps newlines (CRLF as one), escapes the rest, and starts every further line with the continuation', () => {
    fc.assert(
      fc.property(hostileText(), fc.constantFrom('  ', '│  ', '   '), (text, continuation) => {
        const shown = terminalText(text, { continuation });
        expect(shown.replace(/\n/g, '')).not.toMatch(ACTS);
        const lines = shown.split('\n');
        expect(lines.length).toBe(text.replace(/\r\n/g, '\n').split('\n').length);
        for (const line of lines.slice(1)) expect(line.startsWith(continuation)).toBe(true);
        expect(lines.map((line, i) => (i === 0 ? line : line.slice(continuation.length))).join('\n')).toBe(
          text
            .split(/\r\n|\n/)
            .map((line) => terminalText(line))
            .join('\n'),
        );
      }),
      { numRuns: trials(500, 5000) },
    );
  });

  it('examples', () => {
    expect(terminalText('k\u001b[2K\r\u001b[32m✓')).toBe('k\\u001b[2K\\r\\u001b[32m✓');
    expect(terminalText('v\u202eevil\u009b31m\u007f')).toBe('v\\u202eevil\\u009b31m\\u007f');
    expect(terminalText('a\nb\tc')).toBe('a\\nb\\tc');
    expect(terminalText('a\r\nb\rc\td', { continuation: '  ' })).toBe('a\n  b\\rc\\td');
    expect(terminalText('plain text, → ✓ é')).toBe('plain text, → ✓ é');
  });
});
