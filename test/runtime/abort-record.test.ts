/**
 * Audit findings 2 and 3: a run stopped by its own AbortSignal is recorded truthfully. The abort is not a failure of
 * the node it passes through (no retry, no execFallback, no NodeExecutionError, no `error` event), the run is
 * `stopped` (resumable) with no error counted, the caller still gets the abort, and a resume finishes the run with
 * the state an uninterrupted run has.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, StreamEventType, decodeValue, listRuns, loadRunPoint, resumeRun, runFlow, type BackpackHandle, type RunScope } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';
import { trials } from '../support/soak.js';

/** Where a chain's run is aborted: in node `at`'s post (then the next step boundary stops it) or during its exec. */
interface AbortPlan {
  at: number;
  where: 'post' | 'exec';
  controller: AbortController;
  reason?: unknown;
}

/** Waits until `signal` aborts, then rejects with its reason (as fetch or a model call given the signal does). */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** n0 → n1 → … : each packs `k<i>` and appends its id to `trail`; `plan` aborts the run at one node. */
function chain(length: number, plan?: AbortPlan): Flow {
  const flow = new Flow({ namespace: 'ab' });
  const nodes: BackpackNode[] = [];
  for (let i = 0; i < length; i++) {
    class Step extends BackpackNode {
      override prep(_bp: BackpackHandle, scope: RunScope): AbortSignal | undefined {
        return scope.signal;
      }
      override async exec(signal: AbortSignal | undefined): Promise<void> {
        if (plan?.at !== i || plan.where !== 'exec' || signal === undefined) return;
        setTimeout(() => plan.controller.abort(plan.reason), 1);
        await untilAborted(signal);
      }
      override post(bp: BackpackHandle): undefined {
        bp.pack(`k${i}`, i);
        bp.pack('trail', [...((bp.unpack('trail') as string[] | undefined) ?? []), `n${i}`]);
        if (plan?.at === i && plan.where === 'post') plan.controller.abort(plan.reason);
        return undefined;
      }
    }
    nodes.push(flow.addNode(Step, { id: `n${i}` }));
  }
  for (let i = 0; i + 1 < length; i++) nodes[i]!.next(nodes[i + 1]!);
  return flow;
}

/** `comp` (a composite running x → y; x aborts the run) → `z`, `comp` with the given retries and fallback. */
function compositeFlow(options: { controller?: AbortController; maxRetries?: number; fallback?: 'value' | 'undefined' }): Flow {
  const flow = new Flow({ namespace: 'ac' });
  let execs = 0;
  class X extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      bp.pack('x', 1);
      options.controller?.abort();
      return undefined;
    }
  }
  class Y extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      bp.pack('y', 1);
      return undefined;
    }
  }
  class Comp extends BackpackNode {
    protected override buildInternalFlow(inner: Flow): void {
      inner.addNode(X, { id: 'x' }).next(inner.addNode(Y, { id: 'y' }));
    }
    override exec(prepRes: unknown, attempt: Parameters<BackpackNode['exec']>[1]): unknown {
      execs++;
      return super.exec(prepRes, attempt);
    }
    override execFallback(_prepRes: unknown, error: unknown): unknown {
      if (options.fallback === 'value') return 'fb';
      if (options.fallback === 'undefined') return undefined;
      return super.execFallback(_prepRes, error);
    }
    override post(bp: BackpackHandle): undefined {
      bp.pack('compExecs', execs);
      return undefined;
    }
  }
  class Z extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      bp.pack('z', 1);
      return undefined;
    }
  }
  flow.addNode(Comp, { id: 'comp', maxRetries: options.maxRetries ?? 1 }).next(flow.addNode(Z, { id: 'z' }));
  return flow;
}

const events = (dataDir: string, runId: string) => new EventStore({ dataDir, sessionKey: 'default', runId }).readAll();
const stateOf = async (dataDir: string, runId: string): Promise<Record<string, unknown>> => {
  const point = await loadRunPoint({ dataDir, runId });
  return Object.fromEntries(Object.entries(point.state.items).map(([key, item]) => [key, decodeValue(item.value)]));
};
const metaOf = async (dataDir: string, runId: string) => (await listRuns({ dataDir })).find((m) => m.runId === runId)!;

describe('an abort inside a composite stops the run where it is', () => {
  for (const variant of [
    { name: 'maxRetries 3', maxRetries: 3 },
    { name: 'an execFallback that returns a value', fallback: 'value' as const },
    { name: 'an execFallback that returns undefined', fallback: 'undefined' as const, maxRetries: 2 },
  ]) {
    it(`with ${variant.name}: no retry, no fallback, stopped at [comp, y]; the resume runs y, then z`, async () => {
      const dataDir = makeTempDir('bf-abort-record-', 'test');
      const controller = new AbortController();
      const run = runFlow(compositeFlow({ controller, maxRetries: variant.maxRetries, fallback: variant.fallback }), { dataDir, runId: 'c', signal: controller.signal });
      await expect(run).rejects.toMatchObject({ name: 'AbortError' });
      const log = await events(dataDir, 'c');
      const types = log.map((e) => e.type);
      expect(types).not.toContain(StreamEventType.NODE_RETRY);
      expect(types).not.toContain(StreamEventType.ERROR);
      expect(types).not.toContain(StreamEventType.RUN_END);
      expect(log.at(-1)).toMatchObject({ type: StreamEventType.RUN_ERROR, payload: { aborted: true, error: { name: 'AbortError' } } });
      expect(await metaOf(dataDir, 'c')).toMatchObject({ status: 'stopped', errorCount: 0 });
      expect((await loadRunPoint({ dataDir, runId: 'c' })).position).toEqual(['comp', 'y']);

      const resumed = await resumeRun(compositeFlow({ maxRetries: variant.maxRetries, fallback: variant.fallback }), { dataDir, runId: 'c' });
      expect(resumed.status).toBe('completed');
      // y ran (the composite ran once more, from y), then z.
      expect(await stateOf(dataDir, 'c')).toEqual({ x: 1, y: 1, compExecs: 1, z: 1 });
      expect(await metaOf(dataDir, 'c')).toMatchObject({ status: 'completed', errorCount: 0 });
    });
  }
});

describe('an aborted run is recorded stopped, not failed', () => {
  const reference = async (length: number): Promise<Record<string, unknown>> => {
    const dataDir = makeTempDir('bf-abort-ref-', 'test');
    await runFlow(chain(length), { dataDir, runId: 'ref' });
    return stateOf(dataDir, 'ref');
  };

  /** Runs the chain with `plan`, checks the record of the abort, resumes, and checks the run ends as an uninterrupted one. */
  const abortThenResume = async (length: number, plan: AbortPlan | 'pre', expectedPosition: string[]): Promise<void> => {
    const dataDir = makeTempDir('bf-abort-record-', 'test');
    const signal = plan === 'pre' ? AbortSignal.abort() : plan.controller.signal;
    const reason: unknown = plan === 'pre' ? signal.reason : plan.reason;
    const run = runFlow(chain(length, plan === 'pre' ? undefined : plan), { dataDir, runId: 'a', signal });
    // The caller still gets the abort: the signal's reason, as it is.
    if (reason !== undefined) await expect(run).rejects.toBe(reason);
    else await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    const meta = await metaOf(dataDir, 'a');
    expect(meta).toMatchObject({ status: 'stopped', errorCount: 0 });
    expect(meta.error).toBeUndefined();
    expect(meta.segments?.at(-1)?.outcome).toBeUndefined();
    const log = await events(dataDir, 'a');
    expect(log.map((e) => e.type)).not.toContain(StreamEventType.ERROR);
    expect(log.at(-1)).toMatchObject({ type: StreamEventType.RUN_ERROR, payload: { aborted: true } });
    expect((await loadRunPoint({ dataDir, runId: 'a' })).position).toEqual(expectedPosition);

    expect((await resumeRun(chain(length), { dataDir, runId: 'a' })).status).toBe('completed');
    expect(await stateOf(dataDir, 'a')).toEqual(await reference(length));
    expect(await metaOf(dataDir, 'a')).toMatchObject({ status: 'completed', errorCount: 0 });
  };

  it('at a step boundary (abort in a post), with the default reason', async () => {
    await abortThenResume(4, { at: 1, where: 'post', controller: new AbortController() }, ['n2']);
  });

  it('at a step boundary, with a reason of the caller’s own (an Error)', async () => {
    await abortThenResume(4, { at: 0, where: 'post', controller: new AbortController(), reason: new Error('user abort') }, ['n1']);
  });

  it('inside an exec waiting on the signal: the node did not finish and runs again on resume', async () => {
    await abortThenResume(4, { at: 2, where: 'exec', controller: new AbortController() }, ['n2']);
  });

  it('an already-aborted signal: stopped at step 0, before the entry node', async () => {
    await abortThenResume(3, 'pre', ['n0']);
  });

  it('property: an abort at any node, in post or exec, records stopped and the resume ends as an uninterrupted run', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }).chain((length) => fc.record({ length: fc.constant(length), at: fc.integer({ min: 0, max: length - 1 }), where: fc.constantFrom('post' as const, 'exec' as const) })),
        async ({ length, at, where }) => {
          // An abort in the last node's post comes after its last step: the run has completed by then.
          fc.pre(!(where === 'post' && at === length - 1));
          const position = [`n${where === 'post' ? at + 1 : at}`];
          await abortThenResume(length, { at, where, controller: new AbortController() }, position);
        },
      ),
      { numRuns: trials(6, 60) },
    );
  });
});
