/**
 * The backpack handle a node's prep and post are given acts only while that execution runs: a timer or a promise the
 * node leaves running must not read or write in a later step (its commit would land in another node's step).
 */
import { describe, expect, it } from 'vitest';
import { BackpackError, BackpackNode, Flow } from '../../src/index.js';

type Handle = Parameters<BackpackNode['post']>[0];

describe('a node execution closes its backpack handle when it ends', () => {
  it('a handle kept past post: every operation throws, naming the node; the state keeps nothing of it', async () => {
    const late: unknown[] = [];
    let done!: () => void;
    const fired = new Promise<void>((resolve) => (done = resolve));
    class Leaky extends BackpackNode {
      override post(backpack: Handle): undefined {
        backpack.pack('inTime', 1);
        setTimeout(() => {
          for (const op of [() => backpack.pack('late', 1), () => backpack.unpack('inTime'), () => backpack.peek('inTime'), () => backpack.has('inTime'), () => backpack.keys(), () => backpack.delete('inTime'), () => backpack.quarantine('inTime', { reason: 'late' })]) {
            try {
              op();
              late.push('allowed');
            } catch (error) {
              late.push(error);
            }
          }
          done();
        }, 0);
        return undefined;
      }
    }
    class Slow extends BackpackNode {
      override async exec(): Promise<void> {
        await fired;
      }
    }
    const flow = new Flow({ namespace: 'h' });
    flow.addNode(Leaky, { id: 'leaky' }).next(flow.addNode(Slow, { id: 'slow' }));
    await flow.run();
    expect(late).toHaveLength(7);
    for (const error of late) {
      expect(error).toBeInstanceOf(BackpackError);
      expect((error as Error).message).toMatch(/^Node 'leaky': its backpack handle is closed, its execution ended/);
    }
    expect(flow.backpack.has('late')).toBe(false);
    expect(flow.backpack.peek('inTime')).toBe(1);
    expect(flow.backpack.getQuarantined().size).toBe(0);
  });

  it('the next execution of the same node gets a working handle of its own', async () => {
    const seen: number[] = [];
    class Loop extends BackpackNode {
      override post(backpack: Handle): string | undefined {
        const n = ((backpack.unpack('n') as number | undefined) ?? 0) + 1;
        backpack.pack('n', n);
        seen.push(n);
        return n < 3 ? 'again' : undefined;
      }
    }
    const flow = new Flow({ namespace: 'h' });
    const node = flow.addNode(Loop, { id: 'loop' });
    node.on('again', node);
    await flow.run();
    expect(seen).toEqual([1, 2, 3]);
  });
});
