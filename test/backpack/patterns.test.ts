import { describe, expect, it } from 'vitest';
import { compileNamespacePattern, matchesAnyNamespace, matchesNamespace } from '../../src/backpack/index.js';

describe('namespace patterns (D5)', () => {
  it.each([
    ['sales.*', 'sales.chat', true],
    ['sales.*', 'sales.research.web', false],
    ['sales.*', 'sales', false],
    ['*.chat', 'sales.chat', true],
    ['sales.**', 'sales', true],
    ['sales.**', 'sales.a.b.c', true],
    ['**.web', 'sales.research.web', true],
    ['**.web', 'web', true],
    ['a.**.z', 'a.z', true],
    ['a.**.z', 'a.b.c.z', true],
    ['a.**.z', 'a.b.c', false],
    ['sales.chat', 'sales.chat', true],
    ['sales.chat', 'sales.chatter', false],
    ['pii.*', 'pii.email', true],
    ['**', 'anything.at.all', true],
  ])('%s matches %s: %s', (pattern, namespace, expected) => {
    expect(matchesNamespace(pattern, namespace)).toBe(expected);
  });

  it('caches compiled matchers and matches any of several patterns', () => {
    expect(compileNamespacePattern('x.*')).toBe(compileNamespacePattern('x.*'));
    expect(matchesAnyNamespace(['a.*', 'b.*'], 'b.c')).toBe(true);
    expect(matchesAnyNamespace([], 'b.c')).toBe(false);
  });
});
