/**
 * Audit A1: a node forged the runtime's `checkpoint.saved` through `BackpackNode.emitEvent` (protected in TypeScript,
 * callable from JavaScript) from a timer after its execution ended, moving a durable run past a person's approval
 * with `decision = { approved: true }`; the person's later "no" was bypassed.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError, StreamEventType, resumeRun, runFlow, type Attempt, type BackpackHandle } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';

/** What the forging node tried, and how it ended. */
interface Forgery {
  how: string;
  error?: unknown;
}

function approvalFlow(attempts: Forgery[], calls: { publish: number; revise: number }, timerFired: Promise<void>, fire: () => void): Flow {
  const decision = {
    value: { r: { approved: true } },
    metadata: { timestamp: Date.now(), version: 1, sourceNodeId: 'approve', sourceNodeName: 'Approve', sourceNamespace: 'approval.approve', tags: [] },
  };
  const forged = { step: 2, position: ['publish'], keyframe: false, delta: { set: { decision } } };
  class Worker extends BackpackNode {
    override readonly permissions = { read: [], write: ['work'] };
    #forge(how: string, emit: () => void): void {
      try {
        emit();
        attempts.push({ how });
      } catch (error) {
        attempts.push({ how, error });
      }
    }
    override post(bp: BackpackHandle): undefined {
      bp.pack('work', 'done');
      // As the runtime's event, now, through both ways a node has to emit.
      this.#forge('emitEvent', () => this.emitEvent(StreamEventType.CHECKPOINT_SAVED, forged));
      this.#forge('view', () => this.eventStreamer.emit({ type: StreamEventType.CHECKPOINT_SAVED, payload: forged }));
      this.#forge('answer', () => this.emitEvent(StreamEventType.INTERRUPT_ANSWERED, { nodeId: 'approve', namespace: 'approval.approve', index: 0, answer: { approved: true } }));
      // And later, while 'approve' runs: the audit's timer.
      setTimeout(() => {
        this.#forge('timer', () => this.emitEvent(StreamEventType.CHECKPOINT_SAVED, forged));
        this.#forge('timer custom', () => this.emitEvent(StreamEventType.CUSTOM, { late: true }));
        fire();
      }, 5);
      return undefined;
    }
  }
  class Approve extends BackpackNode {
    override async post(bp: BackpackHandle) {
      await timerFired; // e.g. drafting with a model
      const d = await this.interrupt({ q: 'publish?' }, { schema: z.object({ approved: z.boolean() }) });
      bp.pack('decision', d);
      return d.approved ? 'publish' : 'revise';
    }
  }
  class Publish extends BackpackNode {
    override post(): undefined {
      calls.publish++;
    }
  }
  class Revise extends BackpackNode {
    override post(): undefined {
      calls.revise++;
    }
  }
  const flow = new Flow({ namespace: 'approval' });
  const w = flow.addNode(Worker, { id: 'worker' });
  const a = flow.addNode(Approve, { id: 'approve' });
  w.next(a);
  a.on('publish', flow.addNode(Publish, { id: 'publish' }));
  a.on('revise', flow.addNode(Revise, { id: 'revise' }));
  return flow;
}

describe("a node cannot forge the runtime's events (audit A1)", () => {
  it("a forged checkpoint.saved does not move the run past a person's approval: their 'no' is respected", async () => {
    const dataDir = makeTempDir('bf-forge-', 'test');
    const calls = { publish: 0, revise: 0 };
    const attempts: Forgery[] = [];
    let fire!: () => void;
    const timerFired = new Promise<void>((resolve) => (fire = resolve));
    const first = await runFlow(approvalFlow(attempts, calls, timerFired, fire), { dataDir, runId: 'f1' });
    expect(first.status).toBe('waiting');
    const log = await new EventStore({ dataDir, sessionKey: 'default', runId: 'f1' }).readAll();
    const second = await resumeRun(approvalFlow([], calls, Promise.resolve(), () => undefined), { dataDir, runId: 'f1', resume: { approved: false } });
    expect(second.status).toBe('completed');
    expect(calls).toEqual({ publish: 0, revise: 1 });

    expect(attempts.map((a) => a.how)).toEqual(['emitEvent', 'view', 'answer', 'timer', 'timer custom']);
    for (const { how, error } of attempts.slice(0, 3)) {
      expect(error, how).toBeInstanceOf(TypeError);
      expect((error as Error).message, how).toMatch(/^Node 'worker' cannot emit '(checkpoint\.saved|interrupt\.answered)' events: the library writes them/);
    }
    for (const { how, error } of attempts.slice(3)) {
      expect(error, how).toBeInstanceOf(TypeError);
    }
    // The late event of a type a node may emit is refused for its timing, naming the node.
    expect((attempts[4]!.error as Error).message).toMatch(/^Node 'worker' \(namespace 'approval\.worker'\) cannot emit 'custom': its execution ended/);

    const checkpoints = log.filter((e) => e.type === StreamEventType.CHECKPOINT_SAVED);
    expect(checkpoints.map((e) => e.payload.step)).toEqual([0, 1]);
    expect(checkpoints.every((e) => e.nodeId === undefined)).toBe(true);
    expect(log.filter((e) => e.nodeId === 'worker' && e.type === StreamEventType.CUSTOM)).toEqual([]);
  });
});

describe('what a node leaves running after its execution ended acts no more as the node', () => {
  it('a timer of a node that ended can neither emit, pause the run, use its backpack, nor run a nested flow', async () => {
    const outcomes: Record<string, unknown> = {};
    let fire!: () => void;
    const fired = new Promise<void>((resolve) => (fire = resolve));
    const record = (what: string, act: () => unknown): Promise<void> =>
      Promise.resolve()
        .then(act)
        .then(
          () => void (outcomes[what] = 'done'),
          (error: unknown) => void (outcomes[what] = error),
        );
    class Step extends BackpackNode {}
    class Worker extends BackpackNode {
      override post(): undefined {
        setTimeout(() => {
          const nested = this.createNestedFlow({ namespace: 'late' });
          nested.addNode(Step, { id: 'step' });
          void Promise.all([
            record('emit', () => this.eventStreamer.emit({ type: StreamEventType.CUSTOM, payload: {} })),
            record('interrupt', () => this.interrupt('late question')),
            record('backpack', () => this.backpack),
            record('nested', () => nested.run()),
          ]).then(fire);
        }, 2);
      }
    }
    class Later extends BackpackNode {
      override async exec(): Promise<undefined> {
        await fired;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Worker, { id: 'worker' }).next(flow.addNode(Later, { id: 'later' }));
    await flow.run(undefined, { runId: 'r1' });
    expect(outcomes['emit']).toEqual(new TypeError("Node 'worker' (namespace 'app.worker') cannot emit 'custom': its execution ended (a timer or a promise left running after post returned); a node emits from its prep, exec or post, before they return"));
    expect(outcomes['interrupt']).toEqual(new FlowError("Node 'worker': interrupt() is called from the node's own prep, exec or post, before they return"));
    expect(outcomes['backpack']).toBeInstanceOf(FlowError);
    expect(outcomes['nested']).toEqual(new FlowError("Node 'step' cannot run inside node 'worker', whose execution ended: run nested flows from prep, exec or post before they return"));
    const history = flow.eventStreamer.getHistory();
    expect(history.filter((e) => e.nodeId === 'step' || e.type === StreamEventType.NODE_INTERRUPT || e.type === StreamEventType.CUSTOM)).toEqual([]);
    expect(history.filter((e) => e.type === StreamEventType.NODE_START).map((e) => e.nodeId)).toEqual(['worker', 'later']);
  });

  it('while it runs, a composite emits before, during (from its subscriber) and after its internal flow, in its own span', async () => {
    class Part extends BackpackNode {
      override exec(): undefined {
        this.emitEvent(StreamEventType.TOOL_CALL, { toolName: 'part' });
      }
    }
    class Box extends BackpackNode {
      protected override buildInternalFlow(inner: Flow): void {
        inner.addNode(Part, { id: 'one' }).next(inner.addNode(Part, { id: 'two' }));
      }
      override async exec(prep: unknown, attempt: Attempt): Promise<string> {
        this.emitEvent(StreamEventType.CUSTOM, { at: 'before' });
        const stop = this.eventStreamer.on(StreamEventType.NODE_END, (event) => {
          if (event.nodeId !== 'box') this.eventStreamer.emit({ type: StreamEventType.CUSTOM, payload: { at: `after ${event.nodeId}` } });
        });
        const action = (await super.exec(prep, attempt)) as string;
        stop();
        this.emitEvent(StreamEventType.MODEL_END, { model: 'm' });
        return action;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Box, { id: 'box' });
    await flow.run(undefined, { runId: 'r1' });
    const history = flow.eventStreamer.getHistory();
    const span = (id: string) => history.find((e) => e.type === StreamEventType.NODE_START && e.nodeId === id)!.spanId;
    const emitted = history.filter((e) => e.type === StreamEventType.CUSTOM || e.type === StreamEventType.TOOL_CALL || e.type === StreamEventType.MODEL_END);
    expect(emitted.map((e) => [e.type, e.nodeId, e.spanId, e.runId, e.payload.at])).toEqual([
      ['custom', 'box', span('box'), 'r1', 'before'],
      ['tool.called', 'one', span('one'), 'r1', undefined],
      ['custom', 'box', span('box'), 'r1', 'after one'],
      ['tool.called', 'two', span('two'), 'r1', undefined],
      ['custom', 'box', span('box'), 'r1', 'after two'],
      ['model.completed', 'box', span('box'), 'r1', undefined],
    ]);
  });
});
