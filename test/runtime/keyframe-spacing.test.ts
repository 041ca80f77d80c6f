/**
 * Keyframes of a large state are spaced by their size (RunFlowOptions.keyframeInterval): the size is known when the
 * keyframe is taken, so the rule holds for a flow that never yields to the event loop (no write finishes before its
 * end), where it once took a keyframe of the whole state every `keyframeInterval` steps.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, type BackpackHandle } from '../../src/index.js';
import { loadRunPoint, runFlow } from '../../src/runtime/index.js';
import { FileRunStore } from '../../src/store/index.js';

const dataDir = mkdtempSync(join(tmpdir(), 'bpf-keyframes-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Appends a 200-byte entry to a list per step, synchronously (the run never waits for I/O). */
class Append extends BackpackNode<string[], string[]> {
  override prep(backpack: BackpackHandle): string[] {
    return (backpack.unpack('log') as string[] | undefined) ?? [];
  }
  override exec(log: string[]): string[] {
    return [...log, `${log.length} ${'x'.repeat(190)}`];
  }
  override post(backpack: BackpackHandle, _prev: string[], next: string[]): string | undefined {
    backpack.pack('log', next);
    return next.length < (this.config['until'] as number) ? 'again' : undefined;
  }
}

function appending(from: number, steps: number): Flow {
  const flow = new Flow({ namespace: 'grow', maxSteps: steps + 1 });
  const node = flow.addNode(Append, { id: 'append', until: from + steps });
  node.on('again', node);
  return flow;
}

describe('keyframe spacing', () => {
  for (const durability of ['never', 'batch'] as const) {
    it(`with a large state (${durability}), the log grows by at least the last keyframe's size before the next one`, async () => {
      const runId = `large-${durability}`;
      const input = { log: Array.from({ length: 2000 }, (_, i) => `${i} ${'x'.repeat(190)}`) };
      await runFlow(appending(2000, 600), { dataDir, runId, durability, keyframeInterval: 100, input });
      const store = new FileRunStore(dataDir);
      const ref = { sessionKey: 'default', runId };
      const steps = await store.keyframeSteps(ref);
      // Each line's end in the log, to measure how much it grew between two keyframes' steps.
      const ends: number[] = [];
      let at = 0;
      for (const line of readFileSync(join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl'), 'utf8').split('\n').slice(0, -1)) ends.push((at += Buffer.byteLength(line) + 1));
      const keyframes = await Promise.all(steps.map(async (step) => ({ step, line: (await store.loadKeyframe(ref, step))!.line!, bytes: statSync(store.describeKeyframe(ref, step)).size })));
      expect(keyframes.length).toBeGreaterThanOrEqual(2);
      expect(keyframes[0]!.step).toBe(100);
      for (let i = 1; i < keyframes.length; i++) {
        const previous = keyframes[i - 1]!;
        expect(keyframes[i]!.step - previous.step).toBeGreaterThan(100);
        expect(ends[keyframes[i]!.line]! - ends[previous.line]!).toBeGreaterThanOrEqual(previous.bytes);
      }
      // Fewer keyframes, the same answers: the last step reads back as the run left it.
      const point = await loadRunPoint({ dataDir, runId, step: 600 });
      expect(point.state.items['log']?.value).toHaveLength(2600);
    });
  }

  it('with a small state, a keyframe every keyframeInterval steps', async () => {
    await runFlow(appending(0, 30), { dataDir, runId: 'small', keyframeInterval: 10, durability: 'never' });
    expect(await new FileRunStore(dataDir).keyframeSteps({ sessionKey: 'default', runId: 'small' })).toEqual([10, 20, 30]);
  });
});
