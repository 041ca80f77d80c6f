import { describe, expect, it } from 'vitest';
import { useColor } from '../../src/cli/colors.js';

describe('CLI colors', () => {
  it('NO_COLOR turns color off even on a terminal and even with FORCE_COLOR', () => {
    expect(useColor({ NO_COLOR: '1' }, true)).toBe(false);
    expect(useColor({ NO_COLOR: '1', FORCE_COLOR: '1' }, true)).toBe(false);
  });

  it('FORCE_COLOR turns color on when piped, except FORCE_COLOR=0', () => {
    expect(useColor({ FORCE_COLOR: '1' }, false)).toBe(true);
    expect(useColor({ FORCE_COLOR: '0' }, true)).toBe(false);
  });

  it('otherwise colors only a terminal; an empty NO_COLOR is unset', () => {
    expect(useColor({}, true)).toBe(true);
    expect(useColor({}, false)).toBe(false);
    expect(useColor({ NO_COLOR: '' }, true)).toBe(true);
  });
});
