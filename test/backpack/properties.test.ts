import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Backpack, HistoryPrunedError } from '../../src/backpack/index.js';
import { trials } from '../support/soak.js';

const KEYS = ['a', 'b', 'c', 'd.e'];
const NODES = [undefined, 'n1', 'n2'];

const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.string({ maxLength: 6 }),
  fc.constant(undefined),
  fc.constant(null),
  fc.double({ noNaN: false }),
  fc.bigInt(),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('x', 'y', 'z'), fc.oneof(fc.integer(), fc.constant(undefined)), { maxKeys: 3, noNullPrototype: true }),
  fc.integer().map((n) => new Date(n)),
  fc.array(fc.tuple(fc.string({ maxLength: 2 }), fc.integer()), { maxLength: 2 }).map((e) => new Map(e)),
  fc.array(fc.integer(), { maxLength: 3 }).map((e) => new Set(e)),
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 3 }).map((e) => new Uint8Array(e)),
);

type Op =
  | { kind: 'pack'; key: string; value: unknown; node: string | undefined; tick: number }
  | { kind: 'unpack' | 'delete' | 'quarantine'; key: string; node: string | undefined; tick: number }
  | { kind: 'clear'; tick: number };

const keyArb = fc.constantFrom(...KEYS);
const nodeArb = fc.constantFrom(...NODES);
const tickArb = fc.integer({ min: 0, max: 3 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('pack' as const), key: keyArb, value: valueArb, node: nodeArb, tick: tickArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('unpack' as const, 'delete' as const, 'quarantine' as const), key: keyArb, node: nodeArb, tick: tickArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clear' as const), tick: tickArb }) },
);
const opsArb = fc.array(opArb, { maxLength: 40 });

/** A Backpack with the nodes of NODES registered, each in namespace `ns.<id>`. */
function withNodes(bp: Backpack): Backpack {
  for (const n of NODES) if (n !== undefined) bp.registerNode({ nodeId: n, nodeName: n, namespace: `ns.${n}` });
  return bp;
}

/** Applies `op` to the Backpack and to a naive model of its active state. */
function apply(bp: Backpack, model: Map<string, unknown>, op: Op): void {
  vi.advanceTimersByTime(op.tick);
  switch (op.kind) {
    case 'pack':
      bp.pack(op.key, op.value, op.node === undefined ? undefined : { nodeId: op.node });
      model.set(op.key, op.value);
      break;
    case 'unpack':
      bp.unpack(op.key, op.node);
      break;
    case 'delete':
      bp.delete(op.key, { nodeId: op.node });
      model.delete(op.key);
      break;
    case 'quarantine':
      bp.quarantine(op.key, { reason: 'r', nodeId: op.node });
      model.delete(op.key);
      break;
    case 'clear':
      bp.clear();
      model.clear();
      break;
  }
}

function asObject(model: Map<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(model);
}

describe('Backpack properties', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_700_000_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('the snapshot at commit i equals a naive replay of the operations up to it', () => {
    fc.assert(
      fc.property(opsArb, fc.integer({ min: 1, max: 6 }), (ops, keyframeInterval) => {
        const bp = withNodes(new Backpack(undefined, { keyframeInterval }));
        const model = new Map<string, unknown>();
        const expected: Record<string, unknown>[] = [];
        for (const op of ops) {
          const before = bp.headSeq;
          apply(bp, model, op);
          for (let s = before; s < bp.headSeq; s++) expected.push(asObject(model));
        }
        const history = bp.getHistory();
        expect(history.length).toBe(expected.length);
        history.forEach((c, i) => {
          expect(bp.getSnapshotAtCommit(c.commitId).toObject()).toStrictEqual(expected[i]);
          expect(bp.getSnapshot(c.timestamp).toObject()).toStrictEqual(expected[history.findLastIndex((x) => x.timestamp <= c.timestamp)]);
        });
        expect(bp.toObject()).toStrictEqual(asObject(model));
      }),
      { numRuns: trials(60, 750) },
    );
  });

  it('fromJSON(toJSON(b)) behaves exactly like b', () => {
    fc.assert(
      fc.property(opsArb, opsArb, fc.integer({ min: 1, max: 12 }), (ops, more, maxHistorySize) => {
        const bp = withNodes(new Backpack(undefined, { maxHistorySize, keyframeInterval: 3, maxValueBytes: 30 }));
        const model = new Map<string, unknown>();
        for (const op of ops) apply(bp, model, op);
        const back = Backpack.fromJSON(JSON.parse(JSON.stringify(bp.toJSON())));
        expect(back.toJSON()).toStrictEqual(bp.toJSON());
        const shadow = new Map(model);
        for (const op of more) {
          const t = Date.now();
          apply(bp, model, op);
          vi.setSystemTime(t);
          apply(back, shadow, op);
        }
        expect(back.toJSON()).toStrictEqual(bp.toJSON());
        expect(back.getHistory()).toStrictEqual(bp.getHistory());
        expect(back.toObject()).toStrictEqual(bp.toObject());
        expect(back.getQuarantined()).toStrictEqual(bp.getQuarantined());
        for (const c of bp.getHistory()) {
          expect(back.getSnapshotAtCommit(c.commitId).toObject()).toStrictEqual(bp.getSnapshotAtCommit(c.commitId).toObject());
        }
      }),
      { numRuns: trials(40, 500) },
    );
  });

  it('diff agrees with a naive comparison', () => {
    fc.assert(
      fc.property(opsArb, opsArb, (opsA, opsB) => {
        const a = withNodes(new Backpack());
        const b = withNodes(new Backpack());
        for (const op of opsA) apply(a, new Map(), op);
        for (const op of opsB) apply(b, new Map(), op);
        const d = Backpack.diff(a, b);
        for (const key of KEYS) {
          const inA = a.has(key);
          const inB = b.has(key);
          const changed = inA && inB && !isDeepStrictEqual(a.peek(key), b.peek(key));
          expect(d.added.includes(key)).toBe(!inA && inB);
          expect(d.deleted.includes(key)).toBe(inA && !inB);
          expect(d.modified.includes(key)).toBe(changed);
          if (d.details[key]) expect(d.details[key]!.after).toStrictEqual(b.peek(key));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('pruning never changes a retained snapshot, and refuses pruned ones', () => {
    fc.assert(
      fc.property(
        opsArb,
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 150, max: 2000 }),
        fc.integer({ min: 1, max: 5 }),
        (ops, maxHistorySize, maxHistoryBytes, keyframeInterval) => {
          const full = withNodes(new Backpack(undefined, { keyframeInterval: 4 }));
          const pruned = withNodes(new Backpack(undefined, { maxHistorySize, maxHistoryBytes, keyframeInterval }));
          for (const op of ops) {
            const t = Date.now();
            apply(full, new Map(), op);
            vi.setSystemTime(t);
            apply(pruned, new Map(), op);
          }
          const all = full.getHistory();
          const kept = pruned.getHistory();
          expect(kept.length).toBeLessThanOrEqual(maxHistorySize);
          if (kept.length > 0) expect(kept.at(-1)!.seq).toBe(pruned.headSeq);
          for (const c of kept) {
            expect(pruned.getSnapshotAtCommit(c.commitId).toObject()).toStrictEqual(full.getSnapshotAtCommit(all[c.seq - 1]!.commitId).toObject());
          }
          const lineage = (kept[0] ?? all[0])?.commitId.split('-')[0];
          const firstKept = kept[0]?.seq ?? pruned.headSeq + 1;
          if (firstKept > 1 && kept.length > 0) {
            expect(() => pruned.getSnapshotAtCommit(`${lineage}-${firstKept - 1}`)).toThrow(HistoryPrunedError);
          }
          expect(pruned.toObject()).toStrictEqual(full.toObject());
        },
      ),
      { numRuns: 150 },
    );
  });
});
