/**
 * A worker whose read of a run's recorded flow loses its database connection (the server restarting: 57P03 "the
 * database system is shutting down", 57P01, ECONNRESET ...) gives the job back, and the run completes: the README's
 * "A lost connection is not a failure". The errors that name the recorded documents keep the store's error as their
 * cause, which is how the worker tells a lost connection (review s22d, H1: a job was failed for good, its run left
 * stopped at step 3 of 6, after a real server restart).
 *
 * Here the worker runs in this process (the built dist, as the CLI runs it) and the first read of a document fails
 * as the driver fails a statement on a connection the server closed.
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

describe('a worker losing its connection while it reads the recorded flow', () => {
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ url, drop } = await freshDatabase()));
  afterAll(async () => drop());

  it('gives the job back (not failed) and the run completes', async () => {
    const { PostgresRunStore } = await dist('store/index.js');
    const { RunQueue } = await dist('store/postgres/queue.js');
    const { recordRunFlow } = await dist('cli/backpackflow/flows.js');
    const { documentCollector } = await dist('cli/backpackflow/recipe.js');
    const { runWorker } = await dist('cli/backpackflow/worker.js');
    const store = new PostgresRunStore({ url });
    try {
      const config = JSON.parse(readFileSync(FLOW, 'utf8'));
      config.nodes[0].params = { steps: 3, delayMs: 0 };
      const collected = documentCollector();
      await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [MODULES] }, config);
      await new RunQueue(store).enqueue({ sessionKey: 'default', runId: 'r1' }, 'start', {}, collected.documents);

      // The first document read of the worker fails as the driver fails a statement during a server restart (the
      // worker's store gets a method of its own: the class is frozen, its instances may own a property so named).
      const workerStore = new PostgresRunStore({ url, leaseMs: 2000, maxConnections: 3 });
      const original = workerStore.checkDocument.bind(workerStore);
      let failed = false;
      workerStore.checkDocument = (...args: unknown[]) => {
        if (!failed) {
          failed = true;
          return Promise.reject(Object.assign(new Error('the database system is shutting down'), { name: 'PostgresError', code: '57P03', severity: 'FATAL' }));
        }
        return original(...args);
      };
      await runWorker({ databaseUrl: url, store: workerStore, modules: [MODULES], concurrency: 1, leaseMs: 2000, pollMs: 50, exitWhenIdle: true, maxAttempts: 5, maxFlowBytes: 1 << 24 });
      expect(failed).toBe(true);
      const [job] = await new RunQueue(store).entries();
      // Promised: a lost connection is not the run's failure; the job is given back and the run resumed/started.
      expect(job.outcome).toBe('completed');
    } finally {
      await store.close();
    }
  });
});
