/**
 * The studio's writes: answering a waiting run, resuming, forking. Each runs the built CLI in a child process (as a
 * user's `runs resume` would), so the tests check what lands in the store, and every refusal: no token, another
 * origin, a form's content type, bad ids and steps, a wrong answer (422 with JSON pointers), a second resume while
 * one is under way (409), a run the studio cannot build (409 with the CLI command).
 *
 * The tests run concurrently, each on runs of its own. A resume a test needs held running waits at a gate file the
 * test opens (fixtures/review.mjs), never on a timer, so no outcome depends on how fast the machine is.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, listedRun, listRuns, openNewRun, runDuration, runFlow, type BackpackHandle } from '../../src/index.js';
import { runPaths } from '../../src/store/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { defaultCliInvocation } from '../../src/studio/steer.js';
import { BIN, cli, cliJson, tempDir } from '../cli/helpers.js';
import { get, post, startGatedRun } from './helpers.js';

const REVIEW = join(import.meta.dirname, 'fixtures', 'review.mjs');
let dataDir = '';
let studio: StudioServer;

/**
 * A file the review flow's `publish` waits for (fixtures/review.mjs): a resume given it stays running, in its own
 * process, until the test opens the gate, however slow or fast the machine.
 */
interface Gate {
  path: string;
  /** Resolves once `publish` waits at the gate. */
  entered(): Promise<void>;
  open(): void;
}

/** Every gate made, opened after the file's tests (so that no resume a failed test left behind waits forever). */
const gates: Gate[] = [];

function newGate(): Gate {
  const path = join(tempDir(), 'gate');
  const gate = { path, entered: () => until(() => existsSync(`${path}.entered`), 'the resume reached the gate'), open: () => writeFileSync(path, '') };
  gates.push(gate);
  return gate;
}

/** Resolves once `check` holds (checked every 20 ms, for at most 30 s: a loaded machine may be slow). */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; !(await check()); ) {
    if (Date.now() > deadline) throw new Error(`timed out after 30 s waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts a review run with the CLI in `dir`; it waits for its answer (and once answered, at `gate` when given). */
async function waitingRun(runId: string, gate?: Gate, dir = dataDir): Promise<void> {
  const result = await cliJson(['run', '--flow-module', `${REVIEW}#buildReviewFlow`, '--input', JSON.stringify(gate ? { gate: gate.path } : {}), '--run-id', runId, '--data-dir', dir]);
  expect(result.status).toBe('waiting');
}

/** A flow built in code whose one node waits for an answer. */
function askFlow(): Flow {
  class Ask extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      backpack.pack('answer', await this.interrupt({ question: 'ok?' }));
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'code' });
  flow.addNode(Ask, { id: 'ask' });
  return flow;
}

const auth = (): Record<string, string> => ({ authorization: `Bearer ${studio.token}` });
const write = (path: string, body: unknown, headers: Record<string, string> = {}) => post(studio.port, path, body, { ...auth(), ...headers });

/** The pause run `runId` waits for (InterruptInfo.pause): what an answer from the page names. */
async function asked(runId: string, dir = dataDir): Promise<number | undefined> {
  return (await listRuns({ dataDir: dir })).find((run) => run.runId === runId)?.interrupt?.pause;
}
const read = (path: string) => get(studio.port, path);

beforeAll(async () => {
  dataDir = tempDir();
  // A write answers once its child has ended, or after 60 s: time enough on a loaded machine (a 202 fails these tests).
  studio = await startStudio({ dataDir, port: 0, steering: { cli: [process.execPath, BIN], settleMs: 60_000 } });
}, 120_000);

afterAll(async () => {
  for (const gate of gates) gate.open();
  await studio?.close();
});

describe.concurrent('answering a waiting run from the studio', () => {
  it('a wrong answer is a 422 naming each JSON pointer and the run keeps waiting; a good one completes it as the CLI would', async () => {
    await waitingRun('r_answer');
    const detail = (await read('/api/runs/r_answer')).json;
    expect(detail.meta).toMatchObject({ status: 'waiting', interrupt: { nodeId: 'ask', payload: { question: 'Publish this draft?' } } });
    // The schema of what the node's schema takes: fields with a default (priority, copies) may be left out.
    expect(detail.meta.interrupt.schema.required).toEqual(['approved']);
    expect(detail.steer).toMatchObject({ buildable: true, source: `flow module ${REVIEW}#buildReviewFlow` });
    expect(detail.steer.resumeCommand).toMatch(/runs resume r_answer --data-dir \S+$/);
    expect(detail.job).toBeNull();
    const log = runPaths(dataDir, 'default', 'r_answer').events;
    const before = readFileSync(log, 'utf8');

    const wrong = await write('/api/runs/r_answer/resume', { answer: { approved: 'yes', priority: 'urgent', copies: 0.5, note: '' }, pause: await asked('r_answer') });
    expect(wrong.status).toBe(422);
    expect(wrong.json.parameter).toBe('answer');
    expect(wrong.json.problems.map((p: any) => p.path).sort()).toEqual(['/approved', '/copies', '/note', '/priority']);
    expect(wrong.json.error).toMatch(/^the answer does not match the schema of node 'ask': /);
    const missing = await write('/api/runs/r_answer/resume', {});
    expect(missing.status).toBe(422);
    expect(missing.json.problems).toEqual([{ path: '', message: 'an answer is required' }]);
    expect(readFileSync(log, 'utf8')).toBe(before);

    const good = await write('/api/runs/r_answer/resume', { answer: { approved: true, priority: 'high', copies: 2, tags: ['moon'] }, pause: await asked('r_answer') });
    expect(good.status).toBe(200);
    expect(good.json.job).toMatchObject({ kind: 'resume', runId: 'r_answer', state: 'completed', exitCode: 0, result: { status: 'completed', runId: 'r_answer' } });
    expect(good.json.job.command).toMatch(/runs resume r_answer --data-dir \S+ --answering \d+ --input '<answer>'$/);
    // Recorded like a resume from the CLI: the answer in the log before the node ran again, two segments, the state.
    const events = (await read('/api/runs/r_answer/events?type=interrupt.answered')).json.events;
    expect(events.map((e: any) => e.event.payload.answer)).toEqual([{ approved: true, priority: 'high', copies: 2, tags: ['moon'] }]);
    const listed = await listedRun({ dataDir, runId: 'r_answer' });
    expect(listed).toMatchObject({ status: 'completed' });
    expect(listed!.segments!.map((s) => s.outcome)).toEqual(['waiting', 'completed']);
    const state = (await read('/api/runs/r_answer/state')).json;
    expect(state.items.find((i: any) => i.key === 'published')).toMatchObject({ summary: 'true', provenance: { nodeId: 'publish' } });
    expect((await read('/api/runs/r_answer')).json.job).toMatchObject({ state: 'completed' });
    // A completed run is not resumed again.
    const again = await write('/api/runs/r_answer/resume', { answer: { approved: true }, pause: await asked('r_answer') });
    expect(again.status).toBe(409);
    expect(again.json.error).toContain('already completed: fork it');
  }, 120_000);

  it('a second resume of a run while one is under way is a 409, also when both arrive at once', async () => {
    const gate = newGate();
    await waitingRun('r_busy', gate);
    const answer = { answer: { approved: false, priority: 'low', copies: 1 }, pause: await asked('r_busy') };
    const sent = [write('/api/runs/r_busy/resume', answer), write('/api/runs/r_busy/resume', answer)];
    // The resume that got the run is held at the gate: the first reply is the other one's refusal.
    const refused = await Promise.race(sent);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toContain("a resume of run 'r_busy' started from the studio is still running");
    gate.open();
    const replies = await Promise.all(sent);
    expect(replies.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(replies.find((r) => r.status === 200)!.json.job).toMatchObject({ state: 'completed' });
    expect(await listedRun({ dataDir, runId: 'r_busy' })).toMatchObject({ status: 'completed' });
  }, 120_000);

  it('a run another process is writing is a 409; a resume still running after the settle time is a 202 and shows as the job', async () => {
    const gated = startGatedRun(dataDir, 'r_gated');
    try {
      await gated.waiting;
      const busy = await write('/api/runs/r_gated/resume', {});
      expect(busy.status).toBe(409);
      expect(busy.json.error).toContain('is being written by a live process');
    } finally {
      gated.release();
      await gated.running;
    }
    const quick = await startStudio({ dataDir, port: 0, steering: { cli: [process.execPath, BIN], settleMs: 50 } });
    try {
      const gate = newGate();
      await waitingRun('r_slow', gate);
      const started = await post(quick.port, '/api/runs/r_slow/resume', { answer: { approved: true, priority: 'normal', copies: 1 }, pause: await asked('r_slow') }, { authorization: `Bearer ${quick.token}` });
      expect(started.status).toBe(202);
      expect(started.json.job).toMatchObject({ state: 'running', runId: 'r_slow' });
      const second = await post(quick.port, '/api/runs/r_slow/resume', { answer: { approved: true, priority: 'normal', copies: 1 }, pause: await asked('r_slow') }, { authorization: `Bearer ${quick.token}` });
      expect(second.status).toBe(409);
      expect((await get(quick.port, '/api/runs/r_slow')).json.job).toMatchObject({ state: 'running', runId: 'r_slow' });
      gate.open();
      let job: any;
      await until(async () => {
        job = (await get(quick.port, '/api/runs/r_slow')).json.job;
        expect(job.state === 'running' || job.state === 'completed').toBe(true);
        return job.state === 'completed';
      }, "r_slow's job completed");
      expect(job).toMatchObject({ state: 'completed', exitCode: 0 });
    } finally {
      await quick.close();
    }
  }, 120_000);

  it('a run whose recorded modules are TypeScript is not offered to a studio whose CLI has no TypeScript loader', async () => {
    // The recipe a CLI run records, with a TypeScript module in it, recorded as the run's own when it starts (one
    // changed afterwards is refused as not the run's: store/run-documents.ts).
    await waitingRun('r_ts_model');
    const recipe = JSON.parse(readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'r_ts_model', 'run.recipe.json'), 'utf8')) as { modules: string[] };
    const module = join(tempDir(), 'nodes.ts');
    writeFileSync(module, 'export {};\n');
    const newRun = await openNewRun({ dataDir, runId: 'r_ts' });
    await newRun.saveDocument('recipe', { ...recipe, modules: [module] });
    expect((await runFlow(askFlow(), { newRun })).status).toBe('waiting');
    const detail = (await read('/api/runs/r_ts')).json;
    expect(detail.steer).toMatchObject({ buildable: false, source: expect.stringMatching(/modules are TypeScript .*nodes\.ts.*start the studio through tsx/) });
    expect((await write('/api/runs/r_ts/fork', { step: 0 })).status).toBe(409);
  });

  it('a run whose recorded recipe was changed after it started is not offered: the studio names the file, and refuses the fork', async () => {
    await waitingRun('r_changed');
    const recipePath = join(dataDir, 'sessions', 'default', 'runs', 'r_changed', 'run.recipe.json');
    const recipe = JSON.parse(readFileSync(recipePath, 'utf8')) as { modules: string[] };
    writeFileSync(recipePath, JSON.stringify({ ...recipe, modules: [join(tempDir(), 'elsewhere.mjs')] }));
    const detail = (await read('/api/runs/r_changed')).json;
    expect(detail.steer).toMatchObject({ buildable: false, source: `${recipePath} is not the recipe document run default/r_changed recorded: its BLAKE3 differs from the one the run's start record holds (${join(dataDir, 'sessions', 'default', 'runs', 'r_changed', 'events.jsonl')}, line 2); it was changed or replaced after the run started` });
    expect((await write('/api/runs/r_changed/fork', { step: 0 })).status).toBe(409);
  });

  it('a run recorded without a flow the studio can build is a 409 with the CLI command to run instead', async () => {
    expect((await runFlow(askFlow(), { dataDir, runId: 'r_code' })).status).toBe('waiting');
    const detail = (await read('/api/runs/r_code')).json;
    expect(detail.steer).toMatchObject({ buildable: false, source: 'no flow was recorded with this run (it was started in code, not by the CLI)' });
    const reply = await write('/api/runs/r_code/resume', { answer: 'yes', pause: await asked('r_code') });
    expect(reply.status).toBe(409);
    expect(reply.json.error).toContain("the studio cannot build the flow of run 'r_code'");
    expect(reply.json.command).toBe(`npm run backpackflow -- runs resume r_code --data-dir ${dataDir} --flow-module <file>#<export>`);
    const fork = await write('/api/runs/r_code/fork', { step: 0 });
    expect(fork.status).toBe(409);
    expect(fork.json.command).toContain('runs fork r_code');
  });
});

describe.concurrent('forking from the studio', () => {
  it('starts a new run from a recorded step, recorded with its origin; bad steps and ids are refused', async () => {
    await waitingRun('r_fork_src');
    // Two forks of one run at once (each its own child process), to new ids: both are made.
    const [reply, generated] = await Promise.all([write('/api/runs/r_fork_src/fork', { step: 1, newRunId: 'r_forked' }), write('/api/runs/r_fork_src/fork', { step: 0 })]);
    expect(reply.status).toBe(200);
    expect(reply.json.job).toMatchObject({ kind: 'fork', runId: 'r_forked', from: { runId: 'r_fork_src', step: 1 }, state: 'waiting' });
    const forked = (await read('/api/runs/r_forked')).json;
    expect(forked.forkedFrom).toEqual({ runId: 'r_fork_src', step: 1 });
    expect(forked.meta.status).toBe('waiting');
    // The fork records its recipe like a CLI fork: it can be answered from the studio in turn.
    expect(forked.steer.buildable).toBe(true);
    expect(generated.status).toBe(200);
    expect(generated.json.job.runId).toMatch(/^run_/);
    expect((await write('/api/runs/r_fork_src/fork', { step: 1, newRunId: 'r_forked' })).json.error).toBe("run 'r_forked' already exists: choose another id for the fork");

    for (const [body, parameter, message] of [
      [{ step: 9 }, 'step', /invalid step 9 for run 'r_fork_src': its recorded steps are 0\.\.1/],
      [{ step: -1 }, 'step', /must be an integer >= 0/],
      [{ step: '1' }, 'step', /must be an integer >= 0/],
      [{}, 'step', /invalid step null/],
      [{ step: 1, newRunId: '../x' }, 'newRunId', /invalid newRunId "\.\.\/x"/],
      [{ step: 1, newRunId: null }, 'newRunId', /newRunId must be a string/],
      [{ step: 1, newRunId: ['r_array'] }, 'newRunId', /newRunId must be a string/],
      [{ step: 1, newRunId: { toString: 1 } }, 'newRunId', /newRunId must be a string/],
    ] as const) {
      const bad = await write('/api/runs/r_fork_src/fork', body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.json.parameter).toBe(parameter);
      expect(bad.json.error).toMatch(message);
    }
    expect((await read('/api/runs/null')).status).toBe(404);
    // Two forks to one new id at once: one is made, the other refused, and the refusal speaks of a fork. Meanwhile
    // the first fork is answered (it completes).
    const [both, resumed] = await Promise.all([
      Promise.all([1, 2].map(() => write('/api/runs/r_fork_src/fork', { step: 1, newRunId: 'r_twice' }))),
      write('/api/runs/r_forked/resume', { answer: { approved: true, priority: 'low', copies: 1 }, pause: await asked('r_forked') }),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(both.find((r) => r.status === 409)!.json.error).toMatch(/^(a fork of run 'r_twice'|run 'r_twice' already exists)/);
    expect(resumed.json.job).toMatchObject({ state: 'completed' });
    // The last step of a completed run ended the flow: nothing to run from there.
    const steps = (await read('/api/runs/r_forked')).json.steps;
    const ended = await write('/api/runs/r_forked/fork', { step: steps.last });
    expect(ended.status).toBe(409);
    expect(ended.json.error).toContain(`had ended at step ${steps.last}`);
  }, 120_000);
});

describe.concurrent('studio writes: who may ask', () => {
  it('needs the token (on loopback too), its own origin, a JSON body; ids are validated', async () => {
    await waitingRun('r_guard');
    const answer = { answer: { approved: true, priority: 'low', copies: 1 }, pause: await asked('r_guard') };
    const path = '/api/runs/r_guard/resume';
    const noToken = await post(studio.port, path, answer);
    expect(noToken.status).toBe(401);
    expect(noToken.json).toMatchObject({ parameter: 'token' });
    // The token in the query opens the page, but a write must carry it in the Authorization header.
    expect((await post(studio.port, `${path}?token=${studio.token}`, answer)).status).toBe(401);
    expect((await post(studio.port, path, answer, { authorization: 'Bearer wrong' })).status).toBe(403);
    expect((await write(path, answer, { origin: 'http://evil.example' })).json).toMatchObject({ parameter: 'origin' });
    expect((await write(path, answer, { origin: `http://127.0.0.1:${studio.port + 1}` })).status).toBe(403);
    // Another port of this machine is same-site, not same-origin; a navigation ('none') cannot write either.
    expect((await write(path, answer, { 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await write(path, answer, { 'sec-fetch-site': 'none' })).status).toBe(403);
    expect((await write(path, answer, { host: `evil.example:${studio.port}` })).status).toBe(421);
    // What an HTML form can send is refused before the body is read.
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', '']) {
      const reply = await write(path, JSON.stringify(answer), { 'content-type': type });
      expect(reply.status, type).toBe(415);
      expect(reply.json.parameter).toBe('content-type');
    }
    expect((await write(path, '{"answer":')).json).toMatchObject({ parameter: 'body' });
    expect((await write(path, '[1]')).status).toBe(400);
    expect((await write(path, 'x'.repeat(1024 * 1024 + 1))).status).toBe(413);
    expect((await write('/api/runs/..%2Fx/resume', answer)).json).toMatchObject({ parameter: 'runId' });
    expect((await write('/api/runs/r_guard/resume?session=..', answer)).json).toMatchObject({ parameter: 'session' });
    expect((await write('/api/runs/run_none/resume', answer)).status).toBe(404);
    // A cookie is no token (browsers would send it to every port of 127.0.0.1), nor does opening the page set one.
    expect((await get(studio.port, `/?token=${studio.token}`)).headers['set-cookie']).toBeUndefined();
    const cookie = `bpf_studio_${studio.port}=${studio.token}`;
    expect((await post(studio.port, path, answer, { cookie, origin: `http://127.0.0.1:${studio.port}`, 'sec-fetch-site': 'same-origin' })).status).toBe(401);
    // Nothing above touched the run; the header the page sends is enough to answer it.
    expect((await read('/api/runs/r_guard')).json.meta.status).toBe('waiting');
    const ok = await post(studio.port, path, answer, { ...auth(), origin: `http://127.0.0.1:${studio.port}`, 'sec-fetch-site': 'same-origin' });
    expect(ok.status).toBe(200);
    expect(ok.json.job.state).toBe('completed');
  }, 120_000);

  it('from the sources, the CLI child gets the tsx loader', async () => {
    const argv = defaultCliInvocation();
    expect(argv[0]).toBe(process.execPath);
    expect(argv.at(-1)).toMatch(/src\/cli\/backpackflow\.ts$/);
    const { stdout } = await promisify(execFile)(argv[0]!, [...argv.slice(1), '--version']);
    expect(stdout.trim()).toBe('0.1.0');
  }, 120_000);
});

describe.concurrent('statuses and damage as listRuns sees them', () => {
  it("a run whose writer is gone is 'stopped'; a projection ahead of a cut log is not trusted, and the warning is shown", async ({ onTestFinished }) => {
    // A data directory and a studio of their own: the whole listing is compared with listRuns', and the projection on
    // disk must stay as the run wrote it (the other tests, running meanwhile, write and list runs elsewhere).
    const dataDir = tempDir();
    const own = await startStudio({ dataDir, port: 0 });
    onTestFinished(() => own.close());
    const read = (path: string) => get(own.port, path);
    const cliRun = async (runId: string): Promise<void> => {
      const r = await cli(['run', join(import.meta.dirname, '..', 'cli', 'fixtures', 'flow.json'), '--modules', join(import.meta.dirname, '..', 'cli', 'fixtures', 'nodes.mjs'), '--run-id', runId, '--data-dir', dataDir]);
      expect(r.code).toBe(0);
    };
    await cliRun('r_torn');
    await cliRun('r_cut');
    // Torn: half of its last line (run.completed) is gone, as after a crash mid-write.
    const torn = runPaths(dataDir, 'default', 'r_torn').events;
    const text = readFileSync(torn, 'utf8');
    truncateSync(torn, text.lastIndexOf('\n', text.length - 2) + 10);
    // Cut inside its last step: the stored projection (completed, more events) is now ahead of the log.
    const cut = runPaths(dataDir, 'default', 'r_cut');
    const lines = readFileSync(cut.events, 'utf8').split('\n');
    const last = lines.findLastIndex((l) => l.includes('"checkpoint.saved"'));
    writeFileSync(cut.events, lines.slice(0, last).join('\n') + '\n');
    const projection = readFileSync(cut.runMeta, 'utf8');

    const listed = new Map<string, any>((await read('/api/runs')).json.runs.map((r: any) => [r.runId, r]));
    const expected = new Map((await listRuns({ dataDir, persist: false })).map((m) => [m.runId, m]));
    expect(listed.get('r_torn')).toMatchObject({ status: 'stopped' });
    expect(listed.get('r_torn').damaged).toMatch(/serves \d+ events, but the run's projection/);
    expect(listed.get('r_cut')).toMatchObject({ status: 'stopped', eventCount: expected.get('r_cut')!.eventCount });
    expect(listed.get('r_cut').damaged).toMatch(/events\.jsonl serves \d+ events, but the run's projection .*run\.meta\.json recorded \d+: the log lost its tail/);
    // The studio's row is listRuns' record plus whether its duration is a lower bound (runDuration).
    for (const runId of ['r_torn', 'r_cut']) {
      const meta = expected.get(runId)!;
      expect({ ...listed.get(runId), forkedFrom: undefined }).toEqual({ ...meta, forkedFrom: undefined, durationLowerBound: runDuration(meta)?.lowerBound ?? false });
    }
    const detail = (await read('/api/runs/r_cut')).json;
    expect(detail.meta).toMatchObject({ status: 'stopped', damaged: listed.get('r_cut').damaged });
    // The studio stored nothing: the projection on disk is the one the run wrote.
    expect(readFileSync(cut.runMeta, 'utf8')).toBe(projection);

    // A resume whose process is killed mid-run (the studio ends its children when it closes): stopped, not damaged.
    // Its gate is never opened: the resume is killed while its `publish` waits there.
    const gate = newGate();
    await waitingRun('r_killed', gate, dataDir);
    const doomed = await startStudio({ dataDir, port: 0, steering: { cli: [process.execPath, BIN], settleMs: 50 } });
    const started = await post(doomed.port, '/api/runs/r_killed/resume', { answer: { approved: true, priority: 'low', copies: 1 }, pause: await asked('r_killed', dataDir) }, { authorization: `Bearer ${doomed.token}` });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    await gate.entered();
    await until(async () => (await read('/api/runs/r_killed')).json.meta.status === 'running', 'r_killed shows as running');
    expect((await read('/api/runs/r_killed')).json.meta.status).toBe('running');
    await doomed.close();
    const killed = (await read('/api/runs/r_killed')).json;
    expect(killed.meta.status).toBe('stopped');
    expect(killed.meta.damaged).toBeUndefined();
    expect((await read('/api/runs')).json.runs.find((r: any) => r.runId === 'r_killed')).toMatchObject({ status: 'stopped' });
    expect(killed.steer.buildable).toBe(true);
  }, 120_000);
});
