/**
 * Connections to PostgreSQL (`postgres`, porsager's driver: pure JavaScript, pipelined, prepared statements): one pool
 * per URL and options, the schema migrated once on first use (see migrations.ts).
 */
import { createRequire } from 'node:module';
import type postgres from 'postgres';
import type { Sql } from 'postgres';
import { StoreError } from '../errors.js';
import { migrate } from './migrations.js';

/** A pool and its migration. */
export interface Database {
  sql: Sql;
  /** The URL without its password, for messages. */
  location: string;
  /** Resolves once the schema is current. */
  ready: Promise<void>;
}

/**
 * A FROM item that makes the statement's own transaction commit without waiting for its WAL to reach the disk
 * (`synchronous_commit = off`, for that transaction only: the setting is local to it). For coordination rows only
 * (leases, queue claims, keyframes), never for a step's events: such a commit is visible at once, and lost only if the
 * server itself crashes within a fraction of a second, which undoes it as if it had not happened (a lease or claim is
 * then free again, a keyframe missing, as after a crash before it). Any later ordinary commit flushes it with its own.
 * A statement that changes nothing does not wait for the disk either way.
 */
export function asyncCommit(sql: Sql): postgres.Fragment {
  return sql`(select set_config('synchronous_commit', 'off', true)) as async_commit`;
}

/** The URL without its password (for messages); a StoreError naming the problem for what is not a postgres URL. */
export function safeLocation(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StoreError(`invalid database URL: expected postgres://user@host:port/database`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new StoreError(`invalid database URL: the scheme is ${JSON.stringify(parsed.protocol)}, expected postgres:`);
  }
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/**
 * The driver, loaded when the first pool opens: a process that never opens one (runs on files, the CLI over a data
 * directory, every user of the library who does not use PostgreSQL) does not load it (about 20 ms of every start).
 * Its CommonJS build, required synchronously, so that opening a pool stays synchronous.
 */
let driver: typeof postgres | undefined;

function loadDriver(): typeof postgres {
  return (driver ??= createRequire(import.meta.url)('postgres') as typeof postgres);
}

/** Opens a pool on `url` (at most `max` connections) and starts migrating the schema. */
export function openDatabase(url: string, options: { max?: number; onStatement?: (query: string) => void } = {}): Database {
  const location = safeLocation(url);
  const sql = loadDriver()(url, {
    max: options.max ?? 4,
    onnotice: () => undefined,
    // Connections of a pool that sits idle are closed, so an idle process does not hold server slots.
    idle_timeout: 30,
    connect_timeout: 10,
    ...(options.onStatement ? { debug: (_connection: number, query: string) => options.onStatement!(query) } : {}),
  });
  const ready = migrate(sql).then(
    () => undefined,
    (error: unknown) => {
      throw new StoreError(`could not prepare the backpackflow schema in ${location}: ${(error as Error).message}`, { cause: error });
    },
  );
  // Awaited by every use; a failure must not count as unhandled before then.
  ready.catch(() => undefined);
  return { sql, location, ready };
}
