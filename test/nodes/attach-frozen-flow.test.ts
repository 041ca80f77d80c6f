/**
 * Review s51a H3: an internal flow is reachable from every node (`internalFlow`), so it must be frozen, as
 * createNestedFlow makes it: a flow a node built with `new Flow({ backpack: handle })` took own methods from any code
 * (a `run` of another node's, which the composite then called in its execution). attachInternalFlow refuses it.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError, type BackpackHandle } from '../../src/index.js';

class Step extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack(this.id, true);
    return undefined;
  }
}

describe('attachInternalFlow takes only a frozen flow built on the node', () => {
  it('a flow built with new Flow({ backpack: handle }) is refused, naming the ways to build one; createNestedFlow works', async () => {
    const outcomes: unknown[] = [];
    class Agent extends BackpackNode {
      override async exec(): Promise<string | undefined> {
        const loose = new Flow({ backpack: this.backpack });
        loose.addNode(Step, { id: 'loose' });
        try {
          this.attachInternalFlow(loose);
          outcomes.push('attached');
        } catch (error) {
          outcomes.push(error);
        }
        const nested = this.createNestedFlow();
        nested.addNode(Step, { id: 'nested' });
        this.attachInternalFlow(nested);
        return nested.run();
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Agent, { id: 'agent' });
    await flow.run();
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toBeInstanceOf(FlowError);
    expect((outcomes[0] as Error).message).toContain("Node 'agent': attachInternalFlow takes a flow built on this node (flow.createChildFlow(node), node.createNestedFlow() or node.createInternalFlow())");
    expect(flow.backpack.peek('nested')).toBe(true);
    expect(flow.backpack.peek('loose')).toBeUndefined();
  });
});
