/**
 * Review s42: the commands the CLI prints for a run stored in PostgreSQL name the database (they named only a data
 * directory and session: pasted, they looked in ./.backpackflow, "unknown run id", or acted on a run of the same id
 * stored there), never with its password; given by BACKPACKFLOW_DATABASE_URL, the variable carries it to the pasted
 * command as it did to this one. Each printed command is parsed by bash, as a paste would be, and run.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, cliJson, FIXTURES, tempDir } from '../cli/helpers.js';
import { freshDatabase } from '../support/pg.js';

const FLOW_MODULE = `${join(FIXTURES, 'approval.mjs')}#buildApprovalFlow`;

/** The CLI arguments bash makes of the printed line after `label` (the command that starts the CLI dropped). */
function printedArgs(text: string, label: string): string[] {
  const line = text.split('\n').find((l) => l.startsWith(label));
  expect(line, text).toBeDefined();
  const out = spawnSync('bash', ['-c', `set -- ${line!.slice(label.length)}\nprintf '%s\\0' "$@"`], { encoding: 'utf8' });
  const words = out.stdout.split('\0').slice(0, -1);
  return words.slice(words.indexOf('--') === 3 ? 4 : 2);
}

describe('commands printed for a run stored in PostgreSQL', () => {
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
  });
  afterAll(async () => {
    await drop();
  });

  it('name the database given by --database-url, without its password, and work when pasted', async () => {
    // Loopback trust authentication takes any password: the URL carries one, as a user's would.
    const withPassword = url.replace(/^postgres:\/\/([^@:]+)@/, 'postgres://$1:s3cret-pw@');
    expect(withPassword).toContain(':s3cret-pw@');
    const cwd = tempDir();
    const env = { BACKPACKFLOW_DATABASE_URL: '' };
    const started = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'pg-ask', '--database-url', withPassword], { cwd, env });
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).not.toContain('s3cret-pw');
    expect(started.stdout).toMatch(/^answer it: .* # with the database password, left out here$/m);
    const answer = printedArgs(started.stdout, 'answer it: ');
    expect(answer).toEqual(['runs', 'resume', 'pg-ask', '--answering', expect.stringMatching(/^\d+$/), '--input', '<json>', '--database-url', url]);
    const resumed = await cliJson(answer.map((a) => (a === '<json>' ? '{"approved":true}' : a)).concat('--json'), { cwd, env });
    expect(resumed).toMatchObject({ runId: 'pg-ask', status: 'completed' });
  });

  it('leave the database out when BACKPACKFLOW_DATABASE_URL gave it: the pasted command reads it the same way', async () => {
    const cwd = tempDir();
    const env = { BACKPACKFLOW_DATABASE_URL: url };
    const started = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'pg-env', '--session', 'team-a'], { cwd, env });
    expect(started.code, started.stderr).toBe(0);
    const answer = printedArgs(started.stdout, 'answer it: ');
    expect(answer).toEqual(['runs', 'resume', 'pg-env', '--answering', expect.stringMatching(/^\d+$/), '--input', '<json>', '--session', 'team-a']);
    const resumed = await cliJson(answer.map((a) => (a === '<json>' ? '{"approved":false}' : a)).concat('--json'), { cwd, env });
    expect(resumed).toMatchObject({ runId: 'pg-env', status: 'completed' });
  });
});
