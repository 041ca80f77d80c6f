/**
 * The commands the CLI prints for a person to paste (`answer it:`, `inspect it:`) work as printed: they name the data
 * directory and session the run is in (`runs show` left them out, so its answer command looked in the default place
 * and failed), and quote what a shell would split (a data directory with a space broke every printed command). Each
 * printed line is parsed by bash, as a paste would be, and run. A flow module in TypeScript that Node cannot import
 * says how to run the CLI so that it can (as `--modules` did).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN, cli, cliJson, cliProcess, FIXTURES, MODULES, tempDir } from './helpers.js';

const FLOW_MODULE = `${join(FIXTURES, 'approval.mjs')}#buildApprovalFlow`;

/** The words bash makes of `line` (what a paste of it runs). */
function shellWords(line: string): string[] {
  const out = spawnSync('bash', ['-c', `set -- ${line}\nprintf '%s\\0' "$@"`], { encoding: 'utf8' });
  expect(out.status, out.stderr).toBe(0);
  return out.stdout.split('\0').slice(0, -1);
}

/** The CLI arguments of the printed command after `label` in `text` (the prefix that starts the CLI dropped). */
function printedArgs(text: string, label: string): string[] {
  const line = text.split('\n').find((l) => l.startsWith(label));
  expect(line, text).toBeDefined();
  const words = shellWords(line!.slice(label.length));
  // In a checkout the CLI is `npm run backpackflow --`; installed, `npx backpackflow`.
  const start = words.indexOf('--') === 3 ? 4 : 2;
  expect(words.slice(0, start).join(' ')).toMatch(/^(npm run backpackflow --|npx backpackflow)$/);
  return words.slice(start);
}

describe('commands the CLI prints', () => {
  it("work as printed: the answer command of `run` and of `runs show`, with a data dir a shell would split, in another session", async () => {
    const dataDir = join(tempDir(), "runs here, it's mine");
    mkdirSync(dataDir);
    const where = ['--data-dir', dataDir, '--session', 'team-a'];
    const started = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'ask-1', ...where]);
    expect(started.code, started.stderr).toBe(0);
    const fromRun = printedArgs(started.stdout, 'answer it: ');
    expect(fromRun).toEqual(['runs', 'resume', 'ask-1', '--answering', expect.stringMatching(/^\d+$/), '--input', '<json>', '--data-dir', dataDir, '--session', 'team-a']);
    const shown = await cli(['runs', 'show', 'ask-1', ...where]);
    const fromShow = printedArgs(shown.stdout, 'answer it: ');
    expect(fromShow).toEqual(fromRun);

    const answered = await cliJson(fromShow.map((a) => (a === '<json>' ? '{"approved":true}' : a)).concat('--json'));
    expect(answered).toMatchObject({ runId: 'ask-1', status: 'completed' });

    const done = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'ask-2', '--input', '{"draft":"d"}', ...where]);
    const resumed = await cli(printedArgs(done.stdout, 'answer it: ').map((a) => (a === '<json>' ? '{"approved":false}' : a)));
    expect(resumed.code, resumed.stderr).toBe(0);
    const inspect = printedArgs(resumed.stdout, 'inspect it: ');
    expect(inspect).toEqual(['runs', 'show', 'ask-2', '--data-dir', dataDir, '--session', 'team-a']);
    const inspected = await cli(inspect);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(inspected.stdout).toMatch(/^run ask-2 /);
  });

  it('the default data directory and session are left out of the printed command', async () => {
    const cwd = tempDir();
    const started = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'here'], { cwd });
    expect(printedArgs(started.stdout, 'answer it: ')).toEqual(['runs', 'resume', 'here', '--answering', expect.stringMatching(/^\d+$/), '--input', '<json>']);
  });

  it('a run that failed says how to resume it, with the modules it was given, and that command resumes it', async () => {
    const dataDir = join(tempDir(), 'data dir');
    const failed = await cli(['run', join(FIXTURES, 'failing.json'), '--modules', MODULES, '--run-id', 'bad', '--data-dir', dataDir]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('not fixed yet');
    const label = 'backpackflow: warning: run bad did not complete; once its cause is fixed, resume it from its last step: ';
    const args = printedArgs(failed.stderr, label);
    expect(args).toEqual(['runs', 'resume', 'bad', '--modules', MODULES, '--data-dir', dataDir]);
    const resumed = await cliJson([...args, '--json'], { env: { BPF_TEST_FIXED: '1' } });
    expect(resumed).toMatchObject({ runId: 'bad', status: 'completed', steps: 2 });
    // A run refused before it started (its id is taken) is not offered a resume.
    const refused = await cli(['run', join(FIXTURES, 'failing.json'), '--modules', MODULES, '--run-id', 'bad', '--data-dir', dataDir]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).not.toContain('resume it from its last step');
  });

  it('a TypeScript flow module Node cannot import says how to run the CLI', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const module = join(dir, 'agent.ts');
    const source = pathToFileURL(join(BIN, '..', '..', 'index.js')).href;
    writeFileSync(
      module,
      `import { BackpackNode, Flow } from '${source}';\n` +
        `class Ask extends BackpackNode { async post(): Promise<undefined> { await this.interrupt('Go?'); return undefined; } }\n` +
        `export function build(): Flow { const flow = new Flow({ namespace: 'ts' }); flow.addNode(Ask, { id: 'ask' }); return flow; }\n`,
    );
    const hint = '(a TypeScript module: run the CLI as `node --import tsx <backpackflow>`, or give its compiled JavaScript)';
    const given = await cliProcess(['run', '--flow-module', `${module}#build`, '--run-id', 't1', '--data-dir', dataDir]);
    expect(given.code).toBe(1);
    expect(given.stderr).toContain(`cannot import flow module ${module}`);
    expect(given.stderr).toContain(hint);
  });
});
