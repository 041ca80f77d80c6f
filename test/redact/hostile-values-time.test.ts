/**
 * Redacting a value costs time in proportion to its size, whatever its shape (review s36, finding 1: the `value`
 * field rule walked a `value` twice, and a chain of `{ name: 'password', value: … }` cost 2^depth: 26 levels, 1.3 KB,
 * took 4.6 s in a run). The bounds are generous (tens of times the measured time) so that only a super-linear walk
 * fails them.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { makeTempDir } from '../support/temp.js';

function named(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = { name: 'password', value: v };
  return v;
}
function padded(depth: number, width: number): unknown {
  const pad = Array.from({ length: width }, (_, i) => `x${i}`);
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = { value: v, pad };
  return v;
}
function ms(f: () => unknown): number {
  const t = performance.now();
  f();
  return performance.now() - t;
}

describe('the value-field rule costs time in proportion to the input', () => {
  it('redact(): 24 levels of { name: "password", value } (about 1 KB) under a secret-named key', () => {
    expect(JSON.stringify(named(24)).length).toBeLessThan(1200);
    expect(ms(() => redact({ secret: named(24) }))).toBeLessThan(1000);
  }, 60_000);

  it('redact(): the same at top level (a sibling-named value, no secret-named key above)', () => {
    expect(ms(() => redact({ result: named(24) }))).toBeLessThan(1000);
  }, 60_000);

  it('redact(): 400 levels of { value, pad: [200 strings] } under a secret-named key, against a plain key', () => {
    const v = padded(400, 200);
    const control = ms(() => redact({ other: v }));
    const secret = ms(() => redact({ secret: v }));
    // 80 000 strings: linear work is a few ms; re-walking each level's subtree is ~16 M string visits (seconds).
    expect(secret).toBeLessThan(Math.max(1000, 20 * control));
  }, 60_000);

  class Packs extends BackpackNode {
    override post(b: BackpackHandle): undefined {
      b.pack('toolResult', named(26));
      return undefined;
    }
  }
  it('a run that packs a 1.3 KB tool result of that shape finishes quickly', async () => {
    const dataDir = makeTempDir('bf-value-chain-', 'test');
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(Packs, { id: 'n' });
    const t = performance.now();
    await runFlow(flow, { dataDir, runId: 'r' });
    expect(performance.now() - t).toBeLessThan(3000);
  }, 120_000);
});
