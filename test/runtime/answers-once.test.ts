/**
 * Audit finding 1: an answer given with `resumeRun(..., { resume })` belongs to the node execution at the run's
 * resume position only (README: "once the node finishes its step, they are done"). A later execution of the same
 * node in the same process (a self-loop, a composite run again in a loop) asks again, as it does when the process
 * crashed in between (the log reader drops answers at each checkpoint).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, RunInterrupted, StreamEventType, listRuns, loadRunPoint, resumeRun, runFlow, decodeValue, type BackpackHandle } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';
import { trials } from '../support/soak.js';

/**
 * A node that loops to itself `plan.length` times; execution n asks `plan[n - 1]` questions in turn ("Q<n>.<i>"),
 * and packs the answers it got as `ans<n>`.
 */
function loopFlow(plan: readonly number[]): Flow {
  const flow = new Flow({ namespace: 'loop' });
  class Ask extends BackpackNode {
    override async post(bp: BackpackHandle): Promise<string | undefined> {
      const n = ((bp.unpack('n') as number | undefined) ?? 0) + 1;
      const got: unknown[] = [];
      for (let i = 0; i < plan[n - 1]!; i++) got.push(await this.interrupt(`Q${n}.${i}`, { schema: z.string() }));
      bp.pack('n', n);
      bp.pack(`ans${n}`, got);
      return n < plan.length ? 'again' : undefined;
    }
  }
  const ask = flow.addNode(Ask, { id: 'ask' });
  ask.on('again', ask);
  return flow;
}

/** `gate` (a composite whose inner node asks to approve item n) → `next` → `gate` …, for `items` items. */
function approvalLoop(items: number): Flow {
  const flow = new Flow({ namespace: 'lc' });
  class Ask extends BackpackNode {
    override async post(bp: BackpackHandle): Promise<undefined> {
      const n = ((bp.unpack('n') as number | undefined) ?? 0) + 1;
      const answer = await this.interrupt({ approve: `item ${n}` }, { schema: z.object({ approved: z.boolean() }) });
      bp.pack('n', n);
      bp.pack(`decision${n}`, answer.approved);
      return undefined;
    }
  }
  class Gate extends BackpackNode {
    protected override buildInternalFlow(inner: Flow): void {
      inner.addNode(Ask, { id: 'ask' });
    }
  }
  class Next extends BackpackNode {
    override post(bp: BackpackHandle): string | undefined {
      return ((bp.unpack('n') as number | undefined) ?? 0) < items ? 'more' : undefined;
    }
  }
  const gate = flow.addNode(Gate, { id: 'gate' });
  const next = flow.addNode(Next, { id: 'next' });
  gate.next(next);
  next.on('more', gate);
  return flow;
}

const events = (dataDir: string, runId: string) => new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();
const stateOf = async (dataDir: string, runId: string): Promise<Record<string, unknown>> => {
  const point = await loadRunPoint({ dataDir, runId });
  return Object.fromEntries(Object.entries(point.state.items).map(([key, item]) => [key, decodeValue(item.value)]));
};

describe('an answer answers one question only', () => {
  it('a self-loop asks Q2 after Q1 was answered, in the same process; the log has its node.interrupted', async () => {
    const dataDir = makeTempDir('bf-answers-once-', 'test');
    const first = await runFlow(loopFlow([1, 1]), { dataDir, runId: 'l' });
    expect(first).toMatchObject({ status: 'waiting', interrupt: { namespace: 'loop.ask', index: 0, payload: 'Q1.0' } });
    const second = await resumeRun(loopFlow([1, 1]), { dataDir, runId: 'l', resume: 'first' });
    expect(second).toMatchObject({ status: 'waiting', interrupt: { namespace: 'loop.ask', index: 0, payload: 'Q2.0' } });
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'waiting', interrupt: { payload: 'Q2.0' } });
    const done = await resumeRun(loopFlow([1, 1]), { dataDir, runId: 'l', resume: 'second' });
    expect(done.status).toBe('completed');
    expect(await stateOf(dataDir, 'l')).toMatchObject({ n: 2, ans1: ['first'], ans2: ['second'] });
    const log = await events(dataDir, 'l');
    expect(log.filter((e) => e.type === StreamEventType.NODE_INTERRUPT).map((e) => e.payload.payload)).toEqual(['Q1.0', 'Q2.0']);
    expect(log.filter((e) => e.type === StreamEventType.INTERRUPT_ANSWERED).map((e) => e.payload.answer)).toEqual(['first', 'second']);
  });

  it('a composite gate in a loop asks to approve item 1, 2 and 3, one answer each', async () => {
    const dataDir = makeTempDir('bf-answers-once-', 'test');
    const asked: unknown[] = [];
    let result = await runFlow(approvalLoop(3), { dataDir, runId: 'lc' });
    const answers = [true, false, true];
    for (const approved of answers) {
      expect(result.status).toBe('waiting');
      asked.push(result.interrupt!.payload);
      result = await resumeRun(approvalLoop(3), { dataDir, runId: 'lc', resume: { approved } });
    }
    expect(result.status).toBe('completed');
    expect(asked).toEqual([{ approve: 'item 1' }, { approve: 'item 2' }, { approve: 'item 3' }]);
    expect(await stateOf(dataDir, 'lc')).toMatchObject({ n: 3, decision1: true, decision2: false, decision3: true });
    const log = await events(dataDir, 'lc');
    expect(log.filter((e) => e.type === StreamEventType.NODE_INTERRUPT)).toHaveLength(3);
    expect(log.filter((e) => e.type === StreamEventType.INTERRUPT_ANSWERED)).toHaveLength(3);
  });

  it('flow.run with answers: they answer the first execution only (the caller’s map is left as given)', async () => {
    const given = new Map([['loop.ask', ['first']]]);
    const flow = loopFlow([1, 1]);
    const run = flow.run(undefined, { answers: given });
    await expect(run).rejects.toBeInstanceOf(RunInterrupted);
    await expect(run).rejects.toMatchObject({ interrupt: { namespace: 'loop.ask', index: 0, payload: 'Q2.0' } });
    expect(given.get('loop.ask')).toEqual(['first']);
    expect(flow.backpack.unpack('ans1')).toEqual(['first']);
  });

  it('property: any loop length and questions per execution, each resume answers exactly the question asked', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 4 }), async (plan) => {
        const dataDir = makeTempDir('bf-answers-once-', 'test');
        const expected = plan.flatMap((count, n) => Array.from({ length: count }, (_, i) => `Q${n + 1}.${i}`));
        const asked: unknown[] = [];
        let result = await runFlow(loopFlow(plan), { dataDir, runId: 'p' });
        while (result.status === 'waiting') {
          asked.push(result.interrupt!.payload);
          expect(asked.length).toBeLessThanOrEqual(expected.length);
          // The answer names the question it answers: the state shows which question each answer went to.
          result = await resumeRun(loopFlow(plan), { dataDir, runId: 'p', resume: `answer to ${String(result.interrupt!.payload)}` });
        }
        expect(asked).toEqual(expected);
        const state = await stateOf(dataDir, 'p');
        plan.forEach((count, n) => {
          expect(state[`ans${n + 1}`]).toEqual(Array.from({ length: count }, (_, i) => `answer to Q${n + 1}.${i}`));
        });
        const log = await events(dataDir, 'p');
        expect(log.filter((e) => e.type === StreamEventType.NODE_INTERRUPT).map((e) => e.payload.payload)).toEqual(expected);
      }),
      { numRuns: trials(8, 120) },
    );
  });
});
