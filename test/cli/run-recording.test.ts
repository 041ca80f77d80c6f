/**
 * `run <flow.json>` records the flow config before it builds the flow (so that a large parsed config is not held
 * beside its flow): what that leaves on disk when the build fails, or the flow is invalid.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, MODULES, cli, cliJson, tempDir } from './helpers.js';

const DIST = join(import.meta.dirname, '..', '..', 'dist', 'index.js');

/** A node module whose `Refuses` node throws from its constructor when its params say so (a valid config that cannot be built). */
function refusingModule(dir: string): string {
  const file = join(dir, 'refuses.mjs');
  writeFileSync(
    file,
    `import { BackpackNode } from ${JSON.stringify(DIST)};
export class Refuses extends BackpackNode {
  constructor(config, context) {
    super(config, context);
    if (this.params.refuse === true) throw new Error('this node refuses to be built');
  }
}
`,
  );
  return file;
}

function flowFile(dir: string, refuse: boolean): string {
  const file = join(dir, `flow-${refuse}.json`);
  const nodes = [
    { type: 'Put', id: 'first', params: { key: 'k', value: 1 } },
    { type: 'Refuses', id: 'second', params: { refuse } },
  ];
  writeFileSync(file, JSON.stringify({ version: '2.0.0', namespace: 't', nodes, edges: [{ from: 'first', to: 'second' }] }));
  return file;
}

describe('run: the recorded flow and a flow that cannot be built', () => {
  it('a valid config whose build fails exits 1 naming the node and leaves no run: its id starts a run afterwards', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const modules = ['--modules', MODULES, '--modules', refusingModule(dir)];
    const failed = await cli(['run', flowFile(dir, true), ...modules, '--run-id', 'r1', '--data-dir', dataDir]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/could not create node 'second': this node refuses to be built/);
    // What was recorded before the build is not a run (it stays; a later start of the id records over it).
    const shown = await cli(['runs', 'show', 'r1', '--data-dir', dataDir]);
    expect(shown.code).toBe(1);
    const listed = await cliJson<unknown[]>(['runs', 'list', '--data-dir', dataDir]);
    expect(listed).toEqual([]);
    // The id is free: a run that can be built starts under it, and records its own config.
    const ok = flowFile(dir, false);
    await cliJson(['run', ok, ...modules, '--run-id', 'r1', '--data-dir', dataDir]);
    const recorded = JSON.parse(readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'r1', 'flow.json'), 'utf8')) as unknown;
    expect(recorded).toEqual(JSON.parse(readFileSync(ok, 'utf8')));
  });

  it('an invalid config records nothing', async () => {
    const dataDir = join(tempDir(), 'data');
    const failed = await cli(['run', join(FIXTURES, 'flow.json'), '--run-id', 'r2', '--data-dir', dataDir]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/unknown node type 'Put'/);
    expect(existsSync(join(dataDir, 'sessions', 'default', 'runs', 'r2'))).toBe(false);
  });
});

describe('run: the recorded flow is tied to the run', () => {
  it('a recorded flow.json edited after the run started is refused by fork and resume and reported by verify, naming it; --flow still works', async () => {
    const dataDir = join(tempDir(), 'data');
    const d = ['--data-dir', dataDir];
    const flow = join(FIXTURES, 'flow.json');
    await cli(['run', flow, '--modules', MODULES, '--run-id', 'r1', ...d]);
    const recordedPath = join(dataDir, 'sessions', 'default', 'runs', 'r1', 'flow.json');
    expect((await cli(['runs', 'verify', 'r1', ...d])).code).toBe(0);
    // The fact the first node packs, changed by hand in the recorded config.
    writeFileSync(recordedPath, readFileSync(recordedPath, 'utf8').replace('water boils at 50C', 'water boils at 100C'));
    const verified = await cli(['runs', 'verify', 'r1', ...d]);
    expect(verified.code).toBe(1);
    expect(verified.stdout + verified.stderr).toContain(`${recordedPath} is not the flow document run default/r1 recorded`);
    const fork = await cli(['runs', 'fork', 'r1', '--step', '1', '--new-run-id', 'f1', '--modules', MODULES, ...d]);
    expect(fork.code).toBe(1);
    expect(fork.stderr).toContain(`${recordedPath} is not the flow document run default/r1 recorded`);
    const resume = await cli(['runs', 'resume', 'r1', '--modules', MODULES, ...d]);
    expect(resume.code).not.toBe(0);
    expect(resume.stderr).toContain(`${recordedPath} is not the flow document`);
    // A flow given on the command line is the caller's choice: the fork runs with it.
    const given = await cli(['runs', 'fork', 'r1', '--step', '1', '--new-run-id', 'f2', '--flow', flow, '--modules', MODULES, ...d]);
    expect(given.code).toBe(0);
  });
});
