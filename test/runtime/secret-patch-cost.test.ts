/**
 * An object under a secret-named key that holds a list a node grows each step costs, per step, the entry appended,
 * as under a plain key (review s34, finding 3: a fix of s33 replaced every patch under a secret-named key whole, and
 * the log grew quadratically). Only a value whose redaction depends on its whole shape right under the key (a
 * Backpack item's, the codec's encoded form, a replacement's) is stored whole.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesUnder } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

const STEPS = 400;

/** The bytes of each step's checkpoint.saved event (which carries the step's state delta). */
async function checkpointBytes(item: string): Promise<number[]> {
  class Grows extends BackpackNode {
    override post(b: BackpackHandle): string {
      const cur = (b.peek(item) as { label: string; jar: string[]; n: number } | undefined) ?? { label: 'browser session', jar: [], n: 0 };
      b.pack(item, { label: cur.label, jar: [...cur.jar, `cookie-${cur.n}-` + 'x'.repeat(80)], n: cur.n + 1 });
      return cur.n + 1 < STEPS ? 'again' : 'done';
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

describe('an object under a secret-named key that grows a list each step', () => {
  it('a step late in the run costs about what an early one does, as under a plain key', async () => {
    const plain = await checkpointBytes('browserJar');
    const secret = await checkpointBytes('cookies');
    const late = (xs: number[]) => xs[xs.length - 1]!;
    const early = (xs: number[]) => xs[5]!;
    expect(late(plain), 'control: plain key').toBeLessThan(early(plain) * 2);
    expect(late(secret), `secret-named key: step 5 ${early(secret)} bytes, last step ${late(secret)} bytes`).toBeLessThan(early(secret) * 2);
  }, 120_000);
});
