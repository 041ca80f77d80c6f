/** A database of its own for each Postgres test file, on the server of test/pg/global-setup.ts. */
import postgres from 'postgres';
import { inject } from 'vitest';

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
