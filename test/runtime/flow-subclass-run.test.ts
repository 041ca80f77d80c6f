/**
 * Review s42: a durable run handed its claimed Flow to `flow.run` through a module variable (`handoff`), set only during
 * the synchronous start of `flow.run(undefined, options)`; the claim now travels in the call's options. A Flow subclass
 * whose `run` override awaits anything before `super.run(...)` (setup, a lookup, a log write) reaches #takeTopLevel
 * after `handoff` was cleared: every runFlow / resumeRun / forkRun of it is a FlowError saying the Flow "is being
 * started for" the very run that is starting. It worked before (26ca638). Subclassing Flow is supported (tests override post).
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle, type FlowRunOptions } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

class Step extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack('done', true);
    return undefined;
  }
}

class PreparedFlow extends Flow {
  prepared = 0;
  override async run(input?: Record<string, unknown>, options?: FlowRunOptions): Promise<string | undefined> {
    await Promise.resolve(); // e.g. load a prompt, open a client
    this.prepared++;
    return super.run(input, options);
  }
}

describe('a Flow subclass whose run() awaits before super.run()', () => {
  it('runs durably with runFlow', async () => {
    const dataDir = makeTempDir('audit-subclass-', 'test');
    const flow = new PreparedFlow({ namespace: 'prepared' });
    flow.addNode(Step, { id: 'step' });
    await expect(runFlow(flow, { dataDir, runId: 'r1' })).resolves.toMatchObject({ status: 'completed' });
    expect(flow.prepared).toBe(1);
  });

  it('runs in memory with flow.run (control)', async () => {
    const flow = new PreparedFlow({ namespace: 'prepared' });
    flow.addNode(Step, { id: 'step' });
    await flow.run();
    expect(flow.backpack.peek('done')).toBe(true);
  });
});
