/**
 * A structure that holds its secret in a `value` field under a secret-named key, with a list in it that grows each
 * step, costs per step the entry appended, as under a plain key (review s36, finding 4): it is stored whole only when
 * its `value` changes, comes or goes.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesUnder } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

const STEPS = 200;

async function checkpointBytes(item: string): Promise<number[]> {
  class Grows extends BackpackNode {
    override post(b: BackpackHandle): string {
      const cur = (b.peek(item) as { value: string; version: number; audit: number[] } | undefined) ?? { value: 'tok-1', version: 1, audit: [] };
      b.pack(item, { ...cur, audit: [...cur.audit, 1700000000000 + cur.audit.length] });
      return cur.audit.length + 1 < STEPS ? 'again' : 'done';
    }
  }
  const dataDir = makeTempDir('bf-value-cost-', 'test');
  const flow = new Flow({ namespace: 'x' });
  const node = flow.addNode(Grows, { id: 'g' });
  node.on('again', node);
  await runFlow(flow, { dataDir, runId: 'r', durability: 'never', keyframeInterval: 100_000 });
  const log = filesUnder(dataDir).find((f) => f.endsWith('events.jsonl'))!;
  return readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"checkpoint.saved"')).map((l) => Buffer.byteLength(l));
}

describe('a structure with a value field under a secret-named key, its list growing each step', () => {
  it('a late step costs about what an early one does, as under a plain key', async () => {
    const plain = await checkpointBytes('answer');
    const secret = await checkpointBytes('credentials');
    const late = (xs: number[]) => xs[xs.length - 1]!;
    const early = (xs: number[]) => xs[5]!;
    expect(late(plain), `control: plain key: step 5 ${early(plain)}, last ${late(plain)}`).toBeLessThan(early(plain) * 2);
    expect(late(secret), `secret-named key: step 5 ${early(secret)} bytes, last step ${late(secret)} bytes`).toBeLessThan(early(secret) * 2);
  }, 120_000);
});
