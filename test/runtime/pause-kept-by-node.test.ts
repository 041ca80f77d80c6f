/**
 * A pause pauses the run only as the node execution that called `this.interrupt()` ends with it (README "Human in the
 * loop"): a genuine pause of the run that its node catches (and then returns normally) and that something else throws
 * later (another node, the composite around it, the flow's own post) fails the one that threw it, with a FlowError
 * naming both, and never records `run.waiting` in the name of a node execution that is over.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, FlowError, RunInterrupted, listRuns, runFlow } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

const logOf = (dataDir: string, runId: string): { type: string; nodeId?: string; payload: Record<string, unknown> }[] =>
  readFileSync(join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl'), 'utf8')
    .replace(/\0+$/, '')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));

/** Asks, keeps the pause in `kept.pause` and returns normally (node.completed). */
function keeper(kept: { pause?: unknown }) {
  return class Ask extends BackpackNode {
    override async exec(): Promise<unknown> {
      try {
        await this.interrupt({ question: 'Paste your GitHub token to approve the release' }, { schema: z.string() });
      } catch (error) {
        kept.pause = error;
      }
      return 'ok';
    }
  };
}

async function failsWithoutWaiting(flow: Flow, runId: string, kept: { pause?: unknown }, thrower: RegExp): Promise<void> {
  const dataDir = makeTempDir('pause-kept-', 'test');
  const outcome = await runFlow(flow, { dataDir, runId }).catch((e: unknown) => e);
  expect(kept.pause).toBeInstanceOf(RunInterrupted);
  expect(outcome).toBeInstanceOf(FlowError);
  expect((outcome as Error).message).toMatch(thrower);
  expect((outcome as Error).message).toMatch(/the pause that node 'ask' .* made with its interrupt 0, but that execution of the node did not end with it/);
  expect((outcome as Error).cause).toBe(kept.pause);
  const log = logOf(dataDir, runId);
  expect(log.map((e) => e.type)).not.toContain('run.waiting');
  expect(log.find((e) => e.type === 'node.completed' && e.nodeId === 'ask')).toBeDefined();
  expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'failed' });
}

describe('a genuine pause kept by the node that made it', () => {
  it('thrown by a later node: that node fails, and the run is not recorded waiting for the node that completed', async () => {
    const kept: { pause?: unknown } = {};
    class Thrower extends BackpackNode {
      override async exec(): Promise<unknown> {
        throw kept.pause;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(keeper(kept), { id: 'ask' }).next(flow.addNode(Thrower, { id: 'thrower' }));
    await failsWithoutWaiting(flow, 'later-node', kept, /^Node 'thrower' \(app\.thrower\) threw the pause/);
  });

  it('thrown by the composite the asking node ran in, after it returned: the composite fails', async () => {
    const kept: { pause?: unknown } = {};
    const Ask = keeper(kept);
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(Ask, { id: 'ask' });
      }
      override async post(): Promise<string> {
        throw kept.pause;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Composite, { id: 'outer' });
    await failsWithoutWaiting(flow, 'composite', kept, /^Node 'outer' \(app\.outer\) threw the pause/);
  });

  it("thrown by the flow's own post: the run fails", async () => {
    const kept: { pause?: unknown } = {};
    class ThrowingFlow extends Flow {
      override post(): string {
        throw kept.pause;
      }
    }
    const flow = new ThrowingFlow({ namespace: 'app' });
    flow.addNode(keeper(kept), { id: 'ask' });
    await failsWithoutWaiting(flow, 'flow-post', kept, /^Flow '.*' threw the pause/);
  });

  it('caught and thrown again by the same execution, or passed up by the composite it runs in, still pauses the run', async () => {
    class Ask extends BackpackNode {
      override async exec(): Promise<unknown> {
        try {
          return await this.interrupt({ question: 'Publish?' }, { schema: z.boolean() });
        } catch (error) {
          // Kept aside, then thrown again by the execution that made it.
          const kept = error;
          await Promise.resolve();
          throw kept;
        }
      }
    }
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(Ask, { id: 'ask' });
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Composite, { id: 'outer' });
    const dataDir = makeTempDir('pause-kept-', 'test');
    await expect(runFlow(flow, { dataDir, runId: 'rethrown' })).resolves.toMatchObject({ status: 'waiting', interrupt: { nodeId: 'ask', namespace: 'app.outer.ask', index: 0 } });
  });
});
