/**
 * `RunMeta.lastStep` is the number of the last step a run recorded, the one `RunResult.steps` gives and
 * `loadRunPoint({ step })` takes, through fresh runs, resumes and forks (before, listings gave only `stepCount`, the
 * node executions, which differs from it for composites and had no reader of the step number).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, forkRun, listRuns, loadRunPoint, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** Counts to `steps`, one step per count; asks for an answer once at `askAt` when set. */
class Count extends BackpackNode<number, number> {
  override prep(backpack: BackpackHandle): number {
    return (backpack.unpack('count') as number | undefined) ?? 0;
  }
  override async exec(count: number): Promise<number> {
    if (count === this.config['askAt']) await this.interrupt({ question: 'go on?' });
    return count + 1;
  }
  override post(backpack: BackpackHandle, _prev: number, next: number): string | undefined {
    backpack.pack('count', next);
    return next < (this.config['steps'] as number) ? 'again' : undefined;
  }
}

/** A composite whose inner flow runs two nodes per outer step: node runs outnumber steps. */
class Inner extends BackpackNode {
  override post(): undefined {
    return undefined;
  }
}
class Outer extends BackpackNode {
  protected override buildInternalFlow(flow: Flow): void {
    flow.addNode(Inner, { id: 'i1' }).next(flow.addNode(Inner, { id: 'i2' }));
  }
}

const counting = (steps: number, askAt?: number): Flow => {
  const flow = new Flow({ namespace: 'count' });
  const node = flow.addNode(Count, { id: 'n', steps, ...(askAt === undefined ? {} : { askAt }) });
  node.on('again', node);
  return flow;
};

async function lastStepOf(dataDir: string, runId: string): Promise<number | undefined> {
  return (await listRuns({ dataDir })).find((r) => r.runId === runId)?.lastStep;
}

describe('RunMeta.lastStep', () => {
  it('is the step RunResult.steps gives and the last loadRunPoint serves, for fresh runs, resumes and forks', async () => {
    const dataDir = makeTempDir('bf-last-step-', 'test');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 5 }), async (steps, ask) => {
        const askAt = ask < steps ? ask : undefined;
        const runId = `r${n++}`;
        let result = await runFlow(counting(steps, askAt), { dataDir, runId });
        if (result.status === 'waiting') {
          expect(await lastStepOf(dataDir, runId)).toBe(result.steps);
          result = await resumeRun(counting(steps, askAt), { dataDir, runId, resume: true });
        }
        const last = await lastStepOf(dataDir, runId);
        expect(last).toBe(result.steps);
        expect((await loadRunPoint({ dataDir, runId, step: last })).step).toBe(last);
        await expect(loadRunPoint({ dataDir, runId, step: last! + 1 })).rejects.toThrow();
        // From the start (a step that ended the flow has nothing to run from): the fork's steps go on from there.
        const fork = await forkRun(counting(steps + 2), { dataDir, runId, atStep: 0, newRunId: `${runId}-f` });
        expect(fork.steps).toBeGreaterThan(0);
        expect(await lastStepOf(dataDir, `${runId}-f`)).toBe(fork.steps);
      }),
      { numRuns: 5, examples: [[3, 1], [2, 5], [1, 0]] },
    );
  });

  it('counts steps, not node runs: a composite and its two inner nodes are three node runs in fewer steps', async () => {
    const dataDir = makeTempDir('bf-last-step-', 'test');
    const flow = new Flow({ namespace: 'nest' });
    flow.addNode(Outer, { id: 'outer' });
    const result = await runFlow(flow, { dataDir, runId: 'nested' });
    const [meta] = await listRuns({ dataDir });
    expect(meta).toMatchObject({ lastStep: result.steps, stepCount: 3 });
    expect(result.steps).toBeLessThan(3);
    expect((await loadRunPoint({ dataDir, runId: 'nested', step: meta!.lastStep })).step).toBe(meta!.lastStep);
  });
});
