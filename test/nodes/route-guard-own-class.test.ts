/**
 * Review s51a H1: BaseNode.on asked `this.checkRouteChange(...)`, a protected method looked up on
 * the node itself. A node's class is node code: it overrides the hook (or its constructor assigns an own
 * `checkRouteChange`, which the hardened prototype's accessor allows) and every check BackpackNode puts there (the
 * flow has run / is sealed, another node's code, stepProblem) was gone for its own routes. Now the check is the library's route guard (setRouteGuard). Before, the node rewrote its
 * own route in the owner's running, sealed flow: it chooses where the flow goes, skipping the approval the author drew.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, BaseNode, Flow, FlowError, type BackpackHandle, type BackpackNodeConfig } from '../../src/index.js';

function approvalFlow(Gate: new (config: BackpackNodeConfig, context: never) => BackpackNode) {
  const ran: string[] = [];
  class Approve extends BackpackNode {
    override post(): string {
      ran.push('approve');
      return 'rejected';
    }
  }
  class Publish extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      ran.push('publish');
      bp.pack('published', true);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  const gate = flow.addNode(Gate as never, { id: 'gate' }) as BackpackNode;
  const approve = gate.next(flow.addNode(Approve, { id: 'approve' }));
  approve.on('approved', flow.addNode(Publish, { id: 'publish' }));
  return { flow, ran };
}

describe("a node class cannot turn off the route checks for its nodes (review s51a H1)", () => {
  it('an override of the protected hook: the node reroutes itself mid-run (sealed flow) past the approval', async () => {
    let outcome: unknown = 'not tried';
    class Gate extends BackpackNode {
      protected checkRouteChange(): void {} // the hook BaseNode.on used to ask: now never asked
      override post(): undefined {
        const approve = this.successors.get('default')!;
        try {
          this.on('default', approve.successors.get('approved')!);
          outcome = 'changed';
        } catch (error) {
          outcome = error;
        }
        return undefined;
      }
    }
    const { flow, ran } = approvalFlow(Gate as never);
    await flow.run();
    expect(ran).toEqual(['approve']);
    expect(flow.backpack.peek('published')).toBeUndefined();
    expect(outcome).toBeInstanceOf(FlowError);
  });

  it('an own property assigned in the constructor (no override in the class body) does the same', async () => {
    let outcome: unknown = 'not tried';
    class Gate extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: never) {
        super(config, context);
        (this as unknown as { checkRouteChange: () => void }).checkRouteChange = () => undefined;
      }
      override post(): undefined {
        const approve = this.successors.get('default')!;
        try {
          BaseNode.prototype.on.call(this, 'default', approve.successors.get('approved')!);
          outcome = 'changed';
        } catch (error) {
          outcome = error;
        }
        return undefined;
      }
    }
    const { flow, ran } = approvalFlow(Gate as never);
    await flow.run();
    expect(ran).toEqual(['approve']);
    expect(flow.backpack.peek('published')).toBeUndefined();
    expect(outcome).toBeInstanceOf(FlowError);
  });
});
