/**
 * Every event object node code obtains (its subscribers, getHistory, its own emit's return value) is a deeply
 * frozen copy of its own, so it cannot change what the owner's history, other subscribers or the run log record
 * (events/snapshot.ts; found by the adversarial review of 2026-11-28).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BackpackHandle } from '../../src/backpack/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';

function deepFrozen(v: unknown, seen = new Set<unknown>()): boolean {
  if (v === null || typeof v !== 'object' || seen.has(v)) return true;
  seen.add(v);
  if (!Object.isFrozen(v)) return false;
  return Reflect.ownKeys(v).every((k) => deepFrozen((v as Record<PropertyKey, unknown>)[k], seen));
}

const opArb = fc.record({ key: fc.constantFrom('a', 'b', 'c.d'), action: fc.constantFrom('pack', 'unpack', 'custom'), route: fc.constantFrom('default', 'x') });

describe('events node code holds are immutable (property)', () => {
  it('for any run of other nodes, each event the hostile node obtains is deeply frozen', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 5 }), async (ops) => {
        const mutable: string[] = [];
        class Evil extends BackpackNode {
          override exec() {
            const own = this.eventStreamer.emit({ type: 'custom', payload: { n: 1 } });
            if (!deepFrozen(own)) mutable.push(`emit:${own.type}`);
            this.eventStreamer.on('*', (e) => {
              if (!deepFrozen(e)) mutable.push(`on:${e.type}`);
            });
          }
        }
        class Worker extends BackpackNode {
          override post(bp: BackpackHandle) {
            for (const op of ops) {
              if (op.action === 'pack') bp.pack(op.key, { v: op.key });
              else if (op.action === 'unpack') bp.unpack(op.key);
              else this.emitEvent('custom', { op: op.key });
            }
            return ops[0]!.route;
          }
        }
        const flow = new Flow();
        flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Worker, { id: 'worker' }));
        await flow.run();
        expect(mutable).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });
});
