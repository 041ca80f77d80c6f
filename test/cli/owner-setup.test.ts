/**
 * Code evaluated while the CLI runs a module's `register(loader)` (a node module the owner's register imports lazily)
 * that keeps its async context (`AsyncLocalStorage.snapshot()`) gains nothing by it (review s28, finding 1; s29): the
 * CLI's setup is no context of its own, and from its node's exec the code cannot replace the default `openai` provider.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, defaultProviders } from '../../src/index.js';
import { loaderWith } from '../../src/cli/backpackflow/flows.js';

const MODULE = resolve(__dirname, 'fixtures/setup-owner-module.ts');

describe("node code and the owner's setup", () => {
  it('cannot re-enter it from its exec after a run started', async () => {
    // job 1 runs (any flow): the default registries are sealed from here on
    const warm = new Flow({ onMissingRoute: 'end' });
    warm.setEntryNode(warm.addNode(class A extends BackpackNode {}, { id: 'a' }));
    await warm.run({});
    // job 2 is built with the owner's module: its register lazily imports the third-party node
    const loader = await loaderWith([MODULE]);
    const flow = await loader.loadFlow({ version: '2.0.0', namespace: 'j2', nodes: [{ type: 'Fancy', id: 'f', params: {} }], edges: [] });
    await flow.run({});
    const { outcome, evilFactory } = await import('./fixtures/setup-third-party-node.js');
    expect({ registered: outcome.registered === true, defaultOpenaiIsEvil: defaultProviders.get('openai')?.factory === evilFactory }).toEqual({
      registered: false,
      defaultOpenaiIsEvil: false,
    });
  });
});
