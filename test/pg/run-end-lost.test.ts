/**
 * A run whose last step committed but whose end (the run.completed batch, a batch of its own) was not stored,
 * because the connection was lost (or the worker was SIGKILLed) between the two commits, is finished by a resume: by
 * resumeRun, and by a worker given its resume job (review s22d, H2: such a run was refused as "incomplete but has no
 * step left to run", its job failed, the run stopped for ever).
 *
 * The loss is made as the runtime sees it: the commit of the batch holding run.completed fails with the driver's
 * CONNECTION_CLOSED before reaching the server (the runtime then reads the log again and finds it was not stored).
 */
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/pg.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODULES = join(root, 'test', 'pg', 'fixtures', 'nodes.mjs');
const FLOW = join(root, 'test', 'pg', 'fixtures', 'chain.json');
const dist = (path: string): Promise<any> => import(join(root, 'dist', path));

/** `store`, whose writers fail the first commit of a batch holding run.completed as a lost connection would. */
function losingTheEnd(store: any): any {
  let lost = false;
  const bind = (target: any, prop: PropertyKey): unknown => {
    const value = Reflect.get(target, prop, target);
    return typeof value === 'function' ? value.bind(target) : value;
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop !== 'openWriter') return bind(target, prop);
      return async (...args: unknown[]) => {
        const writer = await target.openWriter(...args);
        return new Proxy(writer, {
          get(w, p) {
            if (p !== 'commit') return bind(w, p);
            return async (events: { type: string }[]) => {
              if (!lost && events.some((e) => e.type === 'run.completed')) {
                lost = true;
                throw Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' });
              }
              return w.commit(events);
            };
          },
          set(w, p, v) {
            return Reflect.set(w, p, v, w);
          },
        });
      };
    },
  });
}

describe("a run whose end was not stored (connection lost, or worker killed, after its last step's commit)", () => {
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ url, drop } = await freshDatabase()));
  afterAll(async () => drop());

  async function stoppedAtItsEnd(store: any, runId: string): Promise<any> {
    const { openNewRun, runFlow, listRuns } = await dist('index.js');
    const { recordRunFlow, loaderWith } = await dist('cli/backpackflow/flows.js');
    const config = JSON.parse(readFileSync(FLOW, 'utf8'));
    config.nodes[0].params = { steps: 3, delayMs: 0 };
    const lossy = losingTheEnd(store);
    const newRun = await openNewRun({ store: lossy, sessionKey: 'default', runId });
    await recordRunFlow(newRun, { v: 1, flow: { kind: 'config' }, modules: [MODULES] }, config);
    const flow = (await loaderWith([MODULES])).loadFlow(config);
    await expect(runFlow(await flow, { newRun })).rejects.toThrow(/not stored|were not stored/);
    const listed = (await listRuns({ store })).find((r: any) => r.runId === runId);
    expect(listed).toMatchObject({ status: 'stopped', errorCount: 0, lastStep: 3 });
    return config;
  }

  it('resumeRun finishes it (records its end), as the README promises for a stopped run', async () => {
    const { PostgresRunStore } = await dist('store/index.js');
    const { resumeRun } = await dist('index.js');
    const { loaderWith } = await dist('cli/backpackflow/flows.js');
    const store = new PostgresRunStore({ url });
    try {
      const config = await stoppedAtItsEnd(store, 'end-1');
      const flow = await (await loaderWith([MODULES])).loadFlow(config);
      await expect(resumeRun(flow, { store, runId: 'end-1' })).resolves.toMatchObject({ status: 'completed' });
    } finally {
      await store.close();
    }
  });

  it('a worker given its resume job completes it (not failed)', async () => {
    const { PostgresRunStore } = await dist('store/index.js');
    const { RunQueue } = await dist('store/postgres/queue.js');
    const { runWorker } = await dist('cli/backpackflow/worker.js');
    const store = new PostgresRunStore({ url });
    try {
      await stoppedAtItsEnd(store, 'end-2');
      await new RunQueue(store).enqueue({ sessionKey: 'default', runId: 'end-2' }, 'resume', {});
      await runWorker({ databaseUrl: url, modules: [MODULES], concurrency: 1, leaseMs: 2000, pollMs: 50, exitWhenIdle: true, maxAttempts: 5, maxFlowBytes: 1 << 24 });
      const job = (await new RunQueue(store).entries()).find((j: any) => j.runId === 'end-2');
      expect(job.outcome).toBe('completed');
    } finally {
      await store.close();
    }
  });
});
