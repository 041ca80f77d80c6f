/**
 * Review s43: since 208d5ec a Flow with a Backpack of its own "is a run of its own wherever it is run from, a node's
 * code included" (README). But such a run, started from a node's prep/exec/post, still runs inside the calling node's
 * async execution context (src/nodes/flow.ts run: no `currentExecution.exit`), so each of its node executions gets
 * the caller's execution as `parent` (backpack-node.ts _run). Two checks written for nested flows then misjudge it:
 *  - a pause (`this.interrupt()`) of the inner run is taken for a forged one at the inner flow's top
 *    (interrupt.ts unlessForged: `carrier.parent === undefined` expected): the run fails instead of waiting, and
 *    `runFlow` records it failed, with "that execution of the node did not end with it";
 *  - a run the node starts and does not await (a background run) fails at its second step once the calling node has
 *    returned: "cannot run inside node 'starter', whose execution ended".
 * The same flows run from the owner's code wait / complete.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, RunInterrupted, listRuns, runFlow, type BackpackHandle, type RunResult } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

class Ask extends BackpackNode {
  override async post(backpack: BackpackHandle): Promise<undefined> {
    const answer = await this.interrupt({ question: 'ok?' }, { schema: z.object({ ok: z.boolean() }) });
    backpack.pack('answer', answer);
    return undefined;
  }
}

function askingFlow(): Flow {
  const flow = new Flow({ namespace: 'approval' });
  flow.addNode(Ask, { id: 'ask' });
  return flow;
}

async function fromNodeCode(call: () => Promise<unknown>): Promise<unknown> {
  let outcome: unknown;
  class Starter extends BackpackNode {
    override async post(): Promise<undefined> {
      outcome = await call().catch((e: unknown) => e);
      return undefined;
    }
  }
  const outer = new Flow({ namespace: 'outer' });
  outer.addNode(Starter, { id: 'starter' });
  await outer.run({});
  return outcome;
}

describe('a top-level run started from node code', () => {
  it('control: runFlow of a pausing flow from the owner waits', async () => {
    const dataDir = makeTempDir('audit-s43-', 'test');
    const result = await runFlow(askingFlow(), { dataDir, runId: 'owner' });
    expect(result.status).toBe('waiting');
  });

  it('runFlow from node code: the inner run waits for its answer (recorded waiting), as from the owner', async () => {
    const dataDir = makeTempDir('audit-s43-', 'test');
    const outcome = (await fromNodeCode(() => runFlow(askingFlow(), { dataDir, runId: 'inner' }))) as RunResult | Error;
    expect(outcome instanceof Error ? outcome.message : outcome.status).toBe('waiting');
    const listed = await listRuns({ dataDir });
    expect(listed.map((r) => [r.runId, r.status])).toEqual([['inner', 'waiting']]);
  });

  it('flow.run from node code: a pause of the inner run is a pause (RunInterrupted, run.waiting), not a failure', async () => {
    const inner = askingFlow();
    const seen: string[] = [];
    inner.eventStreamer.on('*', (e) => void (e.type.startsWith('run.') && seen.push(e.type)));
    const outcome = await fromNodeCode(() => inner.run({}));
    expect(outcome).toBeInstanceOf(RunInterrupted);
    expect(seen).toEqual(['run.started', 'run.waiting']);
  });

  it('a run the node starts and leaves running completes after the node returned', async () => {
    class One extends BackpackNode {
      override async post(backpack: BackpackHandle): Promise<undefined> {
        await new Promise((r) => setTimeout(r, 30));
        backpack.pack('one', 1);
        return undefined;
      }
    }
    class Two extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('two', 2);
        return undefined;
      }
    }
    const background = new Flow({ namespace: 'bg' });
    const one = background.addNode(One, { id: 'one' });
    one.next(background.addNode(Two, { id: 'two' }));
    let started: Promise<unknown> | undefined;
    await fromNodeCode(async () => {
      started = background.run({}).catch((e: unknown) => e);
    });
    const end = await started;
    expect(end instanceof Error ? end.message : 'completed').toBe('completed');
    expect(background.backpack.peek('two')).toBe(2);
  });
});
