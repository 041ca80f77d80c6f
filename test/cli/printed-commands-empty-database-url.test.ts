/**
 * Review s43: output.ts commandLine (80a5b48) takes `place.databaseUrl !== undefined` for "runs in PostgreSQL". An
 * empty database URL (`--database-url ''`, or BACKPACKFLOW_DATABASE_URL exported empty, as a compose file or CI
 * template does with an unset variable) is a string, yet the CLI runs on files then (run-store.ts:
 * `options.databaseUrl ? postgres : files`). The printed command then leaves out `--data-dir`: pasted, it looks in
 * ./.backpackflow (another run of the same id there, or "unknown run id"). Before 80a5b48 it named the data dir.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, FIXTURES, tempDir } from './helpers.js';

const FLOW_MODULE = `${join(FIXTURES, 'approval.mjs')}#buildApprovalFlow`;

function printed(text: string, label: string): string {
  const line = text.split('\n').find((l) => l.startsWith(label));
  expect(line, text).toBeDefined();
  return line!;
}

describe('printed commands of a run on files, with an empty database URL', () => {
  it("--database-url '': the run is in --data-dir, and the printed command says so", async () => {
    const dataDir = join(tempDir(), 'data');
    mkdirSync(dataDir);
    const started = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'e1', '--data-dir', dataDir, '--database-url', '']);
    expect(started.code, started.stderr).toBe(0);
    expect(existsSync(join(dataDir, 'sessions'))).toBe(true); // on files, in dataDir
    expect(printed(started.stdout, 'answer it: ')).toContain(`--data-dir ${dataDir}`);
  });

  it('BACKPACKFLOW_DATABASE_URL exported empty: the printed command names --data-dir', async () => {
    const dataDir = join(tempDir(), 'data');
    mkdirSync(dataDir);
    const started = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'e2', '--data-dir', dataDir], { env: { BACKPACKFLOW_DATABASE_URL: '' } });
    expect(started.code, started.stderr).toBe(0);
    expect(printed(started.stdout, 'answer it: ')).toContain(`--data-dir ${dataDir}`);
    const shown = await cli(['runs', 'show', 'e2', '--data-dir', dataDir], { env: { BACKPACKFLOW_DATABASE_URL: '' } });
    expect(shown.code, shown.stderr).toBe(0);
    expect(printed(shown.stdout, 'answer it: ')).toContain(`--data-dir ${dataDir}`);
  });
});
