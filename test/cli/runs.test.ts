import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runPaths } from '../../src/store/index.js';
import { recordCountingRun } from '../runtime/fixtures/counting-run.js';
import { FIXTURES, MODULES, cli, cliJson, tempDir } from './helpers.js';

const FLOW = join(FIXTURES, 'flow.json');
let dataDir = '';
let runId = '';
let runOutput = '';

beforeAll(async () => {
  dataDir = tempDir();
  const run = await cli(['run', FLOW, '--modules', MODULES, '--data-dir', dataDir, '--input', '{"question":"what boils?"}']);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  runOutput = run.stdout;
  runId = /run id: (\S+)/.exec(run.stdout)?.[1] ?? '';
}, 30_000);

describe('backpackflow run', () => {
  it('shows the live trace and prints the run id', () => {
    expect(runId).toMatch(/^run_/);
    expect(runOutput).toContain('▶ run t');
    expect(runOutput).toContain('↻ attempt 1/2 failed: Error: flaky first attempt');
    expect(runOutput).toContain('⊘ quarantined fact: contradicts the sources');
    expect(runOutput).toContain(`npm run backpackflow -- runs show ${runId}`);
  });
});

describe('backpackflow runs (inspection of a stored run)', () => {
  it('list, show, state, diff, blame and events print one JSON document each', async () => {
    const d = ['--data-dir', dataDir];
    const [list, show, state0, state, diff, blame, blameInput, events, packed, page2] = await Promise.all([
      cliJson(['runs', 'list', ...d]),
      cliJson(['runs', 'show', runId, ...d]),
      cliJson(['runs', 'state', runId, '--step', '0', ...d]),
      cliJson(['runs', 'state', runId, ...d]),
      cliJson(['runs', 'diff', runId, '--from', '1', '--to', '3', ...d]),
      cliJson(['runs', 'blame', runId, 'fact', ...d]),
      cliJson(['runs', 'blame', runId, 'question', ...d]),
      cliJson(['runs', 'events', runId, '--page-size', '5', ...d]),
      cliJson(['runs', 'events', runId, '--type', 'backpack.packed', '--namespace', 't.*', ...d]),
      cliJson(['runs', 'events', runId, '--page-size', '5', '--page', '2', ...d]),
    ]);
    // list: the one run, completed
    expect(list.map((r: any) => [r.runId, r.status])).toEqual([[runId, 'completed']]);
    // show: the tree of nodes with durations, routes, the retry and the quarantine under the node that made them
    expect(show.status).toBe('completed');
    const nodes = show.items.filter((i: any) => i.kind === 'node').map((i: any) => i.node);
    expect(nodes.map((n: any) => n.namespace)).toEqual(['t.fact', 't.count', 't.check']);
    expect(nodes.every((n: any) => typeof n.durationMs === 'number')).toBe(true);
    expect(show.items.filter((i: any) => i.kind === 'route').map((i: any) => `${i.from}>${i.to}`)).toEqual(['fact>count', 'count>check']);
    expect(nodes[2].items.map((i: any) => i.kind)).toEqual(['retry', 'quarantine']);
    expect(nodes[2].action).toBe('done');
    // state at step 0: the input only, without a writer node
    expect(state0.step).toBe(0);
    expect(state0.items.map((i: any) => [i.key, i.provenance.nodeId])).toEqual([['question', null]]);
    // state at the end: provenance per key, the poisoned fact quarantined
    expect(state.step).toBe(3);
    expect(state.items.find((i: any) => i.key === 'count')).toMatchObject({ value: 1, summary: '1', provenance: { nodeId: 'count', namespace: 't.count', version: 1 } });
    expect(state.quarantined.map((q: any) => [q.key, q.quarantine.reason, q.provenance.nodeId])).toEqual([['fact', 'contradicts the sources', 'fact']]);
    // diff 1 → 3: count added by node count, fact quarantined by check
    expect(diff.changes.map((c: any) => [c.key, c.change, c.by.nodeId])).toEqual([
      ['fact', 'quarantined', 'fact'],
      ['count', 'added', 'count'],
      ['checked', 'added', 'check'],
    ]);
    expect(diff.changes[0].before).toBe('"water boils at 50C"');
    expect(diff.changes[0].quarantine).toMatchObject({ reason: 'contradicts the sources', nodeId: 'check', summary: '"water boils at 50C"', replaced: false });
    expect(diff.counts).toEqual({ added: 2, modified: 0, deleted: 0, quarantined: 1 });
    // blame: every write of the key with node, namespace, step, version and value summary
    expect(blame.writes.map((w: any) => [w.step, w.nodeId, w.namespace, w.version, w.action, w.summary])).toEqual([
      [1, 'fact', 't.fact', 1, 'pack', '"water boils at 50C"'],
      [3, 'check', 't.check', null, 'quarantine', '(quarantined)'],
    ]);
    expect(blameInput.writes.map((w: any) => [w.step, w.nodeId, w.summary])).toEqual([[0, null, '"what boils?"']]);
    // events: pages through the log; filters by type and namespace pattern
    expect(events.events).toHaveLength(5);
    expect(events.events[0].type).toBe('run.started');
    expect(events.pages).toBe(Math.ceil(events.total / 5));
    expect(page2.events[0].seq).toBe(events.events[4].seq + 1);
    expect(packed.events.map((e: any) => e.payload.key)).toEqual(['fact', 'count', 'checked']);
  }, 30_000);

  it('human output: the trace tree, the state with provenance, the diff with who changed it, the blame table', async () => {
    const d = ['--data-dir', dataDir];
    const [show, state, diff, blame, list] = await Promise.all([
      cli(['runs', 'show', runId, ...d]),
      cli(['runs', 'state', runId, '--step', '2', ...d]),
      cli(['runs', 'diff', runId, '--from', '0', '--to', '2', ...d]),
      cli(['runs', 'blame', runId, 'fact', ...d]),
      cli(['runs', 'list', ...d]),
    ]);
    expect(show.stdout).toMatch(/^run run_\S+ t completed/);
    expect(show.stdout).toMatch(/└─ ✓ Check t\.check \S+ → done\n {3}├─ ↻ attempt 1\/2 failed: Error: flaky first attempt\n {3}└─ ⊘ quarantined fact: contradicts the sources/);
    expect(show.stdout).toContain('├─ → route default: fact → count');
    expect(state.stdout).toContain('backpack of');
    expect(state.stdout).toMatch(/fact = "water boils at 50C"\n {4}v1 by fact @ t\.fact/);
    expect(diff.stdout).toContain('2 added, 0 modified, 0 deleted, 0 quarantined');
    expect(diff.stdout).toContain('+ count = 1  by count @ t.count');
    expect(blame.stdout).toMatch(/1 +fact +t\.fact +v1 +"water boils at 50C"/);
    expect(blame.stdout).toMatch(/3 +check +t\.check +⊘ quarantined: contradicts the sources/);
    expect(list.stdout).toContain(runId);
  }, 30_000);

  it('bad input exits 1 with a message naming what: unknown run id, invalid step with the valid range', async () => {
    const d = ['--data-dir', dataDir];
    const [unknown, step, diffStep, page] = await Promise.all([
      cli(['runs', 'state', 'run_nope', ...d]),
      cli(['runs', 'state', runId, '--step', '99', ...d, '--json']),
      cli(['runs', 'diff', runId, '--from', '0', '--to', '7', ...d]),
      cli(['runs', 'events', runId, '--page', '50', ...d]),
    ]);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toContain("unknown run id 'run_nope'");
    expect(step).toMatchObject({ code: 1, stdout: '' });
    expect(step.stderr).toContain('invalid step 99');
    expect(step.stderr).toContain('0..3');
    expect(diffStep.code).toBe(1);
    expect(diffStep.stderr).toContain('invalid step 7');
    expect(page.code).toBe(1);
    expect(page.stderr).toContain('past the last page');
  }, 30_000);

  it('help exits 0; usage errors exit 2: unknown command, missing option, non-integer step, unknown event type', async () => {
    const d = ['--data-dir', dataDir];
    const [help, ...results] = await Promise.all([
      cli(['runs', '--help']),
      cli(['runs', 'frobnicate']),
      cli(['runs', 'diff', runId, '--from', '1', ...d]),
      cli(['runs', 'state', runId, '--step', 'two', ...d]),
      cli(['runs', 'events', runId, '--type', 'node.exploded', ...d]),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('blame [options] <runId> <key>');
    expect(results.map((r) => r.code)).toEqual([2, 2, 2, 2]);
    expect(results[1]!.stderr).toContain("required option '--to <n>'");
    expect(results[2]!.stderr).toContain("--step must be a non-negative integer, got 'two'");
    expect(results[3]!.stderr).toContain("unknown event type 'node.exploded'");
  }, 30_000);
});

describe('backpackflow validate / run with bad flows', () => {
  it('validate prints every problem with its JSON path; malformed JSON names file, line and column', async () => {
    const dir = tempDir();
    const invalid = join(dir, 'invalid.json');
    writeFileSync(invalid, JSON.stringify({ version: '2', nodes: [{ type: 'Nope', id: 'a' }, { id: 'b' }] }));
    const malformed = join(dir, 'malformed.json');
    writeFileSync(malformed, '{\n  "version": "2.0.0",\n  "nodes": [,]\n}\n');
    const unknownType = join(dir, 'unknown-type.json');
    writeFileSync(unknownType, JSON.stringify({ version: '2.0.0', nodes: [{ type: 'Put', id: 'a', params: { key: 'k', value: 1 } }, { type: 'Nope', id: 'b' }] }));
    const chat = join(dir, 'chat.json');
    writeFileSync(chat, JSON.stringify({ version: '2.0.0', nodes: [{ type: 'ChatNode', id: 'ask', params: { model: 'openai:gpt-4o-mini', prompt: 'hi' } }] }));
    const [builtIn, ok, bad, badJson, broken, runBroken, badType] = await Promise.all([
      cli(['validate', chat, '--json']),
      cliJson(['validate', FLOW, '--modules', MODULES]),
      cli(['validate', invalid, '--modules', MODULES]),
      cli(['validate', invalid, '--json']),
      cli(['validate', malformed]),
      cli(['run', malformed, '--data-dir', dir]),
      cli(['run', unknownType, '--modules', MODULES, '--data-dir', dir]),
    ]);
    expect(ok).toEqual({ valid: true, errors: [] });
    // the built-in LLM node types need no --modules
    expect(JSON.parse(builtIn.stdout).errors.filter((e: any) => e.message.includes('unknown node type'))).toEqual([]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('/version');
    expect(bad.stdout).toContain('/nodes/1/type');
    expect(badType.code).toBe(1);
    expect(badType.stderr).toContain('/nodes/1/type');
    expect(badType.stderr).toContain('Nope');
    expect(badJson.code).toBe(1);
    const report = JSON.parse(badJson.stdout);
    expect(report.valid).toBe(false);
    expect(report.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining(['/version', '/nodes/1/type']));
    for (const r of [broken, runBroken]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('malformed flow JSON');
      expect(r.stderr).toContain('malformed flow JSON in ');
      expect(r.stderr).toContain('malformed.json at line 3, column 13');
    }
  }, 30_000);
});

describe('backpackflow runs resume / fork', () => {
  it('a failed run resumes from its last step; a fork starts a new run from a chosen step', async () => {
    const dataDir2 = tempDir();
    const flow = join(FIXTURES, 'failing.json');
    const d = ['--data-dir', dataDir2];
    const failed = await cli(['run', flow, '--modules', MODULES, '--run-id', 'run-a', ...d]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('not fixed yet');
    const fixed = { env: { BPF_TEST_FIXED: '1' } };
    // `run` recorded the flow with the run, so resume and fork need only --modules (as the syntax says)
    const resumed = await cliJson(['runs', 'resume', 'run-a', '--modules', MODULES, ...d], fixed);
    expect(resumed).toMatchObject({ runId: 'run-a', steps: 2 });
    const forked = await cliJson(['runs', 'fork', 'run-a', '--step', '1', '--flow', flow, '--modules', MODULES, '--new-run-id', 'run-b', ...d], fixed);
    expect(forked).toMatchObject({ runId: 'run-b' });
    rmSync(join(dataDir2, 'sessions', 'default', 'runs', 'run-b', 'flow.json'));
    const unrecorded = await cli(['runs', 'fork', 'run-b', '--step', '1', '--modules', MODULES, ...d]);
    expect(unrecorded.code).toBe(1);
    // run-b recorded its flow when it started: gone now, it is named as such (not "has no recorded flow"), with the way out.
    expect(unrecorded.stderr).toMatch(/run-b\/flow\.json: the run recorded it when it started \(.*events\.jsonl, line \d+\), and it is gone; pass --flow <flow.json>/);
    const [list, stateA, stateB, again, other] = await Promise.all([
      cliJson(['runs', 'list', ...d]),
      cliJson(['runs', 'state', 'run-a', ...d]),
      cliJson(['runs', 'state', 'run-b', ...d]),
      cli(['runs', 'resume', 'run-a', '--flow', flow, '--modules', MODULES, ...d]),
      cliJson(['run', flow, '--modules', MODULES, '--session', 'other', ...d], fixed),
    ]);
    // --json on run: one document, the run in its own session
    expect(other).toMatchObject({ sessionKey: 'other', steps: 2 });
    expect((await cliJson(['runs', 'list', '--session', 'other', ...d])).map((r: any) => r.runId)).toEqual([other.runId]);
    expect(list.map((r: any) => [r.runId, r.status])).toEqual([
      ['run-a', 'completed'],
      ['run-b', 'completed'],
    ]);
    expect(stateA.items.map((i: any) => i.key)).toEqual(['a', 'finished']);
    expect(stateB.items.map((i: any) => i.key)).toEqual(['a', 'finished']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already completed');
  }, 60_000);
});

describe('backpackflow memory', () => {
  it('adds items and finds them by search, best first', async () => {
    const dir = tempDir();
    const d = ['--data-dir', dir];
    const added = await cliJson(['memory', 'add', 'The backpack records provenance for every key', ...d]);
    await cliJson(['memory', 'add', 'Checkpoints are written at every step boundary', ...d]);
    expect(added.id).toMatch(/^mem/);
    const [hits, top1, none, human] = await Promise.all([
      cliJson(['memory', 'search', 'provenance of keys', ...d]),
      cliJson(['memory', 'search', 'checkpoints step', '--top', '1', ...d]),
      cliJson(['memory', 'search', 'zebra', ...d]),
      cli(['memory', 'search', 'checkpoints', ...d]),
    ]);
    expect(hits[0]).toMatchObject({ id: added.id, content: 'The backpack records provenance for every key' });
    expect(top1.map((h: any) => h.content)).toEqual(['Checkpoints are written at every step boundary']);
    expect(none).toEqual([]);
    expect(human.stdout).toContain('1. ');
    expect(human.stdout).toContain('Checkpoints are written at every step boundary');
  }, 30_000);

  it('memory add --id stores under that id, so that a retried add replaces the item instead of storing a second copy', async () => {
    const d = ['--data-dir', tempDir()];
    const first = await cliJson(['memory', 'add', 'Deploys happen on Tuesdays', '--id', 'deploy-day', ...d]);
    const retried = await cliJson(['memory', 'add', 'Deploys happen on Tuesdays', '--id', 'deploy-day', ...d]);
    expect([first.id, retried.id]).toEqual(['deploy-day', 'deploy-day']);
    const hits = await cliJson(['memory', 'search', 'deploys tuesdays', ...d]);
    expect(hits.map((h: { id: string }) => h.id)).toEqual(['deploy-day']);
    // An id that cannot name a file, or that looks like a secret (it is written as it is), is bad usage: refused
    // before anything is stored, naming the id (a secret one redacted).
    const bad = await cli(['memory', 'add', 'x', '--id', '../escape', ...d]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('../escape');
    const secret = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
    const secretId = await cli(['memory', 'add', 'x', '--id', secret, ...d]);
    expect(secretId.code).toBe(2);
    expect(secretId.stderr).toMatch(/invalid memory id .*\[REDACTED\].*looks like a secret/);
    expect(secretId.stderr).not.toContain(secret);
    expect(await cliJson(['memory', 'search', 'x', ...d])).toEqual([]);
  }, 30_000);
});

describe('backpackflow runs state, diff and events read what they serve', () => {
  it('answer from the keyframe and lines a step needs, and page by line; what reads changed lines is an error naming them', async () => {
    const dir = tempDir();
    const d = ['--data-dir', dir];
    await recordCountingRun(dir, 'counted', 40, 10);
    // A step past the last gets the range (read only on that failure).
    const past = await cli(['runs', 'state', 'counted', '--step', '41', ...d]);
    expect(past.code).toBe(1);
    expect(past.stderr).toContain("invalid step 41 for run 'counted': its recorded steps are 0..40");
    // Change a line of step 5's batch (before the keyframe of step 10): the chain no longer matches there.
    const events = runPaths(dir, 'default', 'counted').events;
    const lines = readFileSync(events, 'utf8').split('\n');
    const step5 = lines.findIndex((line) => line.includes('"checkpoint.saved"') && line.includes('"step":5,'));
    const at = lines.findLastIndex((line, i) => i < step5 && line.includes('"backpack.packed"') && line.includes('"key":"count"'));
    const changed = lines[at]!.replace('"key":"count"', '"key":"cOunt"');
    expect(changed).not.toBe(lines[at]);
    lines[at] = changed;
    writeFileSync(events, lines.join('\n'));
    // Steps read from a keyframe after the change, and steps before it, are whole and proven: answered.
    const [late, early, diff] = await Promise.all([
      cliJson(['runs', 'state', 'counted', '--step', '25', ...d]),
      cliJson(['runs', 'state', 'counted', '--step', '3', ...d]),
      cliJson(['runs', 'diff', 'counted', '--from', '12', '--to', '30', ...d]),
    ]);
    const count = (state: { items: { key: string; value: unknown }[] }): unknown => state.items.find((i) => i.key === 'count')?.value;
    expect([late.step, count(late), late.warnings]).toEqual([25, 25, []]);
    expect([early.step, count(early)]).toEqual([3, 3]);
    expect(diff.changes.find((c: { key: string }) => c.key === 'count')).toMatchObject({ before: '12', after: '30' });
    // A step replayed through the changed lines is refused, naming them; verify finds the change too.
    const through = await cli(['runs', 'state', 'counted', '--step', '7', ...d]);
    expect(through.code).toBe(1);
    expect(through.stderr).toMatch(new RegExp(`events\\.jsonl: lines \\d+-\\d+ do not match the chain hash`));
    expect((await cli(['runs', 'verify', 'counted', ...d])).code).toBe(1);
    // Pages of events are addressed by line: a page away from the change is served whole (its total read from the
    // log's end), the page that holds it is an error naming the changed lines.
    const total = lines.filter((line) => line !== '').length;
    const [far, near] = await Promise.all([cli(['runs', 'events', 'counted', '--page', '4', '--page-size', '50', ...d, '--json']), cli(['runs', 'events', 'counted', '--page-size', '50', ...d, '--json'])]);
    expect(far.code).toBe(0);
    const farPage = JSON.parse(far.stdout);
    expect([farPage.total, farPage.events.length, farPage.events[0].seq]).toEqual([total, 50, 151]);
    expect(near.code).toBe(1);
    expect(near.stderr).toMatch(/lines \d+-\d+ do not match the chain hash/);
    // A damaged projection is named, and the log alone (read whole then) gives the total.
    await recordCountingRun(dir, 'unprojected', 12, 10);
    writeFileSync(runPaths(dir, 'default', 'unprojected').runMeta, '{"not": "a projection"');
    const unprojected = await cli(['runs', 'events', 'unprojected', '--page-size', '50', ...d, '--json']);
    expect(unprojected.code).toBe(0);
    expect(unprojected.stderr).toMatch(/run\.meta\.json.*; the pages are counted from the log alone/);
    expect(JSON.parse(unprojected.stdout).total).toBe(readFileSync(runPaths(dir, 'default', 'unprojected').events, 'utf8').trim().split('\n').length);
    // A missing projection is rebuilt from the log once and stored (as runs list does), by events and by state alike,
    // so that the next command reads from the log's end; the answers are those of a run with its projection.
    await recordCountingRun(dir, 'projectionless', 12, 10);
    const paths = runPaths(dir, 'default', 'projectionless');
    const stored = readFileSync(paths.runMeta, 'utf8');
    const withProjection = await cli(['runs', 'events', 'projectionless', '--page-size', '50', ...d, '--json']);
    rmSync(paths.runMeta);
    const rebuilt = await cli(['runs', 'events', 'projectionless', '--page-size', '50', ...d, '--json']);
    expect([rebuilt.code, rebuilt.stderr, rebuilt.stdout]).toEqual([0, '', withProjection.stdout]);
    expect(JSON.parse(readFileSync(paths.runMeta, 'utf8')).data).toEqual(JSON.parse(stored).data);
    rmSync(paths.runMeta);
    const state = await cli(['runs', 'state', 'projectionless', '--step', '5', ...d, '--json']);
    expect([state.code, state.stderr]).toEqual([0, '']);
    expect(existsSync(paths.runMeta)).toBe(true);
  }, 30_000);
});

describe('backpackflow runs over a torn log', () => {
  it('state, diff and blame --json name what the log did not serve, as stderr does', async () => {
    const dir = tempDir();
    const run = await cli(['run', FLOW, '--modules', MODULES, '--data-dir', dir, '--input', '{"question":"torn?"}']);
    const id = /run id: (\S+)/.exec(run.stdout)![1]!;
    const d = ['--data-dir', dir];
    expect((await cliJson(['runs', 'blame', id, 'fact', ...d])).warnings).toEqual([]);
    appendFileSync(runPaths(dir, 'default', id).events, '{"v":1,"torn":\n');
    const torn = /events\.jsonl: lines? [\d-]+ come after its last chain hash/;
    const blame = await cli(['runs', 'blame', id, 'fact', ...d, '--json']);
    expect(blame.code).toBe(0);
    expect(blame.stderr).toMatch(torn);
    expect(JSON.parse(blame.stdout).warnings.join('\n')).toMatch(torn);
    expect((await cliJson(['runs', 'state', id, ...d])).warnings.join('\n')).toMatch(torn);
    expect((await cliJson(['runs', 'diff', id, '--from', '0', '--to', '1', ...d])).warnings.join('\n')).toMatch(torn);
  }, 30_000);
});
