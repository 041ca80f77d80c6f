/**
 * A value under a secret-named key that a node grows each step costs, per step, what was appended, as under a plain
 * key: an object with a list in it (review s34, finding 3: a fix of s33 stored every patch under a secret-named key
 * whole, and the log grew quadratically), and a structure that holds its secret in a `value` field (review s36,
 * finding 4: stored whole at every step). Only a value whose shape decides its redaction (an item's, the codec's
 * encoded form, a replacement's), or whose `value` field changes, comes or goes, is stored whole.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesUnder } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

const STEPS = 200;

/** The next value of a step: `undefined` the first time. */
type Grow = (current: Record<string, unknown> | undefined) => Record<string, unknown>;

/** The bytes of each step's checkpoint.saved event (which carries the step's state delta). */
async function checkpointBytes(item: string, grow: Grow): Promise<number[]> {
  class Grows extends BackpackNode {
    override post(b: BackpackHandle): string {
      const i = ((b.peek('i') as number | undefined) ?? 0) + 1;
      b.pack('i', i);
      b.pack(item, grow(b.peek(item) as Record<string, unknown> | undefined));
      return i < STEPS ? 'again' : 'done';
    }
  }
  const dataDir = makeTempDir('bf-cost-', 'test');
  const flow = new Flow({ namespace: 'x' });
  const node = flow.addNode(Grows, { id: 'g' });
  node.on('again', node);
  await runFlow(flow, { dataDir, runId: 'r', durability: 'never', keyframeInterval: 100_000 });
  const log = filesUnder(dataDir).find((f) => f.endsWith('events.jsonl'))!;
  return readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"checkpoint.saved"')).map((l) => Buffer.byteLength(l));
}

const cookieJar: Grow = (cur) => {
  const jar = (cur?.['jar'] as string[] | undefined) ?? [];
  return { label: 'browser session', jar: [...jar, `cookie-${jar.length}-${'x'.repeat(80)}`] };
};
const secretWithAudit: Grow = (cur) => {
  const audit = (cur?.['audit'] as number[] | undefined) ?? [];
  return { value: 'tok-1', version: 1, audit: [...audit, 1700000000000 + audit.length] };
};

describe('a value under a secret-named key that grows each step', () => {
  it.each([
    ['an object with a list in it', cookieJar, 'browserJar', 'cookies'],
    ['a structure with a value field and a list', secretWithAudit, 'answer', 'credentials'],
  ])('%s: a late step costs about what an early one does, as under a plain key', async (_what, grow, plainKey, secretKey) => {
    const plain = await checkpointBytes(plainKey, grow);
    const secret = await checkpointBytes(secretKey, grow);
    const late = (xs: number[]) => xs[xs.length - 1]!;
    const early = (xs: number[]) => xs[5]!;
    expect(late(plain), `plain key: step 5 ${early(plain)}, last ${late(plain)}`).toBeLessThan(early(plain) * 2);
    expect(late(secret), `secret-named key: step 5 ${early(secret)} bytes, last step ${late(secret)} bytes`).toBeLessThan(early(secret) * 2);
  }, 120_000);
});
