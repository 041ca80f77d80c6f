import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeywordIndex } from '../../src/store/index.js';

const docArb = fc.array(fc.constantFrom('aa', 'bb', 'cc', 'dd', 'ee', 'ff'), { minLength: 0, maxLength: 8 });
const opArb = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), id: fc.constantFrom('d0', 'd1', 'd2', 'd3', 'd4', 'd5'), tokens: docArb }),
  fc.record({ kind: fc.constant('delete' as const), id: fc.constantFrom('d0', 'd1', 'd2', 'd3', 'd4', 'd5') }),
);

function apply(index: KeywordIndex, ops: Array<{ kind: 'set'; id: string; tokens: string[] } | { kind: 'delete'; id: string }>): void {
  for (const op of ops) {
    if (op.kind === 'set') index.set(op.id, op.tokens);
    else index.delete(op.id);
  }
}

function sortedJSON(index: KeywordIndex): unknown {
  const file = index.toJSON();
  const sortKeys = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { ...file, docs: sortKeys(file.docs), terms: sortKeys(Object.fromEntries(Object.entries(file.terms).map(([t, p]) => [t, sortKeys(p)]))) };
}

describe('KeywordIndex', () => {
  it('property: an index reloaded from its file behaves like the original under further sets and deletes', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 20 }), fc.array(opArb, { maxLength: 20 }), fc.constantFrom('aa', 'bb cc', 'ff dd aa'), (before, after, query) => {
        const original = new KeywordIndex();
        apply(original, before);
        const reloaded = KeywordIndex.fromJSON(JSON.parse(JSON.stringify(original.toJSON())));
        expect(sortedJSON(reloaded)).toEqual(sortedJSON(original));
        apply(original, after);
        apply(reloaded, after);
        expect(sortedJSON(reloaded)).toEqual(sortedJSON(original));
        expect(reloaded.search(query, 10)).toEqual(original.search(query, 10));
      }),
      { numRuns: 200 },
    );
  });

  it('rejects inconsistent files with the reason', () => {
    const good = { v: 1, N: 1, totalLength: 2, docs: { a: 2 }, terms: { xx: { a: 2 } } };
    expect(() => KeywordIndex.fromJSON(good)).not.toThrow();
    expect(() => KeywordIndex.fromJSON({ ...good, v: 2 })).toThrow(/version 1/);
    expect(() => KeywordIndex.fromJSON({ ...good, terms: { xx: { b: 2 } } })).toThrow(/bad posting xx → b/);
    expect(() => KeywordIndex.fromJSON({ ...good, terms: { xx: { a: 1 } } })).toThrow(/length 2 does not match its postings \(1\)/);
    expect(() => KeywordIndex.fromJSON({ ...good, N: 3 })).toThrow(/N or totalLength/);
  });
});
