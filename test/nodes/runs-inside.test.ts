/**
 * Which execution may run a flow built on a node's handle, and namespaces that would make one owner's nodes look like
 * parts of another's (DESIGN D4, D6). Found by the adversarial review of 2026-11-28: "runs inside" was decided by
 * namespace prefix, so a composite could run the declared internal flow of a composite inside it with input (packed
 * as that inner node, which never ran), and a subflow could take a node's namespace, its nodes then counting as
 * that node's parts.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError } from '../../src/index.js';

class Leaf extends BackpackNode {}

class InnerComposite extends BackpackNode {
  protected override buildInternalFlow(flow: Flow): void {
    flow.addNode(Leaf, { id: 'leaf' });
  }
}

describe('a flow built on a node runs only in that node\'s own execution', () => {
  it("a composite cannot run the declared internal flow of a composite inside it with input, packing as that inner node", async () => {
    const outcome: string[] = [];
    class Outer extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(InnerComposite, { id: 'b' });
      }
      override async exec(): Promise<undefined> {
        const b = this.internalFlow!.getNode('b') as BackpackNode;
        await b.internalFlow!.run({ verdict: 'approved' }).then(
          () => outcome.push('ran'),
          (e: unknown) => outcome.push((e as Error).message),
        );
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Outer, { id: 'a' });
    await flow.run();
    expect(flow.backpack.getItem('verdict')).toBeUndefined();
    expect(outcome).toEqual([expect.stringMatching(/runs inside node 'b': run it from that node's prep, exec or post/)]);
  });

  it('a composite still runs its own declared internal flow, with input packed as itself', async () => {
    class Own extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Leaf, { id: 'leaf' });
      }
      override async exec(): Promise<undefined> {
        await this.internalFlow!.run({ note: 'mine' });
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Own, { id: 'own' });
    await flow.run();
    expect(flow.backpack.getItem('note')?.metadata.sourceNodeId).toBe('own');
  });
});

describe('namespaces of nodes and subflows never overlap within a flow', () => {
  it('addSubflow refuses the namespace of a node of the flow, or one under it', () => {
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Leaf, { id: 'a' });
    for (const namespace of ['a', 'a.x', 'a.x.y']) {
      expect(() => flow.addSubflow({ namespace }), namespace).toThrow(new FlowError(`Flow '${flow.id}': subflow namespace 'app.${namespace}' overlaps node 'a': namespaces are unique within a flow, and one's nodes may not sit under another's; give the subflow another namespace`));
    }
    expect(flow.addSubflow({ namespace: 'ab' }).namespace).toBe('app.ab');
  });

  it("addSubflow refuses a namespace at, under or above another subflow's", () => {
    const flow = new Flow();
    flow.addSubflow({ namespace: 'tools.web' });
    for (const namespace of ['tools.web', 'tools.web.search', 'tools']) expect(() => flow.addSubflow({ namespace }), namespace).toThrow(/overlaps subflow/);
    expect(flow.addSubflow({ namespace: 'tools.files' }).namespace).toBe('tools.files');
  });

  it("addNode refuses a node whose namespace a subflow's nodes would sit under, a chosen segment too", () => {
    const flow = new Flow();
    flow.addSubflow({ namespace: 'a.x' });
    expect(() => flow.addNode(Leaf, { id: 'a' })).toThrow(/^Node 'a' \(namespace 'a'\) of flow '.*' overlaps subflow 'a\.x' \('a\.x'\): namespaces are unique/);
    expect(() => flow.addNode(Leaf, { id: 'other', namespaceSegment: 'a' })).toThrow(/^Node 'other' \(namespace 'a'\) .* overlaps subflow 'a\.x'/);
    expect(flow.addNode(Leaf, { id: 'b' }).namespace).toBe('b');
  });
});
