/** Issue 13 through the CLI: run ids, ids given as options, a torn log, and hostile flow files and inputs. */
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { emptyRunMeta, foldRunMetaBatch } from '../../src/store/index.js';
import { FIXTURES, MODULES, cli, cliJson, tempDir } from './helpers.js';

const FLOW = join(FIXTURES, 'flow.json');
const FAILING = join(FIXTURES, 'failing.json');

describe('run ids through the CLI', () => {
  it('run --run-id of a recorded run exits 1 naming the run and leaves its log and recorded flow alone', async () => {
    const d = ['--data-dir', tempDir()];
    await cliJson(['run', FLOW, '--modules', MODULES, '--run-id', 'mine', ...d]);
    const dir = join(d[1]!, 'sessions', 'default', 'runs', 'mine');
    const events = readFileSync(join(dir, 'events.jsonl'));
    const recorded = readFileSync(join(dir, 'flow.json'));
    const again = await cli(['run', FAILING, '--modules', MODULES, '--run-id', 'mine', ...d]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/run default\/mine already exists .*resume it to continue it/);
    expect(readFileSync(join(dir, 'events.jsonl'))).toEqual(events);
    expect(readFileSync(join(dir, 'flow.json'))).toEqual(recorded);
    const fork = await cli(['runs', 'fork', 'mine', '--step', '1', '--modules', MODULES, '--new-run-id', 'mine-2', ...d]);
    expect(fork.code).toBe(0);
    const forkAgain = await cli(['runs', 'fork', 'mine', '--step', '1', '--modules', MODULES, '--new-run-id', 'mine-2', ...d]);
    expect(forkAgain.code).toBe(1);
    expect(forkAgain.stderr).toMatch(/run default\/mine-2 already exists/);
  });

  it("ids starting with '-' and invalid --session values are usage errors naming the option", async () => {
    const d = ['--data-dir', tempDir()];
    const dash = await cli(['run', FLOW, '--modules', MODULES, '--run-id=-x', ...d]);
    expect(dash.code).toBe(2);
    expect(dash.stderr).toContain("--run-id: invalid id '-x': starts with '-'");
    const fork = await cli(['runs', 'fork', 'r', '--step', '1', '--new-run-id=--all', ...d]);
    expect(fork.code).toBe(2);
    expect(fork.stderr).toContain("--new-run-id: invalid id '--all'");
    const memory = await cli(['memory', 'add', 'a note', '--session', '../../etc', ...d]);
    expect(memory.code).toBe(2);
    expect(memory.stderr).toContain("--session: invalid id '../../etc'");
    const list = await cli(['runs', 'list', '--session', 'a b', ...d]);
    expect(list.code).toBe(2);
    expect(list.stderr).toContain("--session: invalid id 'a b'");
  });
});

describe('damaged run files through the CLI', () => {
  it('runs list survives a corrupt run.meta.json: the run is rebuilt from its log and listed with the others', async () => {
    const d = ['--data-dir', tempDir()];
    const first = await cliJson(['run', FLOW, '--modules', MODULES, '--run-id', 'one', ...d]);
    await cliJson(['run', FLOW, '--modules', MODULES, '--run-id', 'two', ...d]);
    const before = await cliJson(['runs', 'list', ...d]);
    writeFileSync(join(d[1]!, 'sessions', 'default', 'runs', first.runId, 'projections', 'run.meta.json'), '{');
    const list = await cli(['runs', 'list', '--json', ...d]);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual(before);
    expect(list.stderr).toContain('corrupt run projection');
    expect(list.stderr).toContain('run.meta.json');
  });

  it('runs events and runs list count every event of the log when the stored projection lags behind it (a crash before it was stored)', async () => {
    const d = ['--data-dir', tempDir()];
    await cliJson(['run', FLOW, '--modules', MODULES, '--run-id', 'lag', ...d]);
    const meta = join(d[1]!, 'sessions', 'default', 'runs', 'lag', 'projections', 'run.meta.json');
    const full = JSON.parse(readFileSync(meta, 'utf8')).data; // stored sealed: { checksum, data }
    const events = readFileSync(join(d[1]!, 'sessions', 'default', 'runs', 'lag', 'events.jsonl'), 'utf8').trim().split('\n');
    // What a run killed after its first batch leaves: the projection of that batch alone.
    const firstBatch = events.slice(0, 2).map((line) => JSON.parse(line));
    writeFileSync(meta, JSON.stringify(foldRunMetaBatch(emptyRunMeta('default', 'lag'), firstBatch)));
    const page = await cliJson(['runs', 'events', 'lag', '--page-size', '500', ...d]);
    expect(page.total).toBe(events.length);
    expect(page.events).toHaveLength(events.length);
    expect((await cliJson(['runs', 'list', ...d]))[0]).toEqual(full);
  });

  it('after a torn last line, runs show and runs list agree: stopped, and runs resume says why it cannot continue', async () => {
    const d = ['--data-dir', tempDir()];
    await cliJson(['run', FLOW, '--modules', MODULES, '--run-id', 'torn', ...d]);
    const log = join(d[1]!, 'sessions', 'default', 'runs', 'torn', 'events.jsonl');
    const text = readFileSync(log, 'utf8');
    truncateSync(log, text.lastIndexOf('\n', text.length - 2) + 1 + 15);
    const show = await cliJson(['runs', 'show', 'torn', ...d]);
    expect(show.status).toBe('stopped');
    const resume = await cli(['runs', 'resume', 'torn', '--modules', MODULES, ...d]);
    expect(resume.code).toBe(1);
    expect(resume.stderr).not.toContain('already completed');
    expect(resume.stderr).toMatch(/run\.meta\.json records events up to seq \d+, but .*events\.jsonl serves them up to seq \d+: the log was cut or damaged/);
    expect((await cliJson(['runs', 'list', ...d]))[0]).toMatchObject({ runId: 'torn', status: 'stopped' });
  });
});

describe('hostile flow files and inputs through the CLI', () => {
  const deepValue = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

  it('a flow file with a UTF-8 byte order mark validates and runs', async () => {
    const dir = tempDir();
    const path = join(dir, 'bom.json');
    writeFileSync(path, '\uFEFF' + readFileSync(FLOW, 'utf8'));
    expect((await cliJson(['validate', path, '--modules', MODULES])).valid).toBe(true);
    expect(await cliJson(['run', path, '--modules', MODULES, '--data-dir', dir])).toMatchObject({ steps: 3 });
    const input = join(dir, 'input.json');
    writeFileSync(input, '\uFEFF{"question":"with a BOM"}');
    expect(await cliJson(['run', path, '--modules', MODULES, '--data-dir', dir, '--input', `@${input}`])).toMatchObject({ steps: 3 });
  });

  it('100,000-deep nesting in a flow file: validate and run both refuse it, naming the JSON path and the limit', async () => {
    const dir = tempDir();
    const path = join(dir, 'deep.json');
    const flow = readFileSync(FLOW, 'utf8').replace('"value": 1', `"value": ${deepValue(100_000)}`);
    expect(flow).not.toBe(readFileSync(FLOW, 'utf8'));
    writeFileSync(path, flow);
    const validate = await cli(['validate', path, '--modules', MODULES, '--json']);
    expect(validate.code).toBe(1);
    const problems = JSON.parse(validate.stdout).errors;
    expect(problems).toEqual([{ path: expect.stringMatching(/^\/nodes\/1\/params\/value\/a\/a\/a\/a\/…\(\d+ more\)…\/a$/), message: expect.stringContaining('the limit is 512 levels') }]);
    const run = await cli(['run', path, '--modules', MODULES, '--data-dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${problems[0].path}: ${problems[0].message}`);
    expect(run.stderr).not.toContain('Maximum call stack');
  });

  it('100,000-deep --input is refused with the path and the limit, inline and from a file', async () => {
    const dir = tempDir();
    const input = join(dir, 'input.json');
    writeFileSync(input, deepValue(100_000));
    for (const arg of [`@${input}`, `{"q":${deepValue(2000)}}`]) {
      const run = await cli(['run', FLOW, '--modules', MODULES, '--data-dir', dir, '--input', arg]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/(input file .*input\.json|--input): \/(a|q)\/a\/a.*: nested more than 512 levels deep \(the limit is 512 levels of arrays and objects\)/);
    }
  });

  it('a flow file over the size limit is refused naming its size and --max-flow-bytes, which raises the limit', async () => {
    const dir = tempDir();
    const size = readFileSync(FLOW).length;
    for (const command of ['validate', 'run']) {
      const refused = await cli([command, FLOW, '--modules', MODULES, ...(command === 'run' ? ['--data-dir', dir] : []), '--max-flow-bytes', String(size - 1)]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`flow file ${FLOW} is ${size} bytes, over the limit of ${size - 1} bytes; pass --max-flow-bytes <n> to accept it`);
    }
    expect((await cliJson(['validate', FLOW, '--modules', MODULES, '--max-flow-bytes', String(size)])).valid).toBe(true);
    const bad = await cli(['validate', FLOW, '--max-flow-bytes', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--max-flow-bytes must be a positive integer, got 'lots'");
  });
});
