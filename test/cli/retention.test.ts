/** `runs delete` and `runs prune` as processes: what they print, exit codes, --dry-run and --json. */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, MODULES, cli, cliJson, tempDir } from './helpers.js';

const FLOW = join(FIXTURES, 'flow.json');
let dataDir = '';
const d = () => ['--data-dir', dataDir];

beforeAll(async () => {
  dataDir = tempDir();
  for (const id of ['r1', 'r2', 'r3']) {
    const run = await cli(['run', FLOW, '--modules', MODULES, '--run-id', id, ...d(), '--input', '{"question":"what boils?"}', '--json']);
    expect(run.code, run.stderr).toBe(0);
  }
}, 60_000);

describe('backpackflow runs delete / prune', () => {
  it('prune needs a criterion (usage error, exit 2) and refuses a bad age', async () => {
    const none = await cli(['runs', 'prune', ...d()]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('runs prune needs at least one of --older-than, --status, --keep-last');
    const bad = await cli(['runs', 'prune', '--older-than', 'yesterday', ...d()]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--older-than: 'yesterday' is neither an age");
  });

  it('prune --dry-run lists what would go and deletes nothing; prune --keep-last deletes the oldest', async () => {
    const dry = await cliJson(['runs', 'prune', '--keep-last', '1', '--dry-run', ...d()]);
    expect(dry.dryRun).toBe(true);
    expect(dry.deleted.map((r: { runId: string }) => r.runId)).toEqual(['r2', 'r1']);
    expect((await cliJson(['runs', 'list', ...d()])).map((r: { runId: string }) => r.runId)).toEqual(['r1', 'r2', 'r3']);
    const text = await cli(['runs', 'prune', '--keep-last', '2', '--status', 'completed,failed', ...d()]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('deleted 1 run, kept 2');
    expect((await cliJson(['runs', 'list', ...d()])).map((r: { runId: string }) => r.runId)).toEqual(['r2', 'r3']);
  });

  it('delete removes the named runs; a missing one is reported and exits 1; --dry-run deletes nothing', async () => {
    const dry = await cliJson(['runs', 'delete', 'r2', '--dry-run', ...d()]);
    expect(dry).toEqual({ dryRun: true, deleted: ['r2'], missing: [], refused: [] });
    const result = await cli(['runs', 'delete', 'r2', 'nope', ...d()]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('✓ deleted r2');
    expect(result.stdout).toContain("✗ nope: no such run in session 'default'");
    const bad = await cli(['runs', 'delete', '../x', ...d()]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("runId: invalid id '../x'");
    expect((await cliJson(['runs', 'list', ...d()])).map((r: { runId: string }) => r.runId)).toEqual(['r3']);
  });
});
