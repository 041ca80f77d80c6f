/**
 * A number under a secret-named key never reaches the disk (review s31, finding 1): not in the step's delta in
 * `events.jsonl`, not in a keyframe, not in what `loadRunPoint` reads back; the README's own `secretKeys: ['pin',
 * 'ssn']` example holds numbers. Before, the value summary was blanked while the stored state beside it kept the number.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesHolding } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

function flowPacking(values: Record<string, unknown>): Flow {
  class Pack extends BackpackNode {
    override post(backpack: BackpackHandle): undefined {
      for (const [key, value] of Object.entries(values)) backpack.pack(key, value);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  flow.addNode(Pack, { id: 'pack' });
  return flow;
}

describe('numbers under secret-named keys, on disk', () => {
  it('a numeric password in a packed config: not in the log, the keyframe or what is read back', async () => {
    const dataDir = makeTempDir('bf-secret-numbers-', 'test');
    await runFlow(flowPacking({ db: { host: 'db.internal', port: 5432, password: 58203917 } }), { dataDir, runId: 'r1', keyframeInterval: 1 });
    expect(filesHolding(dataDir, '58203917')).toEqual([]);
    expect(filesHolding(dataDir, '"port":5432').length).toBeGreaterThan(0);
    const point = await loadRunPoint({ dataDir, runId: 'r1', step: 1 });
    expect(point.state.items['db']?.value).toEqual({ host: 'db.internal', port: 5432, password: '[REDACTED]' });
  });

  it('a number packed right under a secret-named key, and one changed inside a value later (a patch): on no file', async () => {
    class Steps extends BackpackNode {
      override post(backpack: BackpackHandle): string | undefined {
        const n = ((backpack.unpack('n') as number | undefined) ?? 0) + 1;
        backpack.pack('n', n);
        if (n === 1) {
          backpack.pack('password', 58203917);
          backpack.pack('customer', { name: 'Ann', pin: 48213, tier: 'gold' });
        } else backpack.pack('customer', { name: 'Ann', pin: 77031, tier: 'gold' });
        return n < 3 ? 'again' : undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const node = flow.addNode(Steps, { id: 'steps' });
    node.on('again', node);
    const dataDir = makeTempDir('bf-secret-numbers-', 'test');
    await runFlow(flow, { dataDir, runId: 'r3', redaction: { secretKeys: ['pin'] } });
    for (const n of ['58203917', '48213', '77031']) expect(filesHolding(dataDir, n)).toEqual([]);
    const point = await loadRunPoint({ dataDir, runId: 'r3', step: 2 });
    expect(point.state.items['password']?.value).toBe('[REDACTED]');
    expect(point.state.items['customer']?.value).toEqual({ name: 'Ann', pin: '[REDACTED]', tier: 'gold' });
  });

  it('a secret-named key inside a secret-named structure, and a value shaped like a Backpack item, changed by a step: the same state wherever the keyframes fall, and no number on disk (review s33)', async () => {
    class Versions extends BackpackNode {
      override post(backpack: BackpackHandle): string | undefined {
        const n = ((backpack.unpack('n') as number | undefined) ?? 0) + 1;
        backpack.pack('n', n);
        backpack.pack('cfg', { label: 'vault answer', apiKey: { value: n === 1 ? 12345678 : 87654321, metadata: { version: 'v1' } } });
        backpack.pack('credentials', { username: 'ann', password: n === 1 ? 58203917 : 61728394 });
        return n < 2 ? 'again' : undefined;
      }
    }
    const states: unknown[] = [];
    for (const keyframeInterval of [1, 100]) {
      const flow = new Flow({ namespace: 'app' });
      const node = flow.addNode(Versions, { id: 'v' });
      node.on('again', node);
      const dataDir = makeTempDir('bf-secret-numbers-', 'test');
      await runFlow(flow, { dataDir, runId: 'r', keyframeInterval });
      for (const n of ['12345678', '87654321', '58203917', '61728394']) expect(filesHolding(dataDir, n), `keyframeInterval ${keyframeInterval}`).toEqual([]);
      const { items } = (await loadRunPoint({ dataDir, runId: 'r', step: 2 })).state;
      states.push({ cfg: items['cfg']?.value, credentials: items['credentials']?.value });
    }
    expect(states[0]).toEqual({ cfg: { label: 'vault answer', apiKey: { value: '[REDACTED]', metadata: { version: '[REDACTED]' } } }, credentials: { username: '[REDACTED]', password: '[REDACTED]' } });
    expect(states[1]).toEqual(states[0]);
  });

  it("the README's example, secretKeys ['pin', 'ssn'], with the numbers they hold", async () => {
    const dataDir = makeTempDir('bf-secret-numbers-', 'test');
    await runFlow(flowPacking({ customer: { name: 'Ann', pin: 48213, ssn: 123456789 } }), { dataDir, runId: 'r2', keyframeInterval: 1, redaction: { secretKeys: ['pin', 'ssn'] } });
    expect(filesHolding(dataDir, '48213')).toEqual([]);
    expect(filesHolding(dataDir, '123456789')).toEqual([]);
  });
});
