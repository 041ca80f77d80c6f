/**
 * The CLI against Postgres: every `runs` command gives the output it gives against files for the same run; a waiting
 * run answered with `runs resume --input --enqueue` is run by a worker; `runs tail` follows a run as it is stored.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, cliJson, FIXTURES, MODULES, tempDir } from '../cli/helpers.js';
import { freshDatabase } from '../support/pg.js';
import { plainEnv } from '../support/env.js';

const FLOW = join(FIXTURES, 'flow.json');
const APPROVAL = `${join(FIXTURES, 'approval.mjs')}#buildApprovalFlow`;
const BIN = join(FIXTURES, '..', '..', '..', 'dist', 'cli', 'backpackflow.js');

/** What differs between two runs of the same flow: times, durations, ids of events and spans, where it is stored. */
function normalize(value: unknown, location: string): unknown {
  const text = JSON.stringify(value).split(location).join('<store>');
  return JSON.parse(text, (key, v: unknown) => (['timestamp', 'startedAt', 'endedAt', 'updatedAt', 'durationMs', 'at', 'createdAt', 'id', 'spanId', 'parentSpanId', 'ms', 'totalMs', 'chainHead'].includes(key) ? 0 : v));
}

describe('the CLI on Postgres', () => {
  let url: string;
  let drop: () => Promise<void>;
  let dataDir: string;

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    dataDir = tempDir();
  });
  afterAll(async () => drop());

  it('gives the same output for every runs and memory command as against files', async () => {
    const files = ['--data-dir', dataDir];
    const pg = ['--database-url', url];
    for (const where of [files, pg]) {
      const run = await cli(['run', FLOW, '--modules', MODULES, '--run-id', 'same', '--input', '{"question":"what boils?"}', ...where]);
      expect(run.code, run.stderr).toBe(0);
    }
    const commands = [
      ['runs', 'list'],
      ['runs', 'show', 'same'],
      ['runs', 'state', 'same'],
      ['runs', 'state', 'same', '--step', '1'],
      ['runs', 'diff', 'same', '--from', '0', '--to', '2'],
      ['runs', 'blame', 'same', 'fact'],
      ['runs', 'events', 'same', '--page-size', '5', '--page', '2'],
      ['runs', 'events', 'same', '--type', 'backpack.packed'],
      ['runs', 'verify', 'same'],
    ];
    for (const command of commands) {
      const [a, b] = await Promise.all([cliJson([...command, ...files]), cliJson([...command, ...pg])]);
      expect(normalize(b, url.replace(/\/[^/]*$/, '')), command.join(' ')).toEqual(normalize(a, dataDir));
    }
    for (const text of ['tides follow the moon', 'storms follow the wind over the ocean', 'the moon pulls the ocean']) {
      for (const where of [files, pg]) expect((await cli(['memory', 'add', text, ...where])).code).toBe(0);
    }
    const [fromFiles, fromPg] = await Promise.all([cliJson(['memory', 'search', 'moon ocean', ...files]), cliJson(['memory', 'search', 'moon ocean', ...pg])]);
    const ranked = (hits: { content: string; score: number }[]) => hits.map((h) => [h.content, h.score]);
    expect(ranked(fromPg)).toEqual(ranked(fromFiles));
    expect(fromPg).toHaveLength(3);
    const unknown = await cli(['runs', 'show', 'nope', ...pg]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown run id 'nope' in session 'default'");
    const fork = await cliJson(['runs', 'fork', 'same', '--step', '1', '--new-run-id', 'forked', ...pg]);
    expect(fork).toMatchObject({ runId: 'forked', status: 'completed' });
  });

  it('deletes and prunes runs in the database as in files: dry runs delete nothing, a deleted run is gone from every command', async () => {
    const files = ['--data-dir', tempDir()];
    const pg = ['--database-url', url, '--session', 'retention'];
    for (const where of [files, pg]) {
      for (const id of ['r1', 'r2', 'r3']) {
        const run = await cli(['run', FLOW, '--modules', MODULES, '--run-id', id, '--input', '{"question":"what boils?"}', ...where]);
        expect(run.code, run.stderr).toBe(0);
      }
    }
    for (const where of [files, pg]) {
      expect(await cliJson(['runs', 'delete', 'r1', 'nope', '--dry-run', ...where]).catch((e: Error) => e.message)).toContain('exited 1');
      const dry = await cli(['runs', 'delete', 'r1', '--dry-run', '--json', ...where]);
      expect(JSON.parse(dry.stdout)).toEqual({ dryRun: true, deleted: ['r1'], missing: [], refused: [] });
      expect((await cliJson<{ runId: string }[]>(['runs', 'list', ...where])).map((r) => r.runId)).toEqual(['r1', 'r2', 'r3']);
      const deleted = await cli(['runs', 'delete', 'r1', '--json', ...where]);
      expect(JSON.parse(deleted.stdout)).toEqual({ dryRun: false, deleted: ['r1'], missing: [], refused: [] });
      expect((await cli(['runs', 'show', 'r1', ...where])).code).toBe(1);
      const pruned = await cliJson<{ deleted: { runId: string }[]; kept: number }>(['runs', 'prune', '--keep-last', '1', ...where]);
      expect(pruned.deleted.map((r) => r.runId)).toEqual(['r2']);
      expect(pruned.kept).toBe(1);
      expect((await cliJson<{ runId: string }[]>(['runs', 'list', ...where])).map((r) => r.runId)).toEqual(['r3']);
    }
  });

  it('queues a waiting run answered with runs resume --input --enqueue for a worker, and runs tail follows it', async () => {
    const first = await cliJson(['run', '--flow-module', APPROVAL, '--run-id', 'asks', '--database-url', url]);
    expect(first).toMatchObject({ status: 'waiting' });
    const wrong = await cli(['runs', 'resume', 'asks', '--input', '{"approved":"yes"}', '--enqueue', '--database-url', url]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('approved');
    // The tail starts before the answer: it prints what is stored, then what the worker stores, and ends with the run.
    const tail = spawn(process.execPath, [BIN, 'runs', 'tail', 'asks', '--json', '--database-url', url, '--poll-ms', '60000'], { env: plainEnv() });
    let tailed = '';
    tail.stdout.on('data', (d: Buffer) => (tailed += d.toString()));
    const tailEnded = new Promise((resolve) => tail.on('exit', resolve));
    const queued = await cli(['runs', 'resume', 'asks', '--input', '{"approved":true}', '--enqueue', '--database-url', url]);
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout.trim()).toBe('asks');
    const worker = await cli(['worker', '--database-url', url, '--poll-ms', '100', '--exit-when-idle']);
    expect(worker.code, worker.stderr).toBe(0);
    expect(worker.stdout).toContain('default/asks completed');
    // The tail waits with a 60 s poll: only the step's announcement can have woken it this soon.
    expect(await tailEnded).toBe(0);
    const events = tailed.trim().split('\n').map((line) => JSON.parse(line) as { seq: number; type: string });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)!.type).toBe('run.completed');
    expect(events.some((e) => e.type === 'interrupt.answered')).toBe(true);
    const state = await cliJson(['runs', 'state', 'asks', '--database-url', url]);
    expect(JSON.stringify(state)).toContain('"published"');
  });
});
