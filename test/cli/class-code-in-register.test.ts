/**
 * Class code the library runs while the CLI has a module register its node types (a Proxy on a class's prototype
 * chain) never runs: `FlowLoader.register` refuses such a class before reading it (review s52a H3), so it cannot
 * replace the default `openai` provider after a flow has run (review s29, finding 1).
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, defaultProviders } from '../../src/index.js';
import { loaderWith } from '../../src/cli/backpackflow/flows.js';

const MODULE = resolve(__dirname, 'fixtures/proxy-class-module.ts');

describe("class code run while a module registers its node types", () => {
  it('cannot replace the default openai provider after a run started', async () => {
    const warm = new Flow({ onMissingRoute: 'end' });
    warm.setEntryNode(warm.addNode(class A extends BackpackNode {}, { id: 'a' }));
    await warm.run({});
    const before = defaultProviders.get('openai')?.factory;
    // A worker's later job builds with the owner's module: a class with a Proxy on its chain is refused before any of
    // its traps runs (review s52a H3; before, the trap ran inside register, as no node).
    await expect(loaderWith([MODULE])).rejects.toThrow(/a node class with a Proxy in its prototype chain is refused/);
    const { outcome, evilFactory } = await import('./fixtures/proxy-class-node.js');
    expect(outcome.tries).toBe(0);
    expect({ registered: outcome.registered, defaultOpenaiIsEvil: defaultProviders.get('openai')?.factory === evilFactory, unchanged: defaultProviders.get('openai')?.factory === before }).toEqual({
      registered: false,
      defaultOpenaiIsEvil: false,
      unchanged: true,
    });
  });
});
