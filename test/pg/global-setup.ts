/**
 * The PostgreSQL server of `npm run test:pg`: the one named by BACKPACKFLOW_TEST_DATABASE_URL (what .ci/run starts
 * with scripts/pg-test-cluster.sh), or else a throwaway cluster started here in a temporary directory and stopped at
 * the end. No server is an error, never a skip: the Postgres tests always run against a real server.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export default async function setup(project: TestProject): Promise<() => void> {
  const given = process.env['BACKPACKFLOW_TEST_DATABASE_URL'];
  if (given) {
    project.provide('databaseUrl', given);
    return () => undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'backpackflow-pg-'));
  // The cluster's owner (the postgres user, when we are root) must reach the directory.
  chmodSync(dir, 0o755);
  const cluster = join(dir, 'cluster');
  const script = join(root, 'scripts', 'pg-test-cluster.sh');
  let url: string;
  try {
    url = execFileSync('bash', [script, 'start', cluster, String(await freePort())], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`test:pg needs a PostgreSQL server and could not start one (${stderr.trim() || (error as Error).message}); set BACKPACKFLOW_TEST_DATABASE_URL or install Debian's postgresql`);
  }
  project.provide('databaseUrl', url);
  return () => {
    try {
      execFileSync('bash', [script, 'stop', cluster], { stdio: 'ignore' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
