/**
 * The harness of the replay properties (test/runtime/replay-*.property.test.ts): a durable run whose one node, at each
 * step, performs that step's operations, and the check that every recorded step reads back exactly as the live state
 * was at that step boundary.
 */
import { expect } from 'vitest';
import { BackpackNode, Flow, StreamEventType, loadRunPoint, runFlow, type BackpackHandle, type BackpackState } from '../../src/index.js';

/** The exact form of a state: the encoded values keep -0, order and own `__proto__` keys in JSON text. */
export function exactState(state: BackpackState): string {
  return JSON.stringify({ items: state.items, quarantined: state.quarantined });
}

/** What a replay check runs (see {@link expectReplayEqualsLive}). */
export interface ReplayCase<Op> {
  dataDir: string;
  runId: string;
  /** Per step, the operations its node execution performs. */
  steps: readonly (readonly Op[])[];
  /** Performs one operation: through the node's handle, or the flow's owner view (`flow.backpack`). */
  perform: (backpack: BackpackHandle, flow: Flow, op: Op) => void;
  keyframeInterval: number;
  input?: Record<string, unknown>;
  /** Options of the Backpack the flow makes (e.g. `maxValueBytes`). */
  backpackOptions?: Record<string, unknown>;
}

/** Runs the case durably, then checks every step's recorded state against the live one, without warnings. */
export async function expectReplayEqualsLive<Op>(c: ReplayCase<Op>): Promise<void> {
  let at = 0;
  const flow = new Flow({ namespace: 'main', maxSteps: c.steps.length + 1, ...(c.backpackOptions ? { backpackOptions: c.backpackOptions } : {}) } as ConstructorParameters<typeof Flow>[0]);
  class Stepper extends BackpackNode {
    static override namespaceSegment = 'stepper';
    override post(backpack: BackpackHandle): string | undefined {
      for (const op of c.steps[at]!) c.perform(backpack, flow, op);
      at++;
      return at < c.steps.length ? 'again' : undefined;
    }
  }
  const node = flow.addNode(Stepper, { id: 'stepper' });
  node.on('again', node);
  const live = new Map<number, string>();
  flow.eventStreamer.on(StreamEventType.CHECKPOINT_SAVED, (event) => {
    live.set((event.payload as { step: number }).step, exactState(flow.backpack.exportState()));
  });
  await runFlow(flow, { dataDir: c.dataDir, runId: c.runId, keyframeInterval: c.keyframeInterval, ...(c.input ? { input: c.input } : {}) });
  expect([...live.keys()]).toEqual(c.steps.map((_, i) => i).concat(c.steps.length));
  for (const [step, want] of live) {
    const point = await loadRunPoint({ dataDir: c.dataDir, runId: c.runId, step });
    expect(point.warnings).toEqual([]);
    expect(exactState(point.state), `step ${step}`).toBe(want);
  }
}
