/**
 * Handles of the children a node registers (`registerChild(...).handle`, `.withContext(...)`, and theirs in turn)
 * close with the execution whose handle registered them, as the node's own handle does: a timer or a promise the
 * node left running cannot read or write through them while later nodes run (review s23a M1).
 */
import { describe, expect, it } from 'vitest';
import { BackpackError, BackpackNode, Flow, type BackpackHandle } from '../../src/index.js';

describe("a child's handles close with the execution that registered it", () => {
  it("a timer a node left running cannot write through its child's handle while a later node runs", async () => {
    const log: string[] = [];
    class Checker extends BackpackNode {
      override async post(bp: BackpackHandle): Promise<undefined> {
        const before = bp.unpack('draft');
        await new Promise((r) => setTimeout(r, 30));
        const after = bp.unpack('draft');
        log.push(`checker saw ${String(before)} then ${String(after)}`);
        return undefined;
      }
    }
    class Evil extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('draft', 'benign');
        const child = bp.registerChild({ nodeId: 'helper', nodeName: 'Helper', namespace: 'evil.helper' }).handle;
        setTimeout(() => {
          try {
            child.pack('draft', 'MALICIOUS');
            log.push('late write landed');
          } catch (e) {
            log.push(`late write refused: ${(e as Error).message}`);
          }
        }, 10);
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Checker, { id: 'checker' }));
    await flow.run();
    await new Promise((r) => setTimeout(r, 50));
    expect(log).toContain('checker saw benign then benign');
    expect(log).toContain("late write refused: Node 'helper': its backpack handle is closed, the execution of node 'evil' that registered it ended (a timer or a promise left running after prep, exec or post returned); use the handle passed to the running execution");
    expect(flow.backpack.unpack('draft')).toBe('benign');
  });

  it('every operation of a child, a grandchild and their withContext handles works during the execution and throws after it', async () => {
    const handles: BackpackHandle[] = [];
    class Parent extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        const child = bp.registerChild({ nodeId: 'child', nodeName: 'Child', namespace: 'p.child' });
        const grandchild = child.handle.registerChild({ nodeId: 'grand', nodeName: 'Grand', namespace: 'p.child.grand' });
        handles.push(child.handle, child.withContext({}), grandchild.handle, grandchild.withContext({}));
        for (const [i, h] of handles.entries()) h.pack(`k${i}`, i);
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Parent, { id: 'p' });
    await flow.run();
    expect(flow.backpack.keys()).toEqual(['k0', 'k1', 'k2', 'k3']);
    for (const h of handles) {
      for (const op of [() => h.pack('late', 1), () => h.unpack('k0'), () => h.peek('k0'), () => h.has('k0'), () => h.keys(), () => h.getItem('k0'), () => h.delete('k0'), () => h.registerChild({ nodeId: 'x', nodeName: 'X', namespace: `${h.identity.namespace}.x` })]) {
        expect(op).toThrow(BackpackError);
      }
    }
    expect(flow.backpack.keys()).toEqual(['k0', 'k1', 'k2', 'k3']);
  });

  it("a child of the owner's registration (Backpack.registerNode) keeps working: only handles of an execution close", async () => {
    const flow = new Flow();
    const binding = flow.backpack.registerNode({ nodeId: 'tool', nodeName: 'Tool', namespace: 'tool' });
    const child = binding.handle.registerChild({ nodeId: 'sub', nodeName: 'Sub', namespace: 'tool.sub' });
    child.handle.pack('a', 1);
    await flow.run().catch(() => undefined);
    child.withContext({}).pack('b', 2);
    expect(flow.backpack.keys()).toEqual(['a', 'b']);
  });
});
