/** A database of its own for each Postgres test file, on the server of test/pg/global-setup.ts. */
import postgres from 'postgres';
import { afterAll, beforeAll, inject } from 'vitest';
import { PostgresRunStore } from '../../src/store/index.js';

let counter = 0;

/** Creates a fresh database and returns its URL, and a function that drops it. */
export async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = inject('databaseUrl');
  const name = `bpf_test_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const admin = postgres(server, { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const sql = postgres(server, { max: 1, onnotice: () => undefined });
      try {
        await sql.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await sql.end();
      }
    },
  };
}

/**
 * For a test file: a fresh database, a PostgresRunStore on it and a raw connection (one at a time), made before its
 * tests and dropped after them. Read the fields inside the tests.
 */
export function databaseForFile(): { readonly url: string; readonly store: PostgresRunStore; readonly sql: postgres.Sql } {
  const state = {} as { url: string; store: PostgresRunStore; sql: postgres.Sql; drop: () => Promise<void> };
  beforeAll(async () => {
    const { url, drop } = await freshDatabase();
    Object.assign(state, { url, drop, store: new PostgresRunStore({ url }), sql: postgres(url, { max: 1, onnotice: () => undefined }) });
  });
  afterAll(async () => {
    await state.sql?.end();
    await state.store?.close();
    await state.drop?.();
  });
  return state;
}
