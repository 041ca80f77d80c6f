/**
 * Object keys that hold a secret (a map keyed by tokens) are stored under a name that depends on the key alone, and a
 * step's delta that changes or deletes such a key is stored so that it lands on that key's entry: the state recorded
 * at every step is the live state as the store redacts it, whatever the keys and wherever the keyframes fall.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, encodeValue, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-redacted-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const t1 = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const t2 = 'ghp_' + 'Z1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r9';
const t3 = 'sk-ant-api03-' + 'x'.repeat(20) + 'Y7' + 'z'.repeat(70) + 'AA';

async function twoSteps(runId: string, edit: (cur: Record<string, number>) => Record<string, number>): Promise<void> {
  const flow = new Flow({ namespace: 'm' });
  class A extends BackpackNode { override post(b: BackpackHandle) { b.pack('usage', { [t1]: 1, [t2]: 2, plain: 0 }); return undefined; } }
  class B extends BackpackNode { override post(b: BackpackHandle) { b.pack('usage', edit(b.peek('usage') as Record<string, number>)); return undefined; } }
  flow.addNode(A, { id: 'a' }).next(flow.addNode(B, { id: 'b' }));
  await runFlow(flow, { dataDir: dir, runId, durability: 'never' });
}
const values = async (runId: string, step: number) => Object.values((await loadRunPoint({ dataDir: dir, runId, step })).state.items['usage']!.value as Record<string, number>);

describe('secret-looking object keys in recorded states', () => {
  it('deleting the second secret-named key keeps the first entry (value 1) in the recorded state, as in the live state', async () => {
    await twoSteps('del-second', (cur) => { const { [t2]: _gone, ...rest } = cur; return { ...rest, plain: 5 }; });
    expect(await values('del-second', 1)).toEqual([1, 2, 0]);
    expect(await values('del-second', 2)).toEqual([1, 5]);
  }, 15_000);

  it('changing the second secret-named key changes that entry in the recorded state, not the first', async () => {
    await twoSteps('set-second', (cur) => ({ ...cur, [t2]: 3, plain: 5 }));
    expect(await values('set-second', 2)).toEqual([1, 3, 5]);
  }, 15_000);

  it('a key is stored under the same name in every record, and no stored name holds the key', async () => {
    await twoSteps('names', (cur) => { const { [t1]: _gone, ...rest } = cur; return rest; });
    const one = Object.keys((await loadRunPoint({ dataDir: dir, runId: 'names', step: 1 })).state.items['usage']!.value as object);
    const two = Object.keys((await loadRunPoint({ dataDir: dir, runId: 'names', step: 2 })).state.items['usage']!.value as object);
    expect(two).toEqual([one[1], 'plain']);
    for (const name of one) expect(name.includes('ghp_') || name.includes('A1b2C3') || name.includes('Z1b2C3')).toBe(false);
  }, 15_000);

  const POOL = [t1, t2, t3, 'plain', 'other', `k_${t1}`, '[REDACTED]'];
  type Op = { kind: 'set'; key: string; value: number; nested: boolean } | { kind: 'delete'; key: string; nested: boolean } | { kind: 'replace' };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...POOL), value: fc.integer({ min: 0, max: 99 }), nested: fc.boolean() }),
    fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...POOL), nested: fc.boolean() }),
    fc.constant({ kind: 'replace' as const }),
  );

  it('property: the recorded state at every step equals the live state as redacted, for any keys including secret-looking ones', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), fc.constantFrom(1, 2, 100), async (script, keyframeInterval) => {
        const runId = `p${n++}`;
        const live: unknown[] = [];
        class Stepper extends BackpackNode {
          override post(b: BackpackHandle): string {
            const i = (b.peek('__i') as number | undefined) ?? 0;
            let usage = { ...((b.peek('usage') as Record<string, unknown> | undefined) ?? {}) };
            for (const o of script[i]!) {
              if (o.kind === 'replace') usage = { [t2]: i, plain: i };
              else {
                const nested = { ...((usage['by'] as Record<string, number> | undefined) ?? {}) };
                const target: Record<string, unknown> = o.nested ? nested : usage;
                if (o.kind === 'set') target[o.key] = o.value;
                else delete target[o.key];
                if (o.nested) usage['by'] = nested;
              }
            }
            b.pack('usage', usage);
            b.pack('__i', i + 1);
            live[i + 1] = redact(encodeValue(usage)).value;
            return i + 1 < script.length ? 'again' : 'done';
          }
        }
        const flow = new Flow({ namespace: 'm' });
        const node = flow.addNode(Stepper, { id: 'stepper' });
        node.on('again', node);
        await runFlow(flow, { dataDir: dir, runId, durability: 'never', keyframeInterval });
        for (let step = 1; step <= script.length; step++) {
          const point = await loadRunPoint({ dataDir: dir, runId, step });
          expect(point.warnings).toEqual([]);
          expect(point.state.items['usage']!.value, `step ${step}`).toStrictEqual(live[step]);
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
