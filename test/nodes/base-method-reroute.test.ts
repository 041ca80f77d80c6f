/**
 * Review s50a H1: the base classes' routing methods (BaseNode.prototype.on, BaseFlow.prototype.setEntryNode) are public
 * package exports; they now ask the node's own checks (checkRouteChange, checkEntryChange), so another node's code cannot use them to
 * change which node a composite's internal flow (declared, sealed) runs, or where the owner's own flow goes.
 */
import { describe, expect, it } from 'vitest';
import { BaseFlow, BaseNode, BackpackNode, Flow, FlowError, type BackpackHandle } from '../../src/index.js';

function setup(attack: (target: BackpackNode, self: BackpackNode) => void) {
  const ran: string[] = [];
  let outcome: unknown = 'not tried';
  class Check extends BackpackNode {
    override post(): string {
      ran.push('check');
      return 'rejected';
    }
  }
  class Publish extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      ran.push(this.id);
      bp.pack(`${this.id}.done`, true);
      return undefined;
    }
  }
  class Agent extends BackpackNode {
    protected override buildInternalFlow(flow: Flow): void {
      flow.addNode(Check, { id: 'check' }).on('approved', flow.addNode(Publish, { id: 'publish' }));
    }
  }
  class Evil extends BackpackNode {
    override prep(): undefined {
      try {
        attack(this.successors.get('default') as BackpackNode, this);
        outcome = 'changed';
      } catch (error) {
        outcome = error;
      }
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  const evil = flow.addNode(Evil, { id: 'evil' });
  evil.next(flow.addNode(Agent, { id: 'agent' }));
  return { flow, ran, outcome: () => outcome, Check, Publish };
}

describe("another node's code changes where a flow goes through the base classes' methods", () => {
  it("BaseNode.prototype.on on a node of a composite's declared (sealed) internal flow: the rejected check now publishes", async () => {
    const { flow, ran, outcome } = setup((agent) => {
      const inner = agent.internalFlow!;
      BaseNode.prototype.on.call(inner.getNode('check')!, 'rejected', inner.getNode('publish')!);
    });
    await flow.run();
    expect(ran).toEqual(['check']);
    expect(outcome()).toBeInstanceOf(FlowError);
  });

  it("BaseFlow.prototype.setEntryNode on a composite's declared internal flow: the check is skipped", async () => {
    const { flow, ran, outcome } = setup((agent) => {
      const inner = agent.internalFlow!;
      BaseFlow.prototype.setEntryNode.call(inner, inner.getNode('publish')!);
    });
    await flow.run();
    expect(ran).toEqual(['check']);
    expect(outcome()).toBeInstanceOf(FlowError);
  });

  it("BaseNode.prototype.on on the owner's own (running, sealed) flow: a node routes a rejected approval to publish", async () => {
    const ran: string[] = [];
    let outcome: unknown = 'not tried';
    class Approve extends BackpackNode {
      override post(): string {
        ran.push('approve');
        return 'rejected';
      }
    }
    class Publish extends BackpackNode {
      override post(): undefined {
        ran.push('publish');
        return undefined;
      }
    }
    class Evil extends BackpackNode {
      override prep(): undefined {
        const approve = this.successors.get('default') as BackpackNode;
        try {
          BaseNode.prototype.on.call(approve, 'rejected', approve.successors.get('approved')!);
          outcome = 'changed';
        } catch (error) {
          outcome = error;
        }
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const approve = flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Approve, { id: 'approve' }));
    approve.on('approved', flow.addNode(Publish, { id: 'publish' }));
    await flow.run();
    expect(ran).toEqual(['approve']);
    expect(outcome).toBeInstanceOf(FlowError);
  });
});

describe('mappings added through BaseNode.prototype.on commit as another node', () => {
  it("a node denied 'token' adds a mapping to the next node's route: the copy, made as that node, is readable", async () => {
    const read: unknown[] = [];
    class Vault extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('token', 'sk-SECRET');
        return undefined;
      }
    }
    class Agent extends BackpackNode {}
    class Evil extends BackpackNode {
      override prep(bp: BackpackHandle): undefined {
        read.push(bp.unpack('token'), bp.unpack('leak'));
        const agent = this.successors.get('default');
        const next = agent?.successors.get('default');
        if (agent && next) {
          try {
            BaseNode.prototype.on.call(agent, 'default', next, { mappings: { token: 'leak' } });
          } catch {
            // refused: correct
          }
        }
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow
      .addNode(Vault, { id: 'vault' })
      .next(flow.addNode(Evil, { id: 'evil', permissions: { deny: ['token'] } }))
      .next(flow.addNode(Agent, { id: 'agent' }))
      .next(flow.addNode(Evil, { id: 'evil2', permissions: { deny: ['token'] } }));
    await flow.run();
    expect(read).toEqual([undefined, undefined, undefined, undefined]);
  });
});
