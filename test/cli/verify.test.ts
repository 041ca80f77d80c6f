import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cutLogInHalf, recordCountingRun } from '../runtime/fixtures/counting-run.js';
import { cli, tempDir } from './helpers.js';

async function recorded(): Promise<{ dataDir: string; dir: string }> {
  const dataDir = tempDir();
  await recordCountingRun(dataDir, 'r1', 50, 10);
  return { dataDir, dir: join(dataDir, 'sessions', 'default', 'runs', 'r1') };
}

describe('backpackflow runs verify', () => {
  it('says verified and exits 0 for an untouched run; --json prints the report', async () => {
    const { dataDir } = await recorded();
    const human = await cli(['runs', 'verify', 'r1', '--data-dir', dataDir]);
    expect([human.code, human.stderr]).toEqual([0, '']);
    expect(human.stdout).toMatch(/✓ run r1: verified \(\d+ events, chain [0-9a-f]{16}…, 5 keyframes\)/);
    const json = await cli(['runs', 'verify', 'r1', '--data-dir', dataDir, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, status: 'verified', problems: [] });
  });

  it('names the first line that disagrees and exits 1 for an edited log', async () => {
    const { dataDir, dir } = await recorded();
    const path = join(dir, 'events.jsonl');
    const lines = readFileSync(path, 'utf8').split('\n');
    const at = lines.findIndex((l) => l.includes('"valueSummary":"17"'));
    lines[at] = lines[at]!.replace('"valueSummary":"17"', '"valueSummary":"71"');
    writeFileSync(path, lines.join('\n'));
    const result = await cli(['runs', 'verify', 'r1', '--data-dir', dataDir]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/✗ run r1: damaged \(first line that disagrees: \d+\)/);
    expect(result.stdout).toMatch(/events\.jsonl: lines \d+-\d+ do not match the chain hash on line \d+: the log was changed there/);
    const json = await cli(['runs', 'verify', 'r1', '--data-dir', dataDir, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, status: 'damaged', log: { chain: 'damaged' } });
  });

  it('calls a log without chain hashes unverifiable and fails (exit 1), with a warning on stderr', async () => {
    const { dataDir, dir } = await recorded();
    const path = join(dir, 'events.jsonl');
    writeFileSync(path, readFileSync(path, 'utf8').replace(/,"chain":"[0-9a-f]{64}"\}/g, '}'));
    // The batch marker as writers of that time left it: with no record of the size the log was closed with.
    writeFileSync(join(dir, 'events.pending'), JSON.stringify({ gen: 1, start: 0, end: 0 }));
    // Keyframes of that time carried no chain hash either (with them, see the next test).
    rmSync(join(dir, 'checkpoint'), { recursive: true, force: true });
    const result = await cli(['runs', 'verify', 'r1', '--data-dir', dataDir]);
    expect(result.stdout).toMatch(/unverifiable: no chain .*nothing proves it unchanged/);
    expect(result.stderr).toMatch(/warning: run r1 has no chain hashes .*cannot be verified/);
    expect(result.code).toBe(1);
  });

  it('calls a log stripped of its chain hashes damaged when its keyframes still record them', async () => {
    const { dataDir, dir } = await recorded();
    const path = join(dir, 'events.jsonl');
    writeFileSync(path, readFileSync(path, 'utf8').replace(/,"chain":"[0-9a-f]{64}"\}/g, '}'));
    rmSync(join(dir, 'events.pending'), { force: true });
    rmSync(join(dir, 'projections'), { recursive: true, force: true });
    const result = await cli(['runs', 'verify', 'r1', '--json', '--data-dir', dataDir]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { status: string; problems: string[] };
    expect(report.status).toBe('damaged');
    expect(report.problems.join('\n')).toMatch(/its chain fields were removed/);
  });
});

describe('backpackflow runs events over a cut log', () => {
  it('is an error naming the files, not 8 pages of which the last are empty', async () => {
    const { dataDir, dir } = await recorded();
    const path = join(dir, 'events.jsonl');
    cutLogInHalf(path);
    const result = await cli(['runs', 'events', 'r1', '--data-dir', dataDir, '--page-size', '50']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/run\.meta\.json counts \d+ events, but .*events\.jsonl serves \d+: the log was cut or damaged \(backpackflow runs verify r1\)/);
    expect(result.stderr).toMatch(/warning: .*events\.jsonl: lines \d+-\d+ come after its last chain hash/);
  });

  it('serves the pages the chain vouches for when no projection claims more, with the warning on stderr', async () => {
    const { dataDir, dir } = await recorded();
    const path = join(dir, 'events.jsonl');
    cutLogInHalf(path);
    rmSync(join(dir, 'projections', 'run.meta.json'));
    const result = await cli(['runs', 'events', 'r1', '--data-dir', dataDir, '--page-size', '50', '--json']);
    expect(result.code).toBe(0);
    const page = JSON.parse(result.stdout) as { total: number; pages: number; events: unknown[] };
    expect(page.events.length).toBe(Math.min(50, page.total));
    const last = await cli(['runs', 'events', 'r1', '--data-dir', dataDir, '--page-size', '50', '--page', String(page.pages), '--json']);
    expect((JSON.parse(last.stdout) as { events: unknown[] }).events.length).toBe(page.total - 50 * (page.pages - 1));
    expect(result.stderr).toMatch(/warning: .*events\.jsonl: lines \d+-\d+ come after its last chain hash/);
  });
});
