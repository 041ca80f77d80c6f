/**
 * The state a durable run records at each step reads back as the live state was, whatever the step did: lists grown
 * (at the top or inside an object, or packed under another key), changed in place, shrunk, packed again from an older
 * value, deleted, quarantined, values above maxValueBytes, and the whole state replaced with importState. Guards the
 * growth record (a grown list's delta is its appended items: values.ts, json-delta.ts) and the state tracker's
 * "what changed since" (backpack.ts changedKeysSince), which an importState once fooled (audit s18, H1).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import { trials } from '../support/soak.js';
import type { BackpackHandle, Flow } from '../../src/index.js';
import { expectReplayEqualsLive } from '../support/replay.js';

const root = mkdtempSync(join(tmpdir(), 'bpf-replay-growth-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const leaf = fc.oneof(
  fc.string({ maxLength: 3, unit: fc.constantFrom('a', 'b') }),
  fc.constantFrom(0, -0, NaN, 1, undefined, null),
  fc.constant('big'.repeat(30)),
  fc.integer({ min: 0, max: 5 }).map((t) => new Date(t)),
  fc.constant({ o: 1 }),
  fc.constant([1, 2]),
);
const key = fc.constantFrom('a', 'b', 'c');
type Op =
  | { op: 'grow' | 'growNested' | 'growOther' | 'set0' | 'nestNew'; key: string; v: unknown; other: string }
  | { op: 'pack'; key: string; v: unknown }
  | { op: 'delete' | 'quarantine' | 'repack' | 'shrink' | 'restoreOld' | 'snapshot' | 'import' | 'importEmpty'; key: string };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constantFrom('grow' as const, 'growNested' as const, 'growOther' as const, 'set0' as const, 'nestNew' as const), key, v: leaf, other: key }),
  fc.record({ op: fc.constant('pack' as const), key, v: fc.oneof(fc.array(leaf, { maxLength: 3 }), fc.record({ list: fc.array(leaf, { maxLength: 3 }) }), leaf) }),
  fc.record({ op: fc.constantFrom('delete' as const, 'quarantine' as const, 'repack' as const, 'shrink' as const, 'restoreOld' as const, 'snapshot' as const, 'import' as const, 'importEmpty' as const), key }),
);

function perform(b: BackpackHandle, o: Op, old: Map<string, unknown>): void {
  const cur = b.has(o.key) ? b.peek(o.key) : undefined;
  switch (o.op) {
    case 'grow':
      if (Array.isArray(cur)) b.pack(o.key, [...cur, o.v]);
      return;
    case 'growNested':
      if (cur && typeof cur === 'object' && !Array.isArray(cur) && Array.isArray((cur as { list?: unknown }).list)) b.pack(o.key, { ...cur, list: [...(cur as { list: unknown[] }).list, o.v] });
      return;
    case 'growOther':
      if (Array.isArray(cur)) b.pack(o.other, [...cur, o.v]);
      return;
    case 'set0':
      if (Array.isArray(cur) && cur.length > 0) b.pack(o.key, [o.v, ...cur.slice(1), o.v]);
      return;
    case 'nestNew':
      if (Array.isArray(cur)) b.pack(o.key, [...cur.map((x) => (Array.isArray(x) ? [...x, o.v] : x)), o.v]);
      return;
    case 'pack':
      return b.pack(o.key, o.v);
    case 'delete':
      b.delete(o.key);
      return;
    case 'quarantine':
      b.quarantine(o.key, { reason: 't' });
      return;
    case 'repack':
      if (b.has(o.key)) {
        b.delete(o.key);
        b.pack(o.key, cur);
      }
      return;
    case 'shrink':
      if (Array.isArray(cur)) b.pack(o.key, cur.slice(0, -1));
      return;
    case 'snapshot':
      if (cur !== undefined) old.set(o.key, cur);
      return;
    case 'restoreOld':
      if (old.has(o.key)) b.pack(o.key, old.get(o.key));
      return;
    default:
      return; // 'import' and 'importEmpty': the owner's (performAny)
  }
}

/** One operation of a step: the node's own through its handle, or the owner's replacing the whole state. */
function performAny(backpack: BackpackHandle, flow: Flow, o: Op, old: Map<string, unknown>): void {
  if (o.op === 'import') flow.backpack.importState(flow.backpack.exportState());
  else if (o.op === 'importEmpty') flow.backpack.importState({ version: 1, items: {}, quarantined: {} });
  else perform(backpack, o, old);
}

describe('replay of a durable run equals the live state (property)', () => {
  for (const maxValueBytes of [undefined, 40]) {
    it(`at every step, for any mix of packs, growth, deletes, quarantines and importState (maxValueBytes ${maxValueBytes ?? 'default'})`, async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(op, { maxLength: 5 }), { minLength: 1, maxLength: 8 }), fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(1000)), async (steps, keyframeInterval) => {
          const old = new Map<string, unknown>();
          await expectReplayEqualsLive({
            dataDir: root,
            runId: `g${maxValueBytes ?? 0}-${++run}`,
            steps,
            keyframeInterval,
            perform: (backpack, flow, o) => performAny(backpack, flow, o, old),
            input: { a: ['x'], b: { list: ['y'] }, c: [[1]] },
            ...(maxValueBytes ? { backpackOptions: { maxValueBytes } } : {}),
          });
        }),
        { numRuns: trials(40, 600) },
      );
    }, 300_000);
  }
});
