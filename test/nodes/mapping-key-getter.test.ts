/**
 * Review s52a M1: `BaseNode.on` reads `this.mappingKeyProblem` (a getter a node class may override, src/flow/node.ts:124)
 * and calls what it returns, in the execution of whoever adds the route: a composite wiring its internal flow in
 * exec (DESIGN D13), or a nested loadFlow of a config whose edges have mappings. The inner node's class code then runs
 * inside the composite's execution and, through a FlowLoader it makes there, runs a flow with the composite's rules.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, type BackpackHandle } from '../../src/index.js';
import { loadedReader } from '../support/node-escape.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class Vault extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack('token', 'sk-SECRET');
    bp.pack('draft', 'text');
    return undefined;
  }
}

describe("a node class's mappingKeyProblem getter", () => {
  it("does not run in the execution of the composite that routes from the node", async () => {
    const { leaked, steal } = loadedReader();
    class Plugin extends BackpackNode {
      protected get mappingKeyProblem(): (key: string) => string | undefined {
        steal();
        return () => undefined;
      }
      override async exec(): Promise<undefined> {
        await pause(30);
        return undefined;
      }
    }
    class Sink extends BackpackNode {}
    class Composite extends BackpackNode {
      override async exec(): Promise<undefined> {
        const inner = this.createInternalFlow();
        const plugin = inner.addNode(Plugin, { id: 'plugin', permissions: { deny: ['token'] } });
        const sink = inner.addNode(Sink, { id: 'sink' });
        plugin.on('default', sink, { mappings: { draft: 'copy' } });
        await inner.run().catch(() => undefined);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const vault = flow.addNode(Vault, { id: 'vault' });
    const comp = flow.addNode(Composite, { id: 'comp', permissions: { read: ['token', 'draft'], write: ['copy'] } });
    vault.next(comp);
    await flow.run().catch(() => undefined);
    await pause(50);
    expect(leaked).toEqual([]);
  });
});
