/**
 * Review s51b (4): a run whose state changes a JSON Web Key's members across steps: the state loadRunPoint rebuilds at
 * every step (keyframes and deltas, keyframes anywhere) equals the live state as redacted.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, encodeValue, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-audit-s51b-jwk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEYS = ['kty', 'crv', 'd', 'k', 'p', 'dp', 'x', 'alg', 'name', 'value'];
const VALUES = ['oct', 'EC', 'GawgguFyGrWKav7AX4VKUg', 'plain', 7, null, { inner: 'GawgguFyGrWKav7AX4VKUg' }, ['a', 'b'], 'DB_PASSWORD'];
const PLACES = [[], ['jwk'], ['keys', 'k']] as const;
type Op = { kind: 'set'; key: string; value: unknown; at: readonly string[] } | { kind: 'delete'; key: string; at: readonly string[] };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...KEYS), value: fc.constantFrom(...VALUES), at: fc.constantFrom(...PLACES) }),
  fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...KEYS), at: fc.constantFrom(...PLACES) }),
);
const edited = (value: Record<string, unknown>, path: readonly string[], edit: (t: Record<string, unknown>) => void): Record<string, unknown> => {
  const copy = { ...value };
  if (path.length === 0) edit(copy);
  else {
    const inner = copy[path[0]!];
    copy[path[0]!] = edited(inner !== null && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {}, path.slice(1), edit);
  }
  return copy;
};

describe('review s51b: JWK members across steps', () => {
  it('property: recorded state at every step equals the live state as redacted', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 7 }), fc.constantFrom(1, 3, 100), async (script, keyframeInterval) => {
        const runId = `j${n++}`;
        const live: unknown[] = [];
        class Stepper extends BackpackNode {
          override post(b: BackpackHandle): string {
            const i = (b.peek('__i') as number | undefined) ?? 0;
            let v = { ...((b.peek('signer') as Record<string, unknown> | undefined) ?? { kty: 'oct', k: 'GawgguFyGrWKav7AX4VKUg' }) };
            for (const o of script[i]!) v = edited(v, o.at, (t) => (o.kind === 'set' ? void (t[o.key] = o.value) : void delete t[o.key]));
            b.pack('signer', v);
            b.pack('__i', i + 1);
            live[i + 1] = redact({ signer: encodeValue(v) }).value['signer'];
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
          expect(point.state.items['signer']!.value, `step ${step}`).toStrictEqual(live[step]);
        }
      }),
      { numRuns: 120 },
    );
  }, 300_000);
});
