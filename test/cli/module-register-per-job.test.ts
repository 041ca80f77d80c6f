/**
 * A worker builds many jobs, each with a fresh loader for the modules its run recorded (in whatever list and order).
 * A module's `register(loader)` may also register a provider on the default registry, which takes that only until the
 * first run (review s27, finding 5; s30): so the CLI runs a module's `register` once per process, and replays on every
 * later loader the node types it registered.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/index.js';
import { loaderWith } from '../../src/cli/backpackflow/flows.js';
import { anyRunStarted } from '../../src/nodes/execution.js';

const MODULE = join(import.meta.dirname, 'fixtures', 'provider-module.ts');
const PLAIN = join(import.meta.dirname, 'fixtures', 'plain-module.ts');

describe("a module's register(loader), for the jobs of a worker", () => {
  it('runs once per process; later loaders, of any list of modules, get the types it registered', async () => {
    const { calls } = (await import(MODULE)) as { calls: { register: number } };
    if (anyRunStarted()) {
      // (A test file before this one in this vitest worker ran a flow: the module's provider is refused, as it would
      // be in a worker that loaded it after a run; each load says so.)
      await expect(loaderWith([MODULE])).rejects.toThrow(/once a flow has run/);
      return;
    }
    expect((await loaderWith([MODULE])).isRegistered('Echo')).toBe(true);
    const flow = new Flow({ onMissingRoute: 'end' });
    flow.addNode(BackpackNode, { id: 'a' });
    await flow.run({});
    for (const modules of [[MODULE], [MODULE, PLAIN], [PLAIN, MODULE]]) {
      const loader = await loaderWith(modules);
      expect(loader.isRegistered('Echo')).toBe(true);
      expect(loader.isRegistered('Plain')).toBe(modules.includes(PLAIN));
    }
    expect(calls.register).toBe(1);
  });
});
