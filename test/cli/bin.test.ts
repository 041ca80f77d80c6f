/**
 * The built binary itself, as a process: exit codes 0, 1 and 2, a process that ends once its command is done, and
 * the same output as the in-process runs that the other CLI tests use (test/cli/in-process.ts) for the same commands
 * on the same store.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, cliProcess, FIXTURES, MODULES, tempDir } from './helpers.js';

describe('the backpackflow binary', () => {
  it('runs a flow and exits 0; usage errors exit 2, errors 1; in-process runs print and exit the same', async () => {
    const dataDir = tempDir();
    const d = ['--data-dir', dataDir];
    const run = await cliProcess(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--run-id', 'r1', ...d]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('run id: r1');

    const commands: Array<[string[], number]> = [
      [['runs', 'list', '--json', ...d], 0],
      [['runs', 'show', 'r1', ...d], 0],
      [['runs', 'state', 'r1', '--step', '1', ...d], 0],
      [['--help'], 0],
      [['runs', 'frobnicate'], 2],
      [['runs', 'state', 'run_nope', ...d], 1],
    ];
    const results = await Promise.all(commands.map(async ([args]) => ({ args, process: await cliProcess(args), inProcess: await cli(args) })));
    for (const [i, { args, process, inProcess }] of results.entries()) {
      expect(process.code, args.join(' ')).toBe(commands[i]![1]);
      expect(inProcess, args.join(' ')).toEqual(process);
    }
  });

  it("prints the library's process warnings in its own form, once each (not Node's `(node:PID) ...` lines)", async () => {
    const dataDir = tempDir();
    expect((await cli(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--run-id', 'w', '--data-dir', dataDir])).code).toBe(0);
    // A log stripped of its chain hashes and cut after its close: readers warn about both, several readers per command.
    const log = join(dataDir, 'sessions', 'default', 'runs', 'w', 'events.jsonl');
    writeFileSync(log, readFileSync(log, 'utf8').replace(/,"chain":"[0-9a-f]{64}"\}/g, '}'));
    for (const args of [['runs', 'list'], ['runs', 'show', 'w']]) {
      const { stderr } = await cliProcess([...args, '--data-dir', dataDir]);
      expect(stderr).not.toMatch(/\(node:\d+\)|--trace-warnings/);
      const lines = stderr.trim().split('\n');
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toMatch(/^backpackflow: warning: /);
      expect(new Set(lines).size).toBe(lines.length);
      expect(stderr).toMatch(/carries no chain hash on its first line/);
    }
  });
});
