/**
 * The run store the CLI works on: the files of `--data-dir` (default), or PostgreSQL with `--database-url` (or the
 * BACKPACKFLOW_DATABASE_URL environment variable). Opened once per selection, closed when the command ends.
 */
import { resolve } from 'node:path';
import { FileRunStore, PostgresRunStore, type RunStore } from '../../store/index.js';
import { UsageError } from './errors.js';
import { openedStores as opened } from './open-stores.js';

/** What selects the store. */
export interface StoreOptions {
  dataDir: string;
  databaseUrl?: string;
}

/** The store `options` select (opened once per process and selection). */
export function cliStore(options: StoreOptions): RunStore {
  const key = options.databaseUrl ? `pg:${options.databaseUrl}` : `files:${resolve(options.dataDir)}`;
  let store = opened.get(key);
  if (store === undefined) {
    store = options.databaseUrl ? new PostgresRunStore({ url: options.databaseUrl }) : new FileRunStore(resolve(options.dataDir));
    opened.set(key, store);
  }
  return store;
}

/** The Postgres store `options` select, or a usage error naming `command` when they select files. */
export function cliPostgresStore(options: StoreOptions, command: string): PostgresRunStore {
  if (!options.databaseUrl) throw new UsageError(`${command} needs a database: pass --database-url <url> or set BACKPACKFLOW_DATABASE_URL`);
  return cliStore(options) as PostgresRunStore;
}
