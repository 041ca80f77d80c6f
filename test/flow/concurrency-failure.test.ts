/**
 * A failing item of a ParallelBatchNode / ParallelBatchFlow with a concurrency limit: no item starts after the first
 * failure (mapConcurrent, src/flow/concurrency.ts), so a batch does not go on running items and writing shared state
 * after its run has failed. Found by the adversarial review of 2026-11-28.
 */
import { describe, expect, it } from 'vitest';
import { BaseFlow, Node, ParallelBatchFlow, ParallelBatchNode, mapConcurrent, type RunScope } from '../../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('parallel batches after a failure', () => {
  it('mapConcurrent starts no new call after the first rejection', async () => {
    const started: number[] = [];
    const run = mapConcurrent([0, 1, 2, 3, 4, 5], 2, async (i) => {
      started.push(i);
      if (i === 0) throw new Error('item 0 failed');
      await sleep(20);
      return i;
    });
    await expect(run).rejects.toThrow('item 0 failed');
    const atRejection = [...started];
    await sleep(200);
    expect(atRejection).toEqual([0, 1]);
    expect(started).toEqual(atRejection); // nothing started once the map had rejected
  });

  it('a ParallelBatchNode whose item fails starts no other item after its run failed (no writes to shared state after the failure)', async () => {
    type S = { log: string[] };
    class Items extends ParallelBatchNode<S, number, number> {
      override prep(): number[] {
        return [0, 1, 2, 3, 4, 5];
      }
      override async exec(i: number): Promise<number> {
        if (i === 0) throw new Error('item 0 failed');
        await sleep(20);
        return i;
      }
      override post(): undefined {
        return undefined;
      }
    }
    // exec cannot see the shared state; record what started through a spy on exec's item
    const startedAfterFailure: number[] = [];
    let failed = false;
    class Spy extends Items {
      override async exec(i: number): Promise<number> {
        if (failed) startedAfterFailure.push(i);
        return super.exec(i);
      }
    }
    const node = new Spy({ concurrency: 2 } as never);
    const flow = new BaseFlow<S>({ start: node } as never);
    const shared: S = { log: [] };
    await expect(flow.run(shared)).rejects.toThrow();
    failed = true;
    await sleep(200);
    expect(startedAfterFailure).toEqual([]);
  });

  it('a ParallelBatchFlow whose batch fails starts no other batch run after the flow failed', async () => {
    type S = { written: string[] };
    let failedAt = -1;
    const late: string[] = [];
    class Work extends Node<S> {
      override prep(shared: S, scope: RunScope): string {
        const f = String(scope.params.file);
        if (failedAt >= 0) late.push(f);
        shared.written.push(f);
        return f;
      }
      override async exec(f: string): Promise<void> {
        if (f === 'a') throw new Error('a failed');
        await sleep(20);
      }
    }
    class PerFile extends ParallelBatchFlow<S> {
      override prep() {
        return ['a', 'b', 'c', 'd', 'e', 'f'].map((file) => ({ file }));
      }
    }
    const batch = new PerFile({ start: new Work(), concurrency: 2 } as never);
    const shared: S = { written: [] };
    await expect(batch.run(shared)).rejects.toThrow();
    failedAt = shared.written.length;
    await sleep(300);
    expect(late).toEqual([]);
  });
});
