import { PostgresRunStore } from '../../src/store/postgres/run-store.js';
import { freshDatabase } from '../support/pg.js';
import { runStoreConformance } from '../support/run-store-conformance.js';

runStoreConformance('postgres', async () => {
  const { url, drop } = await freshDatabase();
  const opened: PostgresRunStore[] = [];
  const open = (): PostgresRunStore => {
    const store = new PostgresRunStore({ url });
    opened.push(store);
    return store;
  };
  return {
    store: open(),
    reopen: open,
    cleanup: async () => {
      for (const store of opened) await store.close();
      await drop();
    },
  };
});
