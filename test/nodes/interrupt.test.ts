import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { BackpackHandle } from '../../src/backpack/index.js';
import { StreamEventType } from '../../src/events/index.js';
import { BackpackNode, Flow, InterruptAnswerError, RunInterrupted } from '../../src/nodes/index.js';

const Approval = z.object({ approved: z.boolean(), note: z.string().optional() });

class Approve extends BackpackNode {
  override async post(backpack: BackpackHandle) {
    const draft = backpack.unpack<string>('draft');
    const answer = await this.interrupt({ question: 'Publish this draft?', draft }, { schema: Approval });
    backpack.pack('decision', answer);
    return answer.approved ? 'publish' : 'revise';
  }
}

class TwoQuestions extends BackpackNode {
  override async exec() {
    const name = await this.interrupt<string>('name?');
    const age = await this.interrupt<number>(`age of ${name}?`, { schema: z.number().int() });
    return `${name}:${age}`;
  }
  override post(backpack: BackpackHandle, _p: unknown, answer: string) {
    backpack.pack('answer', answer);
    return undefined;
  }
}

describe('interrupts without durability (flow.run)', () => {
  it('pause the run: flow.run rejects with RunInterrupted naming the node, and nothing is an error or retried', async () => {
    const flow = new Flow({ namespace: 'doc' });
    flow.addNode(Approve, { id: 'approve', maxRetries: 3 });
    const error = await flow.run({ draft: 'v1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunInterrupted);
    const { interrupt } = error as RunInterrupted;
    expect(interrupt).toMatchObject({ nodeId: 'approve', namespace: 'doc.approve', index: 0, payload: { question: 'Publish this draft?', draft: 'v1' } });
    expect(interrupt.schema).toMatchObject({ type: 'object', required: ['approved'] });
    const types = flow.eventStreamer.getHistory().map((e) => e.type);
    expect(types).toContain(StreamEventType.NODE_INTERRUPT);
    expect(types.at(-1)).toBe(StreamEventType.RUN_WAITING);
    expect(types).not.toContain(StreamEventType.ERROR);
    expect(types).not.toContain(StreamEventType.NODE_RETRY);
    expect(types).not.toContain(StreamEventType.RUN_ERROR);
  });

  it('return the answers given for the node, checked against the schema (a bad one names its JSON pointer)', async () => {
    const build = () => {
      const flow = new Flow({ namespace: 'doc' });
      const a = flow.addNode(Approve, { id: 'approve' });
      class Publish extends BackpackNode {}
      a.on('publish', flow.addNode(Publish, { id: 'publish' }));
      return flow;
    };
    const ok = build();
    await ok.run({ draft: 'v1' }, { answers: new Map([['doc.approve', [{ approved: true }]]]) });
    expect(ok.eventStreamer.getHistory({ type: StreamEventType.NODE_START }).map((e) => e.nodeId)).toEqual(['approve', 'publish']);
    expect(ok.backpack.peek('decision')).toEqual({ approved: true });
    const bad = await build().run({ draft: 'v1' }, { answers: new Map([['doc.approve', [{ approved: 'yes' }]]]) }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InterruptAnswerError);
    expect((bad as InterruptAnswerError).problems).toEqual([{ path: '/approved', message: expect.stringMatching(/boolean/) }]);
    expect((bad as Error).message).toMatch(/does not match its schema: \/approved: .*the run is still waiting/);
  });

  it('answer several interrupts of one node in order, pausing at the first one without an answer', async () => {
    const run = async (answers: unknown[]) => {
      const flow = new Flow({ namespace: 'q' });
      flow.addNode(TwoQuestions, { id: 'ask' });
      return flow.run(undefined, { answers: new Map([['q.ask', answers]]) }).then(() => flow.backpack.peek('answer'), (e: RunInterrupted) => e.interrupt);
    };
    expect(await run([])).toMatchObject({ index: 0, payload: 'name?' });
    expect(await run(['ada'])).toMatchObject({ index: 1, payload: 'age of ada?', schema: { type: 'integer' } });
    expect(await run(['ada', 36])).toBe('ada:36');
  });

  it('pause and answer inside composites two deep, by the asking node\'s namespace', async () => {
    class Inner extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(TwoQuestions, { id: 'ask' });
      }
    }
    class Outer extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(Inner, { id: 'inner' });
      }
    }
    const build = () => {
      const flow = new Flow({ namespace: 'top' });
      flow.addNode(Outer, { id: 'outer' });
      return flow;
    };
    const paused = (await build().run().catch((e: unknown) => e)) as RunInterrupted;
    expect(paused.interrupt).toMatchObject({ nodeId: 'ask', namespace: 'top.outer.inner.ask', index: 0 });
    const flow = build();
    await flow.run(undefined, { answers: new Map([['top.outer.inner.ask', ['bob', 7]]]) });
    expect(flow.backpack.peek('answer')).toBe('bob:7');
    expect(flow.backpack.getItem('answer')!.metadata.sourceNamespace).toBe('top.outer.inner.ask');
  });

  it('interrupt is only for the node\'s own execution', async () => {
    const flow = new Flow({ namespace: 'x' });
    const node = flow.addNode(Approve, { id: 'a' });
    await expect(node.interrupt('hi')).rejects.toThrow(/interrupt\(\) is called from the node's own prep, exec or post/);
  });
});

describe('composite routing', () => {
  it('a composite\'s default post returns its internal flow\'s last action, so composite.on(action) follows it', async () => {
    class Done extends BackpackNode {
      override post() {
        return 'done';
      }
    }
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(Done, { id: 'finish' });
      }
    }
    class After extends BackpackNode {
      override post(backpack: BackpackHandle) {
        backpack.pack('after', true);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'c' });
    flow.addNode(Composite, { id: 'comp' }).on('done', flow.addNode(After, { id: 'after' }));
    await flow.run();
    expect(flow.backpack.peek('after')).toBe(true);
    expect(flow.eventStreamer.getHistory({ type: StreamEventType.ROUTE_MISSING })).toEqual([]);
  });
});
