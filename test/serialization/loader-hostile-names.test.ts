/**
 * Audit item 2: NameTable hashes names with a fixed FNV-1a, so node ids (valid namespace segments) can be chosen to
 * share one slot, which made a flow's check quadratic (80k such nodes took 69 s to validate, 2 s for ordinary ids).
 * The ids below are made as the audit's generator made them (a meet-in-the-middle 3-character suffix that lands the
 * id in a chosen slot); the cost is counted in reads of the table (calls of its `idAt`), never timed.
 */
import { describe, expect, it } from 'vitest';
import { MAX_PROBES, NameTable } from '../../src/serialization/name-table.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-';
const PRIME = 0x01000193;

/** FNV-1a from state `h` over `text`. */
function fnv(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), PRIME);
  return h;
}

/** `count` distinct ids of segment characters whose FNV-1a all fall in one slot of the table NameTable sizes for `count` nodes. */
function collidingIds(count: number): string[] {
  let size = 8;
  while (size < count * 2) size *= 2;
  const mask = size - 1;
  let inverse = PRIME;
  for (let i = 0; i < 5; i++) inverse = Math.imul(inverse, 2 - Math.imul(PRIME, inverse));
  const target = 12345 & mask;
  // For each state (low bits), a 3-character suffix that takes it to the target slot.
  const suffixes = new Map<number, string>();
  for (const a of ALPHABET) for (const b of ALPHABET) for (const c of ALPHABET) {
    let h = target;
    for (const ch of [c, b, a]) h = (Math.imul(h, inverse) ^ ch.charCodeAt(0)) & mask;
    if (!suffixes.has(h)) suffixes.set(h, a + b + c);
  }
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    for (const x of ['', ...ALPHABET]) {
      const prefix = `n${i}${x}`;
      const suffix = suffixes.get(fnv(0x811c9dc5, prefix) & mask);
      if (suffix !== undefined) {
        ids.push(prefix + suffix);
        break;
      }
    }
  }
  for (const id of ids) expect(fnv(0x811c9dc5, id) & mask).toBe(target);
  return ids;
}

/** Reads of the table (idAt calls) to claim every id of `ids` as a node, then look each one up as id and segment. */
function reads(ids: readonly string[]): { reads: number; operations: number } {
  let count = 0;
  const table = new NameTable((i) => (count++, ids[i]), ids.length);
  ids.forEach((id, i) => {
    expect(table.idHolder(id)).toBeUndefined();
    table.claimNode(id, id, i);
  });
  ids.forEach((id, i) => {
    expect(table.idHolder(id)).toBe(i);
    expect(table.segmentHolder(id)).toBe(i);
  });
  return { reads: count, operations: ids.length * 4 };
}

describe('NameTable under ids chosen to collide', () => {
  it('reads a bounded number of slots per lookup, so colliding ids cost about what ordinary ids cost', () => {
    const count = 4000;
    const colliding = reads(collidingIds(count));
    const ordinary = reads(Array.from({ length: count }, (_, i) => `node-${i}`));
    // The colliding ids do collide (they cost more than ordinary ones) ...
    expect(colliding.reads).toBeGreaterThan(4 * ordinary.reads);
    // ... but a bounded number of reads per operation (a claim looks its name up at most three times), where a table
    // read to the end of a cluster costs about count/2 per operation (2000 here).
    expect(colliding.reads / colliding.operations).toBeLessThanOrEqual(3 * MAX_PROBES + 1);
    expect(colliding.reads).toBeLessThan(50 * ordinary.reads);
  });

  it('answers for colliding ids, repeated ids and segments as maps of first takers do', () => {
    const ids = collidingIds(300);
    // every id twice (the second taker is not the holder), and half the nodes with another node's id as segment
    const nodes = [...ids, ...ids].map((id, i) => ({ id, segment: i % 2 === 0 ? id : ids[(i * 7) % ids.length]! }));
    const table = new NameTable((i) => nodes[i]?.id, nodes.length);
    const idHolders = new Map<string, number>();
    const segmentHolders = new Map<string, number>();
    nodes.forEach(({ id, segment }, i) => {
      table.claimNode(id, segment, i);
      if (!idHolders.has(id)) idHolders.set(id, i);
      if (!segmentHolders.has(segment)) segmentHolders.set(segment, i);
    });
    for (const id of [...ids, 'other', `${ids[0]}x`]) {
      expect(table.idHolder(id)).toBe(idHolders.get(id));
      expect(table.segmentHolder(id)).toBe(segmentHolders.get(id));
    }
  });
});
