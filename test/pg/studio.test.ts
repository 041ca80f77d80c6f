/**
 * The studio over PostgreSQL (`backpackflow studio --database-url`): every API route answers for the same runs what it
 * answers over files, a running run's events stream in as their steps commit (LISTEN/NOTIFY, not polling), and a
 * waiting run is answered, resumed and forked from the studio by the CLI child working on the same database (its URL
 * passed in the child's environment, never on its command line).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresRunStore } from '../../src/store/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { BIN, cli, cliJson, FIXTURES, MODULES, tempDir } from '../cli/helpers.js';
import { get, openStream, post, startGatedRun, studioInBrowser } from '../studio/helpers.js';
import { freshDatabase } from '../support/pg.js';

const FLOW = join(FIXTURES, 'flow.json');
const REVIEW = join(import.meta.dirname, '..', 'studio', 'fixtures', 'review.mjs');

/** What differs between two recordings of the same runs: times, durations, ids of events and spans, chain hashes, where they are stored. */
const VARYING = new Set(['timestamp', 'startedAt', 'endedAt', 'updatedAt', 'durationMs', 'longestMs', 'at', 'createdAt', 'id', 'spanId', 'parentSpanId', 'ms', 'totalMs', 'chainHead', 'chain', 'hash']);

function normalize(value: unknown, location: string): unknown {
  const text = JSON.stringify(value).split(location).join('<store>');
  return JSON.parse(text, (key, v: unknown) => (VARYING.has(key) ? 0 : v));
}

let url: string;
let drop: () => Promise<void>;
let dataDir: string;
let files: StudioServer;
let pg: StudioServer;

/** The CLI's arguments that select each store. */
const where = (): Record<'files' | 'pg', string[]> => ({ files: ['--data-dir', dataDir], pg: ['--database-url', url] });

beforeAll(async () => {
  ({ url, drop } = await freshDatabase());
  dataDir = tempDir();
  for (const args of Object.values(where())) {
    const run = await cli(['run', FLOW, '--modules', MODULES, '--run-id', 'same', '--input', '{"question":"what boils?"}', ...args]);
    expect(run.code, run.stderr).toBe(0);
    const fork = await cli(['runs', 'fork', 'same', '--step', '1', '--new-run-id', 'same-fork', '--modules', MODULES, ...args]);
    expect(fork.code, fork.stderr).toBe(0);
    for (const text of ['water boils at 100 degrees at sea level', 'tides follow the moon', 'the moon pulls the ocean']) {
      expect((await cli(['memory', 'add', text, ...args])).code).toBe(0);
    }
  }
  const steering = { cli: [process.execPath, BIN], settleMs: 30_000 };
  files = await startStudio({ dataDir, port: 0, steering });
  pg = await startStudio({ databaseUrl: url, port: 0, steering, tail: { pollMs: 60_000 } });
}, 120_000);

afterAll(async () => {
  await files?.close();
  await pg?.close();
  await drop?.();
});

/** Where each studio keeps its runs, as its answers name it. */
const locations = (): [string, string] => [dataDir, pg.location];

describe('the studio on Postgres', () => {
  it('answers every read route as it does over files for the same runs', async () => {
    const routes = [
      '/api/runs',
      '/api/runs?session=default',
      '/api/runs/same/trace',
      '/api/runs/same/trace?limit=2&offset=1',
      '/api/runs/same/trace?limit=2&head=1',
      '/api/runs/same/events?pageSize=5&page=2',
      '/api/runs/same/events?type=backpack.packed',
      '/api/runs/same/events?namespace=t.*',
      '/api/runs/same/state',
      '/api/runs/same/state?step=1',
      '/api/runs/same/steps',
      '/api/runs/same/diff?from=0&to=2',
      '/api/runs/same/blame/fact',
      '/api/runs/same-fork/state',
      '/api/memory?q=moon%20ocean&k=5',
      // Refusals name the same parameter, the same run, the same range.
      '/api/runs/nope',
      '/api/runs/nope/trace',
      '/api/runs/same/state?step=99',
      '/api/runs/same/events?type=no.such',
      '/api/runs/same/events?pageSize=0',
      '/api/runs/..%2Fetc/state',
      '/api/runs/same?session=bad%20session',
    ];
    const [atFiles, atPg] = locations();
    for (const route of routes) {
      const [a, b] = await Promise.all([get(files.port, route), get(pg.port, route)]);
      expect(b.status, route).toBe(a.status);
      expect(normalize(b.json, atPg), route).toEqual(normalize(a.json, atFiles));
    }
    // Ranked memory: the same items in the same order with the same scores (BM25 over the same corpus).
    expect((await get(pg.port, '/api/memory?q=moon%20ocean')).json.hits.map((h: { content: string }) => h.content)).toEqual(['the moon pulls the ocean', 'tides follow the moon']);
  });

  it('gives the run detail of files, and its steering commands name the database without a password', async () => {
    const [atFiles, atPg] = locations();
    for (const runId of ['same-fork', 'same']) {
      const [a, b] = await Promise.all([get(files.port, `/api/runs/${runId}`), get(pg.port, `/api/runs/${runId}`)]);
      const { steer: _fileSteer, ...fileDetail } = a.json;
      const { steer: _pgSteer, ...pgDetail } = b.json;
      expect(normalize(pgDetail, atPg), runId).toEqual(normalize(fileDetail, atFiles));
    }
    const [a, b] = await Promise.all([get(files.port, '/api/runs/same'), get(pg.port, '/api/runs/same')]);
    const { steer: fileSteer } = a.json;
    const { steer: pgSteer, ...pgDetail } = b.json;
    expect(pgDetail.flow).not.toBeNull();
    expect(fileSteer).toMatchObject({ buildable: true, source: expect.stringMatching(/^flow file /) });
    expect(pgSteer).toMatchObject({ buildable: true, source: `the flow config recorded with the run in ${pg.location}` });
    expect(pgSteer.resumeCommand).toMatch(new RegExp(`runs resume same --database-url ${pg.location.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    const info = (await get(pg.port, '/api/info')).json;
    expect(info).toMatchObject({ store: 'postgres', location: pg.location, sessions: ['default'] });
  });

  it('streams a running run\'s events as each step commits, woken by NOTIFY (its poll is a minute away)', async () => {
    const store = new PostgresRunStore({ url });
    try {
      const gated = startGatedRun(tempDir(), 'live', store);
      await gated.waiting;
      const stream = await openStream(pg.port, '/api/runs/live/stream');
      try {
        expect(stream.status).toBe(200);
        // What was stored before the stream opened arrives first: the first step's checkpoint.
        await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'checkpoint.saved' && JSON.parse(m.data).payload.step === 1, 10_000);
        const before = stream.messages.length;
        expect((await get(pg.port, '/api/runs')).json.runs.find((r: { runId: string }) => r.runId === 'live')).toMatchObject({ status: 'running', stepCount: 1 });
        const traceNodes = async (): Promise<string[]> =>
          (await get(pg.port, '/api/runs/live/trace')).json.items.filter((i: { kind: string }) => i.kind === 'node').map((i: { node: { nodeId: string; status: string } }) => `${i.node.nodeId}:${i.node.status}`);
        expect(await traceNodes()).toEqual(['first:completed']);
        gated.release();
        await gated.running;
        const end = await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'run.completed', 10_000);
        expect(stream.messages.length).toBeGreaterThan(before + 1);
        expect(await traceNodes()).toEqual(['first:completed', 'wait:completed']);
        // Ids count the lines sent: a reconnect with Last-Event-ID continues after the last one, sending nothing twice.
        const again = await openStream(pg.port, '/api/runs/live/stream', { 'last-event-id': end.id! });
        try {
          await new Promise((resolve) => setTimeout(resolve, 300));
          expect(again.messages.filter((m) => m.event === 'event')).toEqual([]);
        } finally {
          again.close();
        }
        const seqs = stream.messages.filter((m) => m.event === 'event').map((m) => JSON.parse(m.data).seq as number);
        expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
        expect(new Set(seqs).size).toBe(seqs.length);
        expect(seqs.length).toBe((await get(pg.port, '/api/runs/live')).json.meta.eventCount);
      } finally {
        stream.close();
      }
    } finally {
      await store.close();
    }
  });

  it('answers a waiting run, then forks it, through the CLI on the same database', async () => {
    const waiting = await cliJson(['run', '--flow-module', `${REVIEW}#buildReviewFlow`, '--input', '{"delayMs":0}', '--run-id', 'review', '--database-url', url]);
    expect(waiting.status).toBe('waiting');
    const auth = { authorization: `Bearer ${pg.token}` };
    // The answer names the pause it is to, as the page's form does (the run's result gives it, as listings do).
    const pause = waiting.interrupt.pause as number;
    expect((await get(pg.port, '/api/runs/review')).json.meta.interrupt.pause).toBe(pause);
    const wrong = await post(pg.port, '/api/runs/review/resume', { answer: { approved: 'yes' }, pause }, auth);
    expect(wrong.status).toBe(422);
    const good = await post(pg.port, '/api/runs/review/resume', { answer: { approved: true, priority: 'high', copies: 2 }, pause }, auth);
    expect(good.status, good.body).toBe(200);
    expect(good.json.job).toMatchObject({ kind: 'resume', runId: 'review', state: 'completed', exitCode: 0 });
    expect(good.json.job.command).toMatch(new RegExp(`runs resume review --answering ${pause} --input '<answer>'$`));
    expect(good.json.job.command).not.toContain(url);
    const state = (await get(pg.port, '/api/runs/review/state')).json;
    expect(state.items.find((i: { key: string }) => i.key === 'published')).toMatchObject({ summary: 'true', provenance: { nodeId: 'publish' } });
    // The same run is not in the data directory the studio would use without --database-url.
    expect((await get(files.port, '/api/runs/review')).status).toBe(404);

    const fork = await post(pg.port, '/api/runs/review/fork', { step: 1, newRunId: 'review-again' }, auth);
    expect(fork.status, fork.body).toBe(200);
    expect(fork.json.job).toMatchObject({ kind: 'fork', runId: 'review-again', from: { runId: 'review', step: 1 } });
    const forked = (await get(pg.port, '/api/runs/review-again')).json;
    expect(forked.forkedFrom).toEqual({ runId: 'review', step: 1 });
    const taken = await post(pg.port, '/api/runs/review/fork', { step: 1, newRunId: 'review-again' }, auth);
    expect(taken.status).toBe(409);
  });

  it('a studio on files resumes on files even when BACKPACKFLOW_DATABASE_URL is set around it', async () => {
    const waiting = await cliJson(['run', '--flow-module', `${REVIEW}#buildReviewFlow`, '--input', '{"delayMs":0}', '--run-id', 'on-files', '--data-dir', dataDir]);
    expect(waiting.status).toBe('waiting');
    const saved = process.env['BACKPACKFLOW_DATABASE_URL'];
    process.env['BACKPACKFLOW_DATABASE_URL'] = url;
    try {
      const reply = await post(files.port, '/api/runs/on-files/resume', { answer: { approved: true, priority: 'low', copies: 1 }, pause: waiting.interrupt.pause }, { authorization: `Bearer ${files.token}` });
      expect(reply.status, reply.body).toBe(200);
      expect(reply.json.job).toMatchObject({ state: 'completed', exitCode: 0 });
    } finally {
      if (saved === undefined) delete process.env['BACKPACKFLOW_DATABASE_URL'];
      else process.env['BACKPACKFLOW_DATABASE_URL'] = saved;
    }
    expect((await get(files.port, '/api/runs/on-files')).json.meta.status).toBe('completed');
    expect((await get(pg.port, '/api/runs/on-files')).status).toBe(404);
  });

  it('`backpackflow studio --database-url` serves the database in a browser, and an unreachable one is an error at start, not at the first request', async () => {
    const { studio, page, text, close } = await studioInBrowser(['--database-url', url, '--port', '0']);
    try {
      expect(studio.stdout()).toContain(`data: ${pg.location}`);
      await page.goto(`${studio.url.origin}/#/runs/default/same`);
      await page.getByText('quarantined fact: contradicts the sources').waitFor();
      expect(await text('section[aria-label="trace"]')).toContain('attempt 1/2 failed');
      await page.goto(`${studio.url.origin}/#/runs/default/same?tab=state&step=1`);
      await page.locator('table[aria-label="backpack at step 1"]').waitFor();
      expect(await text('table.state tr[data-key="fact"] .writer')).toBe('fact @ t.fact');
    } finally {
      await close();
    }
    const closed = new URL(url);
    closed.port = '1';
    const refused = await cli(['studio', '--database-url', closed.toString(), '--port', '0']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/backpackflow: .*127\.0\.0\.1:1/);
  });
});
