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
import { trials } from '../support/soak.js';

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

  const POOL = [t1, t2, t3, 'plain', 'other', 'keep', `k_${t1}`, '[REDACTED]', 'auth', 'name', 'value', '$schema'];
  /** Where an op acts in the item's value: at its top, in a plain object, under a secret-named key, or deeper under one. */
  const PLACES = [[], ['by'], ['credentials'], ['by', 'apiKeys']] as const;
  /** Values whose redaction depends on where they are (a secret name in `name`, a Basic credential under `auth`, a schema dialect). */
  const VALUES = [0, 7, 'alpha', 'DB_PASSWORD', 'dXNlcjpwYXNzd29yZA==', 'https://json-schema.org/draft/2020-12/schema', '--password', 'hunter2-plain'];
  type Place = (typeof PLACES)[number];
  type Op =
    | { kind: 'set'; key: string; value: unknown; at: Place }
    | { kind: 'delete'; key: string; at: Place }
    | { kind: 'append'; value: unknown }
    | { kind: 'replace' };
  const op: fc.Arbitrary<Op> = fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...POOL), value: fc.constantFrom(...VALUES), at: fc.constantFrom(...PLACES) }), weight: 3 },
    // Deletes of keys the value holds (a replace puts some there) are what a patch lists as text.
    { arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...POOL), at: fc.constantFrom(...PLACES) }), weight: 3 },
    { arbitrary: fc.record({ kind: fc.constant('append' as const), value: fc.constantFrom(...VALUES) }), weight: 1 },
    { arbitrary: fc.constant({ kind: 'replace' as const }), weight: 2 },
  );
  /** `value` with `edit` applied to a copy of the object at `path` (copies made on the way down, as a node would). */
  const edited = (value: Record<string, unknown>, path: readonly string[], edit: (target: Record<string, unknown>) => void): Record<string, unknown> => {
    const copy = { ...value };
    if (path.length === 0) edit(copy);
    else {
      const inner = copy[path[0]!];
      copy[path[0]!] = edited(inner !== null && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {}, path.slice(1), edit);
    }
    return copy;
  };

  it('property: the recorded state at every step equals the live state as redacted, for any keys including secret-looking ones, under secret-named keys, and with deletes between keyframes', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }),
        fc.constantFrom(1, 3, 100, 100),
        // The item's own key: a plain one, or a secret-named one (everything under it blanked).
        fc.constantFrom('usage', 'accessTokens'),
        async (script, keyframeInterval, item) => {
          const runId = `p${n++}`;
          const live: unknown[] = [];
          class Stepper extends BackpackNode {
            override post(b: BackpackHandle): string {
              const i = (b.peek('__i') as number | undefined) ?? 0;
              let usage = { ...((b.peek(item) as Record<string, unknown> | undefined) ?? {}) };
              for (const o of script[i]!) {
                if (o.kind === 'replace') usage = { [t2]: i, plain: i, credentials: { keep: 'x', [t1]: i, other: 'y' }, by: { apiKeys: { keep: 'x', plain: i }, name: 'DB_PASSWORD', value: 'v' } };
                else if (o.kind === 'append') usage = { ...usage, args: [...((usage['args'] as unknown[] | undefined) ?? []), o.value] };
                else if (o.kind === 'set') usage = edited(usage, o.at, (target) => void (target[o.key] = o.value));
                else usage = edited(usage, o.at, (target) => void delete target[o.key]);
              }
              b.pack(item, usage);
              b.pack('__i', i + 1);
              live[i + 1] = redact({ [item]: encodeValue(usage) }).value[item];
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
            expect(point.state.items[item]!.value, `step ${step}`).toStrictEqual(live[step]);
          }
        },
      ),
      { numRuns: trials(20, 250) },
    );
  }, 180_000);
});
