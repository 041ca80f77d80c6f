/**
 * A durable run whose node grows lists through proxies, getters that change their answer (or shrink the
 * array), sparse arrays and -0/NaN in place of stored elements: each recorded step reads back as the live state was
 * (the growth record and the quick pass of values.ts must never make the delta disagree with what was stored).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import type { BackpackHandle } from '../../src/index.js';
import { expectReplayEqualsLive } from '../support/replay.js';
import { trials } from '../support/soak.js';

const root = mkdtempSync(join(tmpdir(), 'bpf-replay-adversarial-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const leaf = fc.oneof(fc.constantFrom(0, -0, NaN, 1, 'a', null, undefined), fc.constant({ o: 1 }), fc.constant([1, 2]));
type Op = { op: 'grow' | 'proxy' | 'flip' | 'shrinkGetter' | 'sparse' | 'negzero' | 'nanAt'; key: 'a' | 'b'; v: unknown; at: number };
const op = fc.record({
  op: fc.constantFrom<Op['op']>('grow', 'proxy', 'flip', 'shrinkGetter', 'sparse', 'negzero', 'nanAt'),
  key: fc.constantFrom<'a' | 'b'>('a', 'b'),
  v: leaf,
  at: fc.nat(5),
});

function perform(b: BackpackHandle, o: Op): void {
  const cur = b.has(o.key) ? b.peek(o.key) : undefined;
  if (!Array.isArray(cur)) return;
  const j = cur.length === 0 ? 0 : o.at % cur.length;
  let next: unknown[];
  switch (o.op) {
    case 'grow':
      next = [...cur, o.v];
      break;
    case 'proxy': {
      let n = 0;
      next = new Proxy([...cur, o.v], { get: (t, p, r) => (p === String(j) && n++ > 0 ? o.v : Reflect.get(t, p, r)) });
      break;
    }
    case 'flip': {
      next = [...cur, o.v];
      let n = 0;
      if (cur.length > 0) Object.defineProperty(next, j, { get: () => (n++ === 0 ? cur[j] : o.v), enumerable: true });
      break;
    }
    case 'shrinkGetter': {
      const arr: unknown[] = [...cur, o.v];
      if (cur.length > 0) Object.defineProperty(arr, j, { get: () => ((arr.length = j + 1), cur[j]), enumerable: true, configurable: true });
      next = arr;
      break;
    }
    case 'sparse':
      next = new Array(cur.length + 1);
      for (let i = 0; i < cur.length; i++) if (i !== j) next[i] = cur[i];
      next[cur.length] = o.v;
      break;
    case 'negzero':
      next = [...cur.map((x) => (x === 0 ? (Object.is(x, 0) ? -0 : 0) : x)), o.v];
      break;
    case 'nanAt':
      next = [...cur, o.v];
      if (cur.length > 0) next[j] = NaN;
      break;
  }
  b.pack(o.key, next);
}

describe('replay equals live for adversarial growth (property)', () => {
  it('at every step', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { maxLength: 4 }), { minLength: 1, maxLength: 6 }), fc.constantFrom(1, 3, 1000), async (steps, keyframeInterval) => {
        await expectReplayEqualsLive({
          dataDir: root,
          runId: `s19-${++run}`,
          steps,
          keyframeInterval,
          perform: (backpack, _flow, o) => perform(backpack, o),
          input: { a: [0, NaN, 'x', { o: 1 }], b: [[1], -0] },
        });
      }),
      { numRuns: trials(25, 300) },
    );
  }, 300_000);
});
