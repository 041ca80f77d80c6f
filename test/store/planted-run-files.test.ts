/**
 * A run's and a memory's files planted or damaged by someone who can write the data directory, and recorded answer
 * schemas written to slow a checker down (reviews s46 and s47): a derived file (keyframe, projection, log index) that
 * is a link or a FIFO is treated as damaged, as garbage there is (an earlier keyframe, a projection rebuilt, the index
 * ignored or reported), never read through or waited on; a data directory reached through links still reads; a
 * recorded schema's patterns are never compiled, whatever their form.
 */
import { execFileSync, spawn } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, listRuns, loadRunPoint, resumeRun, runFlow, verifyRun, type BackpackHandle } from '../../src/index.js';
import { readRunEvents } from '../../src/cli/backpackflow/store-access.js';
import { MemoryStore } from '../../src/store/index.js';
import { checkRecordedAnswer } from '../../src/runtime/interrupts.js';
import { answerProblems } from '../../src/studio/steer.js';
import { schemaFromJson } from '../../src/nodes/interrupt.js';
import { BIN, cli } from '../cli/helpers.js';
import { makeTempDir } from '../support/temp.js';

const dir = (): string => makeTempDir('bf-planted-', 'test');
const runDir = (dataDir: string, runId: string): string => join(dataDir, 'sessions', 'default', 'runs', runId);

class W extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack(`n${this.id}`, 1);
    return undefined;
  }
}

/** A completed three-step run with a keyframe at every step (checkpoint/1.json, 2.json, 3.json). */
async function threeSteps(dataDir: string, runId: string): Promise<void> {
  const flow = new Flow({ namespace: 'ok' });
  const a = flow.addNode(W, { id: 'a' });
  const b = flow.addNode(W, { id: 'b' });
  const c = flow.addNode(W, { id: 'c' });
  a.next(b);
  b.next(c);
  await runFlow(flow, { dataDir, runId, keyframeInterval: 1 });
}

describe('recorded answer schemas', () => {
  // The catastrophic pattern of s46 M1, given as a one-element array: withoutPatterns only drops a *string* pattern,
  // and zod's fromJSONSchema does `if (schema.pattern) new RegExp(schema.pattern)`, which stringifies the array.
  const hostile = { type: 'object', properties: { name: { type: 'string', pattern: ['^(.*.*)*x$'] } } };
  const info = { nodeId: 'ask', namespace: 'ask', index: 0, payload: 'Your name?', schema: hostile };
  // 14 characters: about 1.5 s here before the check gives up; 16 took 6.4 s, 29 never ends.
  const answer = { name: 'Ada Lovelace C' };

  it('a pattern given as an array is not compiled either (the Studio\'s check of an answer)', () => {
    const t0 = performance.now();
    answerProblems(hostile, answer);
    expect(performance.now() - t0).toBeLessThan(300);
  }, 60_000);

  it('nor in resumeRun\'s check of the recorded answer', () => {
    // Another input than the case above (V8 tiers a regular expression up after its first runs, same input or not).
    const t0 = performance.now();
    try {
      checkRecordedAnswer(info, { name: 'Grace Hopper, R.Adm' .slice(0, 16) });
    } catch {
      // a refusal is fine; the time is what is checked
    }
    expect(performance.now() - t0).toBeLessThan(300);
  }, 60_000);

  it('patternProperties with additionalProperties false: an answer the patterns allow is not refused once they are dropped', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } }, patternProperties: { '^x-': { type: 'string' } }, additionalProperties: false };
    const valid = { name: 'a', 'x-extra': 'b' };
    expect(z.fromJSONSchema(schema as never).safeParse(valid).success).toBe(true); // what the schema says
    expect(schemaFromJson(schema).safeParse(valid).success).toBe(true); // what the recorded check says
    expect(answerProblems(schema, valid)).toEqual([]);
  });

  it('an answer the dropped pattern would refuse is recorded, the node refuses it with its own schema, and the run keeps waiting', async () => {
    const dataDir = dir();
    class Ask extends BackpackNode {
      override async post(backpack: BackpackHandle): Promise<undefined> {
        backpack.pack('answer', await this.interrupt({ q: 'id?' }, { schema: z.object({ id: z.string().regex(/^x/) }) }));
        return undefined;
      }
    }
    const build = (): Flow => {
      const flow = new Flow({ namespace: 'ask' });
      flow.addNode(Ask, { id: 'ask' });
      return flow;
    };
    const first = await runFlow(build(), { dataDir, runId: 'ask' });
    expect(first.status).toBe('waiting');
    // The recorded check (pattern dropped) lets it through; the node's own schema refuses it when it runs again.
    await expect(resumeRun(build(), { dataDir, runId: 'ask', resume: { id: 'nope' }, answering: first.interrupt!.pause })).rejects.toThrow(/must match pattern \/\^x\/; the run is still waiting/);
    const [run] = await listRuns({ dataDir });
    expect(run).toMatchObject({ runId: 'ask', status: 'waiting' });
  });
});

describe('a link or FIFO planted in place of a file of a run or of the memory', () => {
  it('a link in place of a keyframe falls back to an earlier keyframe, as a damaged keyframe does', async () => {
    const dataDir = dir();
    await threeSteps(dataDir, 'kf');
    // A damaged keyframe (garbage): `runs state --step 2` warns and replays from an earlier one.
    await threeSteps(dataDir, 'garbage');
    writeFileSync(join(runDir(dataDir, 'garbage'), 'checkpoint', '2.json'), 'garbage\n');
    const garbage = await cli(['runs', 'state', 'garbage', '--step', '2', '--data-dir', dataDir]);
    expect(garbage.code).toBe(0);
    // A link there: the whole read fails ("... 2.json is a symbolic link, not a regular file: it is not read").
    const outside = join(dir(), 'secret.txt');
    writeFileSync(outside, 'hunter2\n');
    const keyframe = join(runDir(dataDir, 'kf'), 'checkpoint', '2.json');
    rmSync(keyframe);
    symlinkSync(outside, keyframe);
    const linked = await cli(['runs', 'state', 'kf', '--step', '2', '--data-dir', dataDir]);
    expect(linked.stderr).not.toContain('hunter2');
    expect(linked.code, linked.stderr).toBe(0);
  }, 60_000);

  it('a link in place of the run projection is rebuilt from the log, as a corrupt projection is', async () => {
    const dataDir = dir();
    await threeSteps(dataDir, 'p');
    const outside = join(dir(), 'secret.txt');
    writeFileSync(outside, 'hunter2\n');
    const meta = join(runDir(dataDir, 'p'), 'projections', 'run.meta.json');
    rmSync(meta);
    symlinkSync(outside, meta);
    const [run] = await listRuns({ dataDir });
    // On c1e6bc3: { status: 'running', eventCount: 0, damaged: '... run.meta.json is a symbolic link ...' }
    expect(run).toMatchObject({ runId: 'p', status: 'completed' });
    expect((run as { damaged?: string }).damaged).toBeUndefined();
  }, 60_000);

  it('a link in place of the log index does not make runs show / state / events fail (a garbage index does not)', async () => {
    const dataDir = dir();
    await threeSteps(dataDir, 'g');
    await threeSteps(dataDir, 'l');
    writeFileSync(join(runDir(dataDir, 'g'), 'events.idx.jsonl'), 'garbage\n');
    const outside = join(dir(), 'secret.txt');
    writeFileSync(outside, 'hunter2\n');
    symlinkSync(outside, join(runDir(dataDir, 'l'), 'events.idx.jsonl'));
    for (const command of ['show', 'state', 'events']) {
      expect((await cli(['runs', command, 'g', '--data-dir', dataDir])).code, `${command} garbage`).toBe(0);
      const linked = await cli(['runs', command, 'l', '--data-dir', dataDir]);
      expect(linked.code, `${command} link: ${linked.stderr}`).toBe(0);
    }
  }, 60_000);

  it('runs verify does not hang on a FIFO in place of the log index', async () => {
    const dataDir = dir();
    await threeSteps(dataDir, 'v');
    execFileSync('mkfifo', [join(runDir(dataDir, 'v'), 'events.idx.jsonl')]);
    const child = spawn(process.execPath, [BIN, 'runs', 'verify', 'v', '--data-dir', dataDir], { stdio: 'ignore' });
    const ended = await Promise.race([
      new Promise<boolean>((done) => child.on('exit', () => done(true))),
      new Promise<boolean>((done) => setTimeout(() => done(false), 10_000)),
    ]);
    child.kill('SIGKILL');
    expect(ended).toBe(true);
  }, 30_000);

  it('runs verify does not read the log index through a link (it reports the link, not "line 1 is not a valid index entry")', async () => {
    const dataDir = dir();
    await threeSteps(dataDir, 'v');
    const outside = join(dir(), 'secret.txt');
    writeFileSync(outside, 'hunter2\n');
    symlinkSync(outside, join(runDir(dataDir, 'v'), 'events.idx.jsonl'));
    const out = await cli(['runs', 'verify', 'v', '--data-dir', dataDir]);
    expect(`${out.stdout}${out.stderr}`).toContain('symbolic link');
  }, 60_000);

  it('a data directory reached through symlinks (itself a link, and a linked parent) still reads', async () => {
    const base = dir();
    const real = join(base, 'real', 'deep', 'data');
    mkdirSync(real, { recursive: true });
    await threeSteps(real, 'ok');
    symlinkSync(real, join(base, 'linkdata'));
    symlinkSync(join(base, 'real'), join(base, 'plink'));
    for (const dataDir of [join(base, 'linkdata'), join(base, 'plink', 'deep', 'data')]) {
      expect((await cli(['runs', 'show', 'ok', '--data-dir', dataDir])).code).toBe(0);
      expect((await cli(['runs', 'verify', 'ok', '--data-dir', dataDir])).code).toBe(0);
    }
  }, 60_000);

  it('MemoryStore.delete of an id whose item file is a planted link removes the link (never its target)', async () => {
    const dataDir = dir();
    const memory = new MemoryStore({ dataDir });
    await memory.write({ id: 'a1', content: 'alpha beta' } as never);
    const outside = join(dir(), 'secret.txt');
    writeFileSync(outside, 'hunter2\n');
    symlinkSync(outside, join(dataDir, 'memory', 'shared', 'items', 'evil.json'));
    const link = join(dataDir, 'memory', 'shared', 'items', 'evil.json');
    expect(await memory.delete('evil')).toBe(true);
    expect(lstatSync(link, { throwIfNoEntry: false })).toBeUndefined();
    expect(readFileSync(outside, 'utf8')).toBe('hunter2\n');
    await memory.close();
  });

  it('a FIFO, a folder or a link in place of the batch marker is read past, as garbage there is, and verify names it', async () => {
    for (const kind of ['fifo', 'folder', 'link'] as const) {
      const dataDir = dir();
      await threeSteps(dataDir, 'r');
      const marker = join(runDir(dataDir, 'r'), 'events.pending');
      rmSync(marker);
      if (kind === 'fifo') execFileSync('mkfifo', [marker]);
      else if (kind === 'folder') mkdirSync(marker);
      else symlinkSync(join(dir(), 'elsewhere'), marker);
      const point = await loadRunPoint({ dataDir, runId: 'r', step: 2 });
      expect(point.step, kind).toBe(2);
      expect((await readRunEvents({ dataDir, session: 'default', runId: 'r' })).length, kind).toBeGreaterThan(0);
      const report = await verifyRun({ dataDir, runId: 'r' });
      expect(report.ok, kind).toBe(false);
      expect(JSON.stringify(report), kind).toContain("not the log's batch marker");
    }
  });

  it('a folder in place of the projection: the listing still answers, for that run and the others, and its state reads', async () => {
    const dataDir = dir();
    await threeSteps(dataDir, 'good');
    await threeSteps(dataDir, 'r');
    const meta = join(runDir(dataDir, 'r'), 'projections', 'run.meta.json');
    rmSync(meta);
    mkdirSync(meta);
    const runs = await listRuns({ dataDir });
    expect(runs.map((run) => run.runId).sort()).toEqual(['good', 'r']);
    expect(runs.find((run) => run.runId === 'good')!.damaged).toBeUndefined();
    expect(runs.find((run) => run.runId === 'r')!.eventCount).toBeGreaterThan(0);
    expect((await loadRunPoint({ dataDir, runId: 'r' })).step).toBe(3);
  });
});
