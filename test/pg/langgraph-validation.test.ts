/**
 * The LangGraph checkpointer conformance suite, `@langchain/langgraph-checkpoint-validation`, run whole against
 * BackpackflowSaver over the Postgres run store (as test/langgraph/validation.test.ts runs it over files): each
 * checkpointer gets a session of its own in one fresh database, so instances never see each other's threads.
 */
import { randomUUID } from 'node:crypto';
import * as vitest from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { freshDatabase } from '../support/pg.js';

const globals = globalThis as Record<string, unknown>;
for (const name of ['describe', 'it', 'test', 'expect', 'beforeAll', 'afterAll', 'beforeEach', 'afterEach'] as const) globals[name] ??= vitest[name];

const { validate, deltaChannelHistoryTests } = await import('@langchain/langgraph-checkpoint-validation');

let database: Awaited<ReturnType<typeof freshDatabase>> | undefined;
vitest.afterAll(async () => database?.drop());

const stores = new Map<BackpackflowSaver, PostgresRunStore>();
const initializer = {
  checkpointerName: 'BackpackflowSaver (Postgres)',
  async createCheckpointer(): Promise<BackpackflowSaver> {
    database ??= await freshDatabase();
    const store = new PostgresRunStore({ url: database.url, maxConnections: 2 });
    const saver = new BackpackflowSaver({ store, sessionKey: `lg-${randomUUID().slice(0, 8)}` });
    stores.set(saver, store);
    return saver;
  },
  async destroyCheckpointer(saver: BackpackflowSaver): Promise<void> {
    await saver.close();
    await stores.get(saver)!.close();
    stores.delete(saver);
  },
};

validate(initializer);
// Opt-in in the package (not part of `validate`): the walk that rebuilds DeltaChannel state from stored writes.
deltaChannelHistoryTests(initializer);
