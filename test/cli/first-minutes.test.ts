/**
 * What a new user meets in the first minutes, each as the README audit found it: an invalid run id is bad usage (exit
 * 2), not an "unknown run"; `runs list` of an empty session says where the runs are; a listed run without a start
 * shows no 1970 date; `--help` gives a default once; an access error names its class once; a node class from another
 * copy of the library is named as such.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AccessDeniedError } from '../../src/backpack/errors.js';
import { BackpackNode as OurBackpackNode, FlowLoader } from '../../src/index.js';
import { cli, cliJson, cliProcess, tempDir } from './helpers.js';

const FLOW = join(import.meta.dirname, 'fixtures', 'flow.json');
const MODULES = join(import.meta.dirname, 'fixtures', 'nodes.mjs');

describe('the first minutes with the CLI', () => {
  it('an invalid run id is bad usage (exit 2) naming the id, for every reader', async () => {
    const dataDir = tempDir();
    for (const command of [['runs', 'show'], ['runs', 'state'], ['runs', 'events'], ['runs', 'verify']]) {
      const result = await cli([...command, '../tour', '--data-dir', dataDir]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/invalid run id '\.\.\/tour'/);
    }
  });

  it('runs list of an empty session names the sessions that have runs; --json stays the empty list', async () => {
    const dataDir = tempDir();
    expect((await cli(['run', FLOW, '--modules', MODULES, '--session', 's1', '--data-dir', dataDir])).code).toBe(0);
    const listed = await cli(['runs', 'list', '--data-dir', dataDir]);
    expect(listed.stdout).toMatch(/no runs in session 'default' \(runs are in session s1: add --session <key>\)/);
    expect(await cliJson(['runs', 'list', '--data-dir', dataDir])).toEqual([]);
    expect((await cli(['runs', 'list', '--data-dir', tempDir()])).stdout.trim()).toBe('no runs');
  });

  it('a run listed without a start (its projection gone, its log edited in the middle) shows no start date', async () => {
    const dataDir = tempDir();
    expect((await cli(['run', FLOW, '--modules', MODULES, '--run-id', 'gone', '--data-dir', dataDir])).code).toBe(0);
    const dir = join(dataDir, 'sessions', 'default', 'runs', 'gone');
    rmSync(join(dir, 'projections'), { recursive: true });
    const log = join(dir, 'events.jsonl');
    writeFileSync(log, readFileSync(log, 'utf8').replace('water boils at 50C', 'water boils at 90C'));
    const listed = await cli(['runs', 'list', '--data-dir', dataDir]);
    expect(listed.stdout).toMatch(/gone +default +damaged/);
    expect(listed.stdout).not.toContain('1970');
  });

  it('--help gives a default once', async () => {
    const help = (await cli(['runs', 'fork', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toMatch(/largest flow file accepted, in bytes \(default: 16777216\)/);
    expect(help.match(/16777216/g)).toHaveLength(1);
  });
});

describe('errors that say what was wrong once', () => {
  it('an AccessDeniedError names its class once', () => {
    const error = new AccessDeniedError('secret', 'reader', 'write', "deny 'secret'");
    expect(String(error)).toBe("AccessDeniedError: node 'reader' may not write key 'secret': deny 'secret'");
  });

  it('a node class of another copy of the library is named as such', () => {
    /** As a module that imports another copy of backpackflow gets it: a class of the same name, not ours. */
    class BackpackNode {}
    class Elsewhere extends BackpackNode {}
    expect(() => new FlowLoader().register('Elsewhere', Elsewhere as unknown as typeof OurBackpackNode)).toThrow(
      /expected a BackpackNode class: Elsewhere extends a BackpackNode of another copy of backpackflow/,
    );
    expect(() => new FlowLoader().register('Plain', class Plain {} as unknown as typeof OurBackpackNode)).toThrow(/expected a BackpackNode class$/);
  });
});

describe('node modules the CLI cannot use, named as such', () => {
  it('a TypeScript module run by plain node gets the way to run it; a module exporting a class of another copy is refused naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpf-modules-'));
    try {
      const ts = join(dir, 'nodes.ts');
      writeFileSync(ts, 'export const x: number = 1;\n');
      const typescript = await cliProcess(['validate', FLOW, '--modules', ts]);
      expect(typescript.code).toBe(1);
      expect(typescript.stderr).toMatch(/cannot import module .*nodes\.ts: .*a TypeScript module: run the CLI as `node --import tsx <backpackflow>`/);
      const foreign = join(dir, 'foreign.mjs');
      writeFileSync(foreign, 'class BackpackNode {}\nexport class Put extends BackpackNode {}\n');
      const refused = await cli(['validate', FLOW, '--modules', foreign]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/module .*foreign\.mjs exports Put, a BackpackNode of another copy of backpackflow/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
