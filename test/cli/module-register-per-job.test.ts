/**
 * A worker builds every job with a fresh loader, calling each module's `register(loader)` again: a module that also
 * registers a provider there (on the default registry, which takes no registration from code outside any node's run
 * once a flow has run) must keep working for every job (review s27, finding 5). The CLI runs a module's `register` as
 * the owner's setup; code that left a node's execution is never in that context.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, registerProvider } from '../../src/index.js';
import { loaderWith } from '../../src/cli/backpackflow/flows.js';

const MODULE = join(import.meta.dirname, 'fixtures', 'provider-module.ts');

describe("a module's register(loader), for each job of a worker", () => {
  it('registers its provider and node types again after a flow ran', async () => {
    expect((await loaderWith([MODULE])).isRegistered('Echo')).toBe(true);
    const flow = new Flow({ onMissingRoute: 'end' });
    flow.addNode(BackpackNode, { id: 'a' });
    await flow.run({});
    expect((await loaderWith([MODULE])).isRegistered('Echo')).toBe(true);
    // Outside the CLI's setup of a module, the same registration is refused once a flow has run.
    expect(() => registerProvider('mistral', async () => () => undefined as never)).toThrow(/once a flow has run/);
  });
});
