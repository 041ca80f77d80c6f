/**
 * Review s50a M2 and a check of the s49a fix: legitimate patterns around flows that run inside a node.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowLoader } from '../../src/index.js';
import { register } from '../../examples/flows/nodes.js';

describe('legitimate patterns', () => {
  it('a nested loadFlow inside a node loads and runs a config with a composite (internalFlow), as D13 says it runs', async () => {
    const loader = new FlowLoader();
    register(loader);
    class Loads extends BackpackNode {
      override async exec(): Promise<undefined> {
        const inner = await loader.loadFlow({
          version: '2.0.0',
          namespace: 'inner',
          nodes: [
            {
              type: 'Pipeline',
              id: 'pipe',
              internalFlow: { version: '2.0.0', namespace: 'inner.pipe', nodes: [{ type: 'TextSource', id: 's', params: { key: 'nested', text: 'yes' } }], edges: [] },
            },
          ],
          edges: [],
        });
        await inner.run();
        return undefined;
      }
    }
    const outer = new Flow({ namespace: 'app' });
    outer.addNode(Loads, { id: 'loads' });
    await outer.run();
    expect(outer.backpack.peek('nested')).toBe('yes');
  });

  it("a node routes in its own nested flow from its own event subscriber (while the flow packs its input)", async () => {
    const ran: string[] = [];
    class Step extends BackpackNode {
      override post(): undefined {
        ran.push(this.id);
        return undefined;
      }
    }
    class Owner extends BackpackNode {
      override async exec(): Promise<undefined> {
        const flow = this.createNestedFlow();
        const a = flow.addNode(Step, { id: 'a' });
        const b = flow.addNode(Step, { id: 'b' });
        const off = this.eventStreamer.on('backpack.packed', () => a.next(b));
        await flow.run({ q: 1 });
        off();
        return undefined;
      }
    }
    const outer = new Flow({ namespace: 'app' });
    outer.addNode(Owner, { id: 'owner' });
    await outer.run();
    expect(ran).toEqual(['a', 'b']);
  });
});
