/**
 * Audit finding 5: an answer the node's own schema refuses (a zod `.refine`, which JSON Schema cannot say) leaves
 * its refusal in the log: the recorded answer, then a new pause naming the problems, then the run waits again.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, InterruptAnswerError, StreamEventType, listRuns, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';

function evenFlow(): Flow {
  const flow = new Flow({ namespace: 'rf' });
  class Ask extends BackpackNode {
    override async post(bp: BackpackHandle): Promise<undefined> {
      bp.pack('n', await this.interrupt('an even number?', { schema: z.number().refine((n) => n % 2 === 0, 'must be even') }));
      return undefined;
    }
  }
  flow.addNode(Ask, { id: 'a' });
  return flow;
}

describe('an answer refused by the node’s own schema', () => {
  it('is followed in the log by a new pause that names the problems; the run waits again, and a good answer finishes it', async () => {
    const dataDir = makeTempDir('bf-answers-once-refused-', 'test');
    expect((await runFlow(evenFlow(), { dataDir, runId: 'f' })).status).toBe('waiting');
    await expect(resumeRun(evenFlow(), { dataDir, runId: 'f', resume: 3 })).rejects.toBeInstanceOf(InterruptAnswerError);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'waiting', interrupt: { namespace: 'rf.a', index: 0 } });
    const log = await new EventStore({ dataDir, sessionKey: 'default', runId: 'f' }).readAll();
    const answered = log.findIndex((e) => e.type === StreamEventType.INTERRUPT_ANSWERED);
    expect(log[answered]!.payload).toMatchObject({ index: 0, answer: 3 });
    const after = log.slice(answered).map((e) => e.type);
    expect(after.filter((t) => t === StreamEventType.NODE_INTERRUPT || t === StreamEventType.RUN_WAITING)).toEqual([StreamEventType.NODE_INTERRUPT, StreamEventType.RUN_WAITING]);
    expect(log.slice(answered).find((e) => e.type === StreamEventType.NODE_INTERRUPT)!.payload).toMatchObject({ index: 0, refused: [{ path: '', message: 'must be even' }] });
    expect((await resumeRun(evenFlow(), { dataDir, runId: 'f', resume: 4 })).status).toBe('completed');
  });
});
