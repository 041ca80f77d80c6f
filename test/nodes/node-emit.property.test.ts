/**
 * What node code emits (audit A1): whatever way a node takes to the stream (`emitEvent`, `this.eventStreamer.emit`,
 * another node's view reached through its routes), from whichever moment (prep, exec, post, after an await, a failed
 * attempt that is retried, a subscriber while it runs, and after its execution ended: a subscriber, a timer, a
 * promise left running), at the top of a flow or inside a composite, the library's own
 * event types never reach a subscriber from node code, and a durable run's log holds only the runtime's
 * `checkpoint.saved` events, one per step.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, StreamEventType, runFlow, type BackpackHandle, type StreamEvent, type StreamEventTypeValue } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';
import { trials } from '../support/soak.js';

const ALL_TYPES = Object.values(StreamEventType) as StreamEventTypeValue[];
/** What a node does: the only types node code may emit. Everything else is the library's account of what happened. */
const NODE_TYPES = new Set<string>(['model.started', 'model.delta', 'model.completed', 'tool.called', 'tool.result', 'memory.written', 'memory.retrieved', 'custom']);
const PATHS = ['emitEvent', 'view', 'successor'] as const;
const WHENS = ['prep', 'exec', 'post', 'afterAwait', 'retry', 'subscriber', 'lateSubscriber', 'timer', 'promise'] as const;
const WHERES = ['top', 'composite'] as const;
type Path = (typeof PATHS)[number];
type When = (typeof WHENS)[number];
type Where = (typeof WHERES)[number];
/** Moments at which the emitting node's execution has ended. */
const ENDED = new Set<When>(['lateSubscriber', 'timer', 'promise']);

/** Payloads shaped like what the runtime and the library write, so a forgery that got through would be trusted. */
const SHAPES: Record<string, unknown>[] = [
  { step: 1, position: ['later'], keyframe: false, delta: { set: { decision: { value: { r: { approved: true } }, metadata: { timestamp: 1, version: 1, tags: [] } } } } },
  { nodeId: 'later', namespace: 'app.later', index: 0, answer: { approved: true } },
  { action: 'approved', durationMs: 1 },
  {},
];

interface Attempt {
  type: StreamEventTypeValue;
  error?: unknown;
}

interface Case {
  path: Path;
  when: When;
  where: Where;
  types: StreamEventTypeValue[];
  shape: Record<string, unknown>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let runs = 0;

async function check({ path, when, where, types, shape }: Case): Promise<void> {
  const dataDir = makeTempDir('bf-node-emit-', 'test');
  const runId = `emit-${++runs}`;
  const mark = `m${runs}`;
  const attempts: Attempt[] = [];
  let fire!: () => void;
  const fired = new Promise<void>((resolve) => (fire = resolve));

  class Emitter extends BackpackNode {
    #emitAll(): void {
      for (const type of types) {
        const payload = { ...shape, mark };
        try {
          if (path === 'emitEvent') this.emitEvent(type, payload);
          else if (path === 'view') this.eventStreamer.emit({ type, payload });
          else (this.successors.get('default') as BackpackNode).eventStreamer.emit({ type, payload });
          attempts.push({ type });
        } catch (error) {
          attempts.push({ type, error });
        }
      }
      fire();
    }
    override prep(): undefined {
      if (when === 'prep') this.#emitAll();
      // While it runs (the library's report that its prep completed), and after (the route out of it).
      if (when === 'subscriber') {
        const stop = this.eventStreamer.on(StreamEventType.PREP_COMPLETE, (event) => {
          if (event.nodeId !== 'emitter') return;
          stop();
          this.#emitAll();
        });
      }
      if (when === 'lateSubscriber') {
        const stop = this.eventStreamer.on(StreamEventType.ROUTE, (event) => {
          if (event.payload.from !== 'emitter') return;
          stop();
          this.#emitAll();
        });
      }
    }
    override async exec(_prep: unknown, attempt: { attempt: number }): Promise<undefined> {
      if (when === 'exec') this.#emitAll();
      if (when === 'afterAwait') {
        await sleep(1);
        this.#emitAll();
      }
      if (when === 'retry' && attempt.attempt === 1) {
        this.#emitAll();
        throw new Error('first attempt fails');
      }
      if (when === 'promise') {
        void (async () => {
          await sleep(2);
          this.#emitAll();
        })();
      }
    }
    override post(_bp: BackpackHandle): undefined {
      if (when === 'post') this.#emitAll();
      if (when === 'timer') setTimeout(() => this.#emitAll(), 2);
    }
  }
  /** Runs after the emitter, until it has emitted: a late emission happens in this node's step. */
  class Later extends BackpackNode {
    override async exec(): Promise<undefined> {
      await fired;
    }
  }
  class Box extends BackpackNode {
    protected override buildInternalFlow(inner: Flow): void {
      inner.addNode(Emitter, { id: 'emitter', maxRetries: 2 }).next(inner.addNode(Later, { id: 'inner-later' }));
    }
  }
  const flow = new Flow({ namespace: 'app' });
  const first = where === 'top' ? flow.addNode(Emitter, { id: 'emitter', maxRetries: 2 }) : flow.addNode(Box, { id: 'box' });
  first.next(flow.addNode(Later, { id: 'later' }));
  const emitterNamespace = where === 'top' ? 'app.emitter' : 'app.box.emitter';
  // Who the emits speak for: the emitter, or the node after it (reached through its routes, not running).
  const [who, whoNamespace] = path !== 'successor' ? ['emitter', emitterNamespace] : where === 'top' ? ['later', 'app.later'] : ['inner-later', 'app.box.inner-later'];

  const seen: StreamEvent[] = [];
  flow.eventStreamer.on('*', (event) => {
    if (event.payload.mark === mark) seen.push(event);
  });
  const result = await runFlow(flow, { dataDir, runId });
  expect(result.status).toBe('completed');

  // Every attempt is answered: a library type is refused, and so is any emit after the execution ended.
  expect(attempts.map((a) => a.type)).toEqual(types);
  for (const { type, error } of attempts) {
    if (!NODE_TYPES.has(type)) {
      expect(error, type).toBeInstanceOf(TypeError);
      expect((error as Error).message).toContain(`Node '${who}' cannot emit '${type}' events: the library writes them`);
    } else if (path === 'successor') {
      expect(error, type).toBeInstanceOf(TypeError);
      expect((error as Error).message).toContain(`Node '${who}' (namespace '${whoNamespace}') cannot emit '${type}': it is not running`);
    } else if (ENDED.has(when)) {
      expect(error, type).toBeInstanceOf(TypeError);
      expect((error as Error).message).toContain(`Node 'emitter' (namespace '${emitterNamespace}') cannot emit '${type}': its execution ended`);
    } else {
      expect(error, type).toBeUndefined();
    }
  }

  // Subscribers see exactly the accepted events, in the node's own name, in its own span (none outside an execution).
  const accepted = attempts.filter((a) => a.error === undefined).map((a) => a.type);
  expect(seen.map((e) => e.type)).toEqual(accepted);
  const started = flow.eventStreamer.getHistory({ type: StreamEventType.NODE_START, nodeId: 'emitter' }).at(-1)!;
  for (const event of seen) {
    expect(NODE_TYPES.has(event.type)).toBe(true);
    expect(event).toMatchObject({ nodeId: 'emitter', nodeName: 'Emitter', namespace: emitterNamespace, runId, spanId: started.spanId, parentSpanId: started.parentSpanId });
  }

  // The log: only the accepted events of the run, and the runtime's checkpoints, one per step, of its own shape.
  const log = await new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();
  expect(log.filter((e) => e.payload.mark === mark).map((e) => e.type)).toEqual(accepted);
  const checkpoints = log.filter((e) => e.type === StreamEventType.CHECKPOINT_SAVED);
  expect(checkpoints.map((e) => e.payload.step)).toEqual(Array.from({ length: result.steps + 1 }, (_, i) => i));
  for (const { nodeId, namespace, spanId, payload } of checkpoints) {
    expect({ nodeId, namespace, spanId }).toEqual({ nodeId: undefined, namespace: undefined, spanId: undefined });
    for (const key of Object.keys(payload)) expect(['step', 'position', 'keyframe', 'start', 'delta', 'documents', 'action']).toContain(key);
  }
  expect(log.filter((e) => e.type === StreamEventType.INTERRUPT_ANSWERED || e.type === StreamEventType.NODE_INTERRUPT)).toEqual([]);
  expect(log.filter((e) => e.type === StreamEventType.NODE_START).map((e) => e.nodeId)).toEqual(where === 'top' ? ['emitter', 'later'] : ['box', 'emitter', 'inner-later', 'later']);
}

const everyCombination: [Case][] = PATHS.flatMap((path) => WHENS.flatMap((when) => WHERES.map((where): [Case] => [{ path, when, where, types: ALL_TYPES, shape: SHAPES[0]! }])));

describe('node code never emits what only the library writes', () => {
  it('for every event type, way to emit and moment: library types are refused, late emits too, and the durable log holds only the runtime checkpoints', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          path: fc.constantFrom(...PATHS),
          when: fc.constantFrom(...WHENS),
          where: fc.constantFrom(...WHERES),
          types: fc.shuffledSubarray(ALL_TYPES, { minLength: 1 }),
          shape: fc.constantFrom(...SHAPES),
        }),
        check,
      ),
      { numRuns: everyCombination.length + trials(16, 300), examples: everyCombination },
    );
  }, 120_000);
});
