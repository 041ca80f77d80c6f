/**
 * Review s53a H1: a nested `loadFlow` inside a composite's exec (DESIGN D13) reads the statics of the node classes it
 * loads (`namespaceSegment` while it validates, `fromConfig` while it builds, `name`, `paramsSchema`) directly, in the
 * composite's execution, not as no node (asBuilder). A plugin class's static getter therefore runs as the composite,
 * and through a FlowLoader it makes there, runs a flow with the composite's rules.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowLoader } from '../../src/index.js';
import { Vault, loadedReader } from '../support/node-escape.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function setup(getter: 'namespaceSegment' | 'fromConfig') {
  const { leaked, steal } = loadedReader();
  class Plugin extends BackpackNode {}
  Object.defineProperty(Plugin, getter, {
    configurable: true,
    get() {
      steal();
      return undefined;
    },
  });
  class Composite extends BackpackNode {
    override async exec(): Promise<undefined> {
      const loader = new FlowLoader().register('Plugin', Plugin);
      const inner = await loader
        .loadFlow({ version: '2.0.0', nodes: [{ type: 'Plugin', id: 'plugin', params: {}, permissions: { deny: ['token'] } }] })
        .catch(() => undefined);
      await inner?.run().catch(() => undefined);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  const vault = flow.addNode(Vault, { id: 'vault' });
  const comp = flow.addNode(Composite, { id: 'comp', permissions: { read: ['token'] } });
  vault.next(comp);
  return { flow, leaked };
}

describe("a node class's statics read by a nested loadFlow", () => {
  it('a static namespaceSegment getter does not run as the composite that loads the class', async () => {
    const { flow, leaked } = setup('namespaceSegment');
    await flow.run().catch(() => undefined);
    await pause(50);
    expect(leaked).not.toContain('sk-SECRET');
  });
  it('a static fromConfig getter does not run as the composite that loads the class', async () => {
    const { flow, leaked } = setup('fromConfig');
    await flow.run().catch(() => undefined);
    await pause(50);
    expect(leaked).not.toContain('sk-SECRET');
  });
});
