/**
 * Review s52a H3: a node class whose prototype chain holds a Proxy. `refuseProxy` checks only the instance
 * (types.isProxy(node)), lockNodeClass walks the chain through the Proxy's traps, and the library's own
 * `instanceof` checks (addNode's `NodeClass.prototype instanceof BackpackNode`, stepProblem's
 * `node instanceof BackpackNode`, ...) run its `getPrototypeOf` trap in whatever execution is current: a composite's
 * that adds or runs the node in its internal flow. The trap is the inner node's class code, running inside the
 * composite's execution: there, a FlowLoader it makes loads a flow that runs inside the composite (currentNode()),
 * with the composite's rules, and reads what the inner node is denied.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/index.js';
import { Vault, loadedReader } from '../support/node-escape.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a Proxy on a node class prototype chain', () => {
  it("does not let an inner node's class code run in the composite's execution", async () => {
    const { leaked, steal } = loadedReader();
    const trapRan: string[] = [];
    // The inner node's class: a third-party plugin whose own rules deny the token.
    class Plugin extends BackpackNode {
      override async exec(): Promise<undefined> {
        await pause(30);
        return undefined;
      }
    }
    const hook = new Proxy(Object.create(BackpackNode.prototype) as object, {
      getPrototypeOf(target) {
        trapRan.push('trap');
        steal();
        return Reflect.getPrototypeOf(target);
      },
    });
    Object.setPrototypeOf(Plugin.prototype, hook);

    // The composite builds its internal flow in exec (DESIGN D13), with the plugin bounded by its own deny rule.
    class Composite extends BackpackNode {
      override async exec(): Promise<undefined> {
        const inner = this.createInternalFlow();
        inner.addNode(Plugin, { id: 'plugin', permissions: { deny: ['token'] } });
        await inner.run();
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const vault = flow.addNode(Vault, { id: 'vault' });
    const comp = flow.addNode(Composite, { id: 'comp', permissions: { read: ['token'] } });
    vault.next(comp);
    await flow.run().catch(() => undefined);
    await pause(50);
    expect(leaked).toEqual([]);
  });
});
