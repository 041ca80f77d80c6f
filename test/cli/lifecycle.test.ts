/**
 * Issue 14 through the built CLI: a flow built in code (--flow-module) pauses for an answer, `runs list --status
 * waiting` and `runs show` say what it waits for, `runs resume --input` answers it with no other flag (the recipe
 * recorded with the run), and a fork records where it came from; start times and segments through --json.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainEnv } from '../support/env.js';
import { BIN, cli, cliJson, FIXTURES, tempDir } from './helpers.js';

const FLOW_MODULE = `${join(FIXTURES, 'approval.mjs')}#buildApprovalFlow`;

describe('pausing and answering through the CLI', () => {
  it('runs a flow module, lists and shows the waiting run, answers it, and forks it with lineage', async () => {
    const dataDir = tempDir();
    const d = ['--data-dir', dataDir];
    const started = await cliJson(['run', '--flow-module', FLOW_MODULE, '--run-id', 'ask-1', ...d]);
    expect(started).toMatchObject({ runId: 'ask-1', status: 'waiting', interrupt: { nodeId: 'ask', namespace: 'cli.review.ask', payload: { question: 'Publish this draft?' } } });

    const human = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'ask-2', ...d]);
    expect(human.stdout).toContain("is waiting for an answer to node 'ask' (cli.review.ask)");
    // The command names the pause (the seq of its run.waiting), as `runs show` and `runs list --json` do.
    expect(human.stdout).toMatch(/runs resume ask-2 --answering \d+ --input '<json>'/);

    const waiting = await cliJson(['runs', 'list', '--status', 'waiting', ...d]);
    expect(waiting.map((r: { runId: string }) => r.runId)).toEqual(['ask-1', 'ask-2']);
    const shown = await cliJson(['runs', 'show', 'ask-1', ...d]);
    expect(shown).toMatchObject({ status: 'waiting', interrupt: { namespace: 'cli.review.ask', schema: { type: 'object', required: ['approved'] } } });
    const shownText = await cli(['runs', 'show', 'ask-1', ...d]);
    expect(shownText.stdout).toMatch(/waiting for an answer to node 'ask' \(cli\.review\.ask\): \{"question":"Publish this draft\?"/);
    expect(shownText.stdout).toContain('answer schema: {');

    // A bad answer: exit 1, the JSON path in the message, still waiting.
    const bad = await cli(['runs', 'resume', 'ask-1', '--input', '{"approved":"yes"}', ...d]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/\/approved: .*still waiting/);
    expect((await cliJson(['runs', 'list', '--status', 'waiting', ...d])).map((r: { runId: string }) => r.runId)).toEqual(['ask-1', 'ask-2']);

    // An answer to another pause than the one the run waits for (the person saw an older question): refused, nothing written.
    const pause = shown.interrupt.pause as number;
    expect(shownText.stdout).toContain(`runs resume ask-1 --answering ${pause} --input '<json>'`);
    const stale = await cli(['runs', 'resume', 'ask-1', '--answering', String(pause - 1), '--input', '{"approved":true}', ...d]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`the answer is to pause ${pause - 1}, but it now waits for pause ${pause} (node 'ask', cli.review.ask), another question`);
    expect((await cliJson(['runs', 'list', '--status', 'waiting', ...d])).map((r: { runId: string }) => r.runId)).toEqual(['ask-1', 'ask-2']);
    expect((await cli(['runs', 'resume', 'ask-1', '--answering', String(pause), ...d])).code).toBe(2);

    // The answer to the pause it waits for, with no flag but --input and --answering: the flow module is recorded with the run.
    const done = await cliJson(['runs', 'resume', 'ask-1', '--answering', String(pause), '--input', '{"approved":true}', ...d]);
    expect(done).toMatchObject({ runId: 'ask-1', status: 'completed', steps: 3 });
    const record = (await cliJson(['runs', 'list', ...d])).find((r: { runId: string }) => r.runId === 'ask-1');
    expect(record.status).toBe('completed');
    expect(record.segments.map((s: { outcome: string }) => s.outcome)).toEqual(['waiting', 'completed']);
    expect(record.startedAt).toBe(record.segments[0].startedAt);
    expect(record.durationMs).toBe(record.segments[0].durationMs + record.segments[1].durationMs);
    const trace = await cliJson(['runs', 'show', 'ask-1', ...d]);
    expect(trace.segments).toHaveLength(2);
    expect(trace.startedAt).toBe(record.startedAt);

    // A fork from step 1 (after draft): lineage recorded and shown, not "resumed".
    const fork = await cliJson(['runs', 'fork', 'ask-1', '--step', '1', '--new-run-id', 'ask-fork', ...d]);
    expect(fork).toMatchObject({ runId: 'ask-fork', status: 'waiting' });
    const forked = (await cliJson(['runs', 'list', ...d])).find((r: { runId: string }) => r.runId === 'ask-fork');
    expect(forked.forkedFrom).toEqual({ runId: 'ask-1', step: 1 });
    const forkText = await cli(['runs', 'show', 'ask-fork', ...d]);
    expect(forkText.stdout).toContain('fork of ask-1 at step 1');
    expect(forkText.stdout).not.toContain('resumed');
    expect((await cliJson(['runs', 'resume', 'ask-fork', '--input', '{"approved":false}', ...d])).status).toBe('completed');
  });

  it('--input @- reads the answer from standard input (how the studio hands a child an answer: no file, no argument)', async () => {
    const dataDir = tempDir();
    const d = ['--data-dir', dataDir];
    await cliJson(['run', '--flow-module', FLOW_MODULE, '--run-id', 'ask-stdin', ...d]);
    const resume = (input: string) => spawnSync(process.execPath, [BIN, 'runs', 'resume', 'ask-stdin', '--input', '@-', ...d, '--json'], { input, env: plainEnv(), encoding: 'utf8' });
    const bad = resume('{"approved":');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('--input from standard input is not valid JSON');
    const done = resume('\ufeff{"approved":true}');
    expect(done.status, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ runId: 'ask-stdin', status: 'completed' });
  });

  it('warns on stderr when an action has no route', async () => {
    const dataDir = tempDir();
    const result = await cli(['run', '--flow-module', FLOW_MODULE, '--run-id', 'r', '--data-dir', dataDir]);
    expect(result.code).toBe(0);
    const answered = await cli(['runs', 'resume', 'r', '--input', '{"approved":false}', '--data-dir', dataDir]);
    expect(answered.code).toBe(0);
    expect(answered.stderr).toMatch(/no route for action 'rejected' from node 'review' \(cli\.review\)/);
  });

  it('refuses a run without a flow or with both a flow file and a flow module (usage, exit 2)', async () => {
    expect((await cli(['run'])).code).toBe(2);
    expect((await cli(['run', 'x.json', '--flow-module', FLOW_MODULE])).code).toBe(2);
  });
});
