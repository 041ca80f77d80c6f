/**
 * Review s49a H1: a flow that runs inside a node (a composite's internal flow, and its subflows) runs with that node's
 * rules, so only that node's own code (or the owner's, outside every execution) may add to it or route in it. Another
 * node reaches it (through routes, `internalFlow`) and its event handlers run while the composite packs its run input:
 * every change it tries then is refused, and nothing it planted runs.
 */
import { describe, expect, it } from 'vitest';
import type { BackpackHandle } from '../../src/backpack/index.js';
import { FlowError } from '../../src/flow/index.js';
import { BackpackNode, Flow, type BackpackNodeClass } from '../../src/nodes/index.js';

class Vault extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack('token', 'sk-SECRET');
    return undefined;
  }
}
class Search extends BackpackNode {}

type Change = (flow: Flow, planted: BackpackNodeClass) => void;

/** The ways another node's code could change a flow it reaches: each must be refused. */
const CHANGES: Record<string, Change> = {
  'addNode + setEntryNode': (flow, Planted) => flow.setEntryNode(flow.addNode(Planted, { id: 'planted' })),
  'setEntryNode to a node of the flow': (flow) => flow.setEntryNode('search'),
  'BackpackNode.on from a node of the flow': (flow) => (flow.getNode('search') as BackpackNode).on('x', flow.getNode('search')!),
  'Flow.on': (flow) => flow.on('x', flow.getNode('search')!),
  addSubflow: (flow) => flow.addSubflow({ namespace: 'planted' }),
  "a subflow's addNode (reached through a route)": (flow, Planted) => ((flow.getNode('search') as BackpackNode).successors.get('default') as Flow).addNode(Planted, { id: 'planted2' }),
};

async function attack(change: Change): Promise<{ leaked: unknown[]; outcome: unknown }> {
  const leaked: unknown[] = [];
  let outcome: unknown = 'not tried';
  class Planted extends BackpackNode {
    override prep(bp: BackpackHandle): undefined {
      leaked.push(bp.unpack('token'));
      return undefined;
    }
  }
  class Agent extends BackpackNode {
    override async exec(): Promise<string> {
      const flow = this.createInternalFlow();
      const sub = flow.addSubflow({ namespace: 'sub', id: 'sub' });
      sub.addNode(Search, { id: 'lookup' });
      flow.addNode(Search, { id: 'search' }).next(sub);
      await flow.run({ query: 'tides' });
      return 'done';
    }
  }
  class Evil extends BackpackNode {
    override prep(bp: BackpackHandle): undefined {
      leaked.push(bp.unpack('token'));
      const target = this.successors.get('default') as BackpackNode;
      this.eventStreamer.on('backpack.packed', (e) => {
        if (e.payload.key !== 'query') return;
        try {
          change(target.internalFlow!, Planted);
          outcome = 'changed';
        } catch (error) {
          outcome = error;
        }
      });
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  flow
    .addNode(Vault, { id: 'vault' })
    .next(flow.addNode(Evil, { id: 'evil', permissions: { deny: ['token'] } }))
    .next(flow.addNode(Agent, { id: 'agent' }));
  await flow.run();
  return { leaked, outcome };
}

describe("another node's code cannot change a flow that runs inside a node", () => {
  it.each(Object.entries(CHANGES))('%s from an event handler while the composite packs its input: refused, naming both nodes', async (_name, change) => {
    const { leaked, outcome } = await attack(change);
    expect(leaked).toEqual([undefined]); // evil itself is denied the token, and nothing it planted ran
    expect(outcome).toBeInstanceOf(FlowError);
    expect((outcome as Error).message).toMatch(/^Node 'evil' cannot .* in flow '.*': the flow runs inside node 'agent', and only that node's own code changes it$/);
  });

  it('the owner still builds a composite\'s internal flow outside every run, and the composite in its own exec and buildInternalFlow', async () => {
    const seen: string[] = [];
    class Note extends BackpackNode {
      override prep(): undefined {
        seen.push(this.id);
        return undefined;
      }
    }
    class Declared extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Note, { id: 'declared-a' }).next(flow.addNode(Note, { id: 'declared-b' }));
      }
    }
    class Built extends BackpackNode {
      override async exec(): Promise<string> {
        const flow = this.createInternalFlow();
        flow.addNode(Note, { id: 'built-a' }).next(flow.addNode(Note, { id: 'built-b' }));
        await flow.run();
        return 'done';
      }
    }
    class ByOwner extends BackpackNode {}
    const flow = new Flow({ namespace: 'app' });
    const declared = flow.addNode(Declared, { id: 'declared' });
    const built = flow.addNode(Built, { id: 'built' });
    const byOwner = flow.addNode(ByOwner, { id: 'owned' });
    const inner = flow.createChildFlow(byOwner);
    inner.addNode(Note, { id: 'owned-a' });
    byOwner.attachInternalFlow(inner);
    declared.next(built).next(byOwner);
    await flow.run();
    expect(seen).toEqual(['declared-a', 'declared-b', 'built-a', 'built-b', 'owned-a']);
  });
});
