/**
 * `runs tail <runId>` on files, through the built binary in a child process: it follows a run until it ends, and a
 * run deleted while it is followed (or deleted and started again under the same id) is said on stderr with exit 1,
 * never printed as one run with the new one, nor waited on forever (audit s21, F6).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, deleteRun, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { plainEnv } from '../support/env.js';
import { BIN, tempDir } from './helpers.js';

/** draft → ask; `ask` pauses for `{ approved: boolean }`. */
function approval(): Flow {
  const flow = new Flow({ namespace: 'ap' });
  class Draft extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      bp.pack('draft', 'hello');
      return undefined;
    }
  }
  class Ask extends BackpackNode {
    override async post(bp: BackpackHandle): Promise<undefined> {
      const a = await this.interrupt({ q: 'ok?' }, { schema: z.object({ approved: z.boolean() }) });
      bp.pack('decision', a.approved);
      return undefined;
    }
  }
  flow.addNode(Draft, { id: 'draft' }).next(flow.addNode(Ask, { id: 'ask' }));
  return flow;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `runs tail r1 --json` in a child process, with what it printed so far and its exit code (null until it exits). */
function tail(dataDir: string): { out: () => string; err: () => string; exited: Promise<number | null>; kill: () => void } {
  const child = spawn(process.execPath, [BIN, 'runs', 'tail', 'r1', '--data-dir', dataDir, '--poll-ms', '50', '--json'], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { out: () => out, err: () => err, exited, kill: () => child.kill('SIGKILL') };
}

async function until(what: string, ready: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !ready(); i++) await sleep(25);
  expect(ready(), what).toBe(true);
}

/** Resolves to the exit code, or 'still running' after `ms`. */
const exitWithin = (exited: Promise<number | null>, ms: number): Promise<number | null | 'still running'> =>
  Promise.race([exited, sleep(ms).then(() => 'still running' as const)]);

const logOf = (dataDir: string): string => join(dataDir, 'sessions', 'default', 'runs', 'r1', 'events.jsonl');
const idsIn = (log: string): string[] => readFileSync(log, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
const printed = (out: string): Array<{ id: string; type: string }> => out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; type: string });

const MESSAGE = 'run r1 was deleted (or replaced by a new run of the same id) while it was followed';

describe('runs tail (files)', () => {
  it('follows a waiting run until it is answered and completes, then exits 0', async () => {
    const dataDir = tempDir();
    await runFlow(approval(), { dataDir, runId: 'r1' });
    const t = tail(dataDir);
    try {
      await until('the tail printed run.waiting', () => t.out().includes('run.waiting'));
      await resumeRun(approval(), { dataDir, runId: 'r1', resume: { approved: true } });
      expect(await exitWithin(t.exited, 10_000)).toBe(0);
      expect(t.err()).toBe('');
      // Every event of the log, once each, in order: the check of the last printed line prints nothing twice.
      expect(printed(t.out()).map((e) => e.id)).toEqual(idsIn(logOf(dataDir)));
      expect(printed(t.out()).at(-1)!.type).toBe('run.completed');
    } finally {
      t.kill();
    }
  });

  it('waits for a run not stored yet, then follows it', async () => {
    const dataDir = tempDir();
    const t = tail(dataDir);
    try {
      await sleep(300);
      expect(await exitWithin(t.exited, 0)).toBe('still running');
      await runFlow(approval(), { dataDir, runId: 'r1' });
      await until('the tail printed run.waiting', () => t.out().includes('run.waiting'));
      await resumeRun(approval(), { dataDir, runId: 'r1', resume: { approved: false } });
      expect(await exitWithin(t.exited, 10_000)).toBe(0);
      expect(printed(t.out()).map((e) => e.id)).toEqual(idsIn(logOf(dataDir)));
    } finally {
      t.kill();
    }
  });

  it('a followed run deleted and started again under the same id: said on stderr, exit 1, the new run not printed', async () => {
    const dataDir = tempDir();
    await runFlow(approval(), { dataDir, runId: 'r1' });
    const t = tail(dataDir);
    try {
      await until('the tail printed run.waiting', () => t.out().includes('run.waiting'));
      const oldIds = idsIn(logOf(dataDir));
      expect(await deleteRun({ dataDir, runId: 'r1' })).toBe(true);
      await runFlow(approval(), { dataDir, runId: 'r1' }); // a new run, same id, waiting
      await resumeRun(approval(), { dataDir, runId: 'r1', resume: { approved: true } });
      expect(await exitWithin(t.exited, 10_000)).toBe(1);
      expect(t.err()).toContain(MESSAGE);
      // What was printed is the deleted run, whole, and nothing of the new one.
      expect(printed(t.out()).map((e) => e.id)).toEqual(oldIds);
    } finally {
      t.kill();
    }
  });

  it('a followed run deleted and not started again: said on stderr and exit 1, not waited on forever', async () => {
    const dataDir = tempDir();
    await runFlow(approval(), { dataDir, runId: 'r1' });
    const t = tail(dataDir);
    try {
      await until('the tail printed run.waiting', () => t.out().includes('run.waiting'));
      const oldIds = idsIn(logOf(dataDir));
      expect(await deleteRun({ dataDir, runId: 'r1' })).toBe(true);
      expect(await exitWithin(t.exited, 10_000)).toBe(1);
      expect(t.err()).toContain(MESSAGE);
      expect(t.err()).toContain(logOf(dataDir));
      expect(printed(t.out()).map((e) => e.id)).toEqual(oldIds);
    } finally {
      t.kill();
    }
  });
});
