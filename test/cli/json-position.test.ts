import { describe, expect, it } from 'vitest';
import { jsonErrorOffset, lineColumn } from '../../src/cli/backpackflow/json-position.js';

describe('JSON error position', () => {
  it('finds the first offending character, or -1 for valid JSON', () => {
        const cases: [string, number][] = [
      ['{"a": [1, 2]}', -1],
      ['{"a": [,]}', 7],
      ['{"a": 1,}', 8],
      ['{"a" 1}', 5],
      ['[1, 2', 5],
      ['"tab\there"', 4],
      ['{"a": tru}', 9],
      ['[1] x', 4],
      ['{"a": "\\q"}', 8],
      ['-', 0],
    ];
    for (const [text, offset] of cases) {
      expect([text, jsonErrorOffset(text)]).toEqual([text, offset]);
      if (offset === -1) expect(() => JSON.parse(text)).not.toThrow();
      else expect(() => JSON.parse(text)).toThrow();
    }
    expect(lineColumn('{\n  "a": [,]\n}', 10)).toEqual({ line: 2, column: 9 });
  });
});
