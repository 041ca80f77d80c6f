/**
 * Only a pause `this.interrupt()` made is a pause (DESIGN D16, README "Human in the loop"): a RunInterrupted that node
 * code constructs and throws fails that node (a FlowError naming it), and never records `run.waiting` in another
 * node's name. What a run records as waiting is what interrupt() captured, whatever node code does to the error as it
 * passes up.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, FlowError, InterruptAnswerError, RunInterrupted, listRuns, resumeRun, runFlow } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

const logOf = (dataDir: string, runId: string): { type: string; nodeId?: string; namespace?: string; payload: Record<string, unknown> }[] =>
  readFileSync(join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl'), 'utf8')
    .replace(/\0+$/, '')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));

/** A question in the name of node 'approve' of flow 'app', which that node never asked. */
const forgedInfo = { nodeId: 'approve', namespace: 'app.approve', index: 0, payload: { question: 'Paste your GitHub token to approve the release' }, schema: { type: 'string' } };

class Approve extends BackpackNode {
  override async exec(): Promise<unknown> {
    return this.interrupt({ question: 'Publish?' }, { schema: z.boolean() });
  }
}

describe('a RunInterrupted node code throws', () => {
  class Forger extends BackpackNode {
    override async exec(): Promise<unknown> {
      throw new RunInterrupted(forgedInfo);
    }
  }
  const build = (): Flow => {
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Forger, { id: 'forger' }).next(flow.addNode(Approve, { id: 'approve' }));
    return flow;
  };

  it("fails the node that threw it, naming it, and records no pause in another node's name", async () => {
    const dataDir = makeTempDir('pause-forgery-', 'test');
    const error = await runFlow(build(), { dataDir, runId: 'forged' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowError);
    expect((error as Error).message).toMatch(/^Node 'forger' \(app\.forger\) threw a RunInterrupted that no interrupt\(\) of this run made/);
    const [meta] = await listRuns({ dataDir });
    expect(meta).toMatchObject({ runId: 'forged', status: 'failed' });
    expect(meta!.interrupt).toBeUndefined();
    const log = logOf(dataDir, 'forged');
    expect(log.map((e) => e.type)).not.toContain('run.waiting');
    expect(log.find((e) => e.type === 'error')).toMatchObject({ nodeId: 'forger', payload: { phase: 'exec' } });

    // No answer can be recorded for a question nobody asked.
    await expect(resumeRun(build(), { dataDir, runId: 'forged', resume: 'a token' })).rejects.toThrow(/is failed, not waiting for an answer/);
    expect(logOf(dataDir, 'forged').map((e) => e.type)).not.toContain('interrupt.answered');
  });

  it('is a failure also when it is a real pause of another run, thrown again', async () => {
    const asking = new Flow({ namespace: 'app' });
    asking.addNode(Approve, { id: 'approve' });
    const pause = await asking.run({}).catch((e: unknown) => e);
    expect(pause).toBeInstanceOf(RunInterrupted);

    class Replayer extends BackpackNode {
      override async exec(): Promise<unknown> {
        throw pause;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Replayer, { id: 'replayer' }).next(flow.addNode(Approve, { id: 'approve' }));
    const dataDir = makeTempDir('pause-forgery-', 'test');
    await expect(runFlow(flow, { dataDir, runId: 'replayed' })).rejects.toThrow(/^Node 'replayer' \(app\.replayer\) threw a RunInterrupted/);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'failed' });
  });
});

describe('a real pause changed by node code as it passes up', () => {
  /** A composite that catches its inner node's pause and rewrites what it asks and who asks it before rethrowing. */
  class Rewriter extends BackpackNode {
    override async exec(): Promise<unknown> {
      const flow = this.createInternalFlow();
      flow.addNode(Approve, { id: 'approve' });
      try {
        return await flow.run({});
      } catch (error) {
        if (!(error instanceof RunInterrupted)) throw error;
        const info = error.interrupt as { nodeId: string; payload: unknown; schema?: unknown };
        // The captured interrupt is frozen, and replacing the field does not change what the run records.
        expect(() => Object.assign(info, { nodeId: 'other', payload: forgedInfo.payload })).toThrow(TypeError);
        Object.defineProperty(error, 'interrupt', { value: forgedInfo });
        throw error;
      }
    }
  }

  it('is recorded as interrupt() captured it: the node, its question and its schema', async () => {
    const build = (): Flow => {
      const flow = new Flow({ namespace: 'app' });
      flow.addNode(Rewriter, { id: 'box' });
      return flow;
    };
    const dataDir = makeTempDir('pause-forgery-', 'test');
    const asked = { nodeId: 'approve', namespace: 'app.box.approve', index: 0, payload: { question: 'Publish?' }, schema: expect.objectContaining({ type: 'boolean' }) };
    const result = await runFlow(build(), { dataDir, runId: 'rewritten' });
    expect(result).toMatchObject({ status: 'waiting', interrupt: asked });
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'waiting', interrupt: asked });
    expect(logOf(dataDir, 'rewritten').find((e) => e.type === 'run.waiting')!.payload.interrupt).toEqual(asked);
    // Answered by its own schema, not the forged one.
    await expect(resumeRun(build(), { dataDir, runId: 'rewritten', resume: 'a token' })).rejects.toBeInstanceOf(InterruptAnswerError);
    await expect(resumeRun(build(), { dataDir, runId: 'rewritten', resume: true })).resolves.toMatchObject({ status: 'completed' });
  });
});
