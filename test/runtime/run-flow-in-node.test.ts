/**
 * Review s42: runFlow called from inside a node's execution (a node that starts a durable run of another, fresh Flow)
 * claimed the Flow, then its `flow.run(undefined, options)` saw a current node execution and took the
 * nested path (src/nodes/flow.ts run: `if (parent)`): the durable run's onStart/onStep are never called, so nothing
 * of it is written, yet runFlow resolves `{ status: 'completed' }`. A durable run must be recorded, or refused.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, listRuns, loadRunPoint, runFlow, type BackpackHandle, type RunResult } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

class Answer extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack('answer', `answer to ${String(backpack.unpack('question'))}`);
    return undefined;
  }
}

describe('runFlow from node code', () => {
  it('a run it reports completed is recorded (or it is refused)', async () => {
    const dataDir = makeTempDir('audit-in-node-', 'test');
    const inner = new Flow({ namespace: 'qa' });
    inner.addNode(Answer, { id: 'answer' });
    let outcome: RunResult | Error | undefined;
    class StartsADurableRun extends BackpackNode {
      override async post(): Promise<undefined> {
        outcome = await runFlow(inner, { dataDir, runId: 'inner', input: { question: 'q' } }).catch((e: Error) => e);
        return undefined;
      }
    }
    const outer = new Flow({ namespace: 'outer' });
    outer.addNode(StartsADurableRun, { id: 'starter' });
    await outer.run({});
    if (outcome instanceof Error) return; // refused: acceptable
    expect(outcome).toMatchObject({ runId: 'inner', status: 'completed' });
    const listed = await listRuns({ dataDir });
    expect(listed.map((r) => [r.runId, r.status])).toEqual([['inner', 'completed']]);
    expect((await loadRunPoint({ dataDir, runId: 'inner' })).state.items['answer']?.value).toBe('answer to q');
  });
});
