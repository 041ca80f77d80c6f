/**
 * A worker builds many jobs with the same modules. A module's `register(loader)` may also register a provider on the
 * default registry, which takes that only until the first run (review s27, finding 5): so the CLI makes one loader per
 * list of modules in a process, and a module registers once, whatever the number of jobs.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/index.js';
import { loaderWith } from '../../src/cli/backpackflow/flows.js';

const MODULE = join(import.meta.dirname, 'fixtures', 'provider-module.ts');

describe("a module's register(loader), for the jobs of a worker", () => {
  it('runs once per process: later jobs build with the same loader', async () => {
    const first = await loaderWith([MODULE]);
    expect(first.isRegistered('Echo')).toBe(true);
    const flow = new Flow({ onMissingRoute: 'end' });
    flow.addNode(BackpackNode, { id: 'a' });
    await flow.run({});
    const second = await loaderWith([MODULE]);
    expect(second).toBe(first);
    const { calls } = (await import(MODULE)) as { calls: { register: number } };
    expect(calls.register).toBe(1);
  });
});
