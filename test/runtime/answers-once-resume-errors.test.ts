/**
 * Audit finding 6: a resume with an answer, for a run that waits for none, is refused with the status `listRuns`
 * gives, and says why when an earlier resume already recorded the answer.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, decodeValue, listRuns, loadRunPoint, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** `ask` asks one question; with `controller`, it aborts the run after it got the answer, before its step ends. */
function askFlow(controller?: AbortController): Flow {
  const flow = new Flow({ namespace: 're' });
  class Ask extends BackpackNode {
    override async post(bp: BackpackHandle): Promise<undefined> {
      const answer = await this.interrupt('ok?', { schema: z.string() });
      if (controller) {
        controller.abort();
        throw controller.signal.reason;
      }
      bp.pack('answer', answer);
      return undefined;
    }
  }
  flow.addNode(Ask, { id: 'ask' });
  return flow;
}

describe('resume errors name the status listRuns gives', () => {
  it('a run stopped after its answer was recorded: "is stopped", the answer already recorded; a resume without one finishes with it', async () => {
    const dataDir = makeTempDir('bf-answers-once-errors-', 'test');
    expect((await runFlow(askFlow(), { dataDir, runId: 'r' })).status).toBe('waiting');
    const controller = new AbortController();
    await expect(resumeRun(askFlow(controller), { dataDir, runId: 'r', resume: 'yes', signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    const listed = (await listRuns({ dataDir }))[0]!;
    expect(listed.status).toBe('stopped');
    const again = resumeRun(askFlow(), { dataDir, runId: 'r', resume: 'no' });
    await expect(again).rejects.toThrow(/run default\/r is stopped: its answer \(to re\.ask\) was already recorded by an earlier resume.*resume it without an answer \(CLI: runs resume r\)/);
    expect((await resumeRun(askFlow(), { dataDir, runId: 'r' })).status).toBe('completed');
    const point = await loadRunPoint({ dataDir, runId: 'r' });
    expect(decodeValue(point.state.items['answer']!.value)).toBe('yes');
  });

  it('a failed run that waits for nothing: "is failed, not waiting for an answer"', async () => {
    const dataDir = makeTempDir('bf-answers-once-errors-', 'test');
    const flow = new Flow({ namespace: 'f' });
    class Fails extends BackpackNode {
      override post(): undefined {
        throw new Error('boom');
      }
    }
    flow.addNode(Fails, { id: 'fails' });
    await expect(runFlow(flow, { dataDir, runId: 'f' })).rejects.toThrow('boom');
    expect((await listRuns({ dataDir }))[0]!.status).toBe('failed');
    await expect(resumeRun(flow, { dataDir, runId: 'f', resume: 'x' })).rejects.toThrow(/run default\/f is failed, not waiting for an answer: resume it without an answer/);
  });
});
