/**
 * Savers sharing threads in one Postgres database (workers, each with its own PostgresRunStore): see
 * test/langgraph/fixtures/shared-threads.ts. Each storage is a session of its own in one fresh database.
 */
import { afterAll, beforeAll } from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { sharedThreadCases } from '../langgraph/fixtures/shared-threads.js';
import { freshDatabase } from '../support/pg.js';

let url: string;
let drop: () => Promise<void>;
beforeAll(async () => {
  ({ url, drop } = await freshDatabase());
});
afterAll(async () => drop());

let sessions = 0;
sharedThreadCases('postgres', async () => {
  const sessionKey = `shared-${sessions++}`;
  const stores: PostgresRunStore[] = [];
  return {
    worker: () => {
      const store = new PostgresRunStore({ url, maxConnections: 1, owner: `worker-${sessionKey}-${stores.length}` });
      stores.push(store);
      return new BackpackflowSaver({ store, sessionKey });
    },
    cleanup: async () => {
      for (const store of stores) await store.close();
    },
  };
});
