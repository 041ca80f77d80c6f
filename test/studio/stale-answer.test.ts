/**
 * An answer names the pause it is to (InterruptInfo.pause): one from a page that showed an older question (another
 * person answered it from a terminal, and the run now asks another with the same answer shape) is refused, nothing
 * written. Before, it was checked against the new question's schema, passed, and was recorded as its answer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listedRun, loadRunPoint, decodeValue } from '../../src/index.js';
import { runPaths } from '../../src/store/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { BIN, cliJson, tempDir } from '../cli/helpers.js';
import { get, post } from './helpers.js';

const FLOW = join(import.meta.dirname, 'fixtures', 'cleanup.mjs');
let dataDir = '';
let studio: StudioServer;

beforeAll(async () => {
  dataDir = tempDir();
  studio = await startStudio({ dataDir, port: 0, steering: { cli: [process.execPath, BIN], settleMs: 60_000 } });
}, 120_000);
afterAll(async () => {
  await studio?.close();
});

it('a stale answer from the studio (the run moved on to another question) is refused, and nothing is written', async () => {
  const runId = 'cleanup-1';
  const started = await cliJson(['run', '--flow-module', `${FLOW}#buildCleanupFlow`, '--run-id', runId, '--data-dir', dataDir]);
  expect(started.status).toBe('waiting');

  // Alice opens the run in the studio: it asks about STAGING.
  const detail = (await get(studio.port, `/api/runs/${runId}`)).json;
  expect(detail.meta.interrupt).toMatchObject({ nodeId: 'staging', payload: { question: 'Delete the STAGING database?' } });

  // Meanwhile Bob answers from a terminal ("no, keep staging"): the run moves on and now asks about PRODUCTION.
  const bob = await cliJson(['runs', 'resume', runId, '--input', '{"approve":false}', '--data-dir', dataDir]);
  expect(bob).toMatchObject({ status: 'waiting', interrupt: { nodeId: 'production' } });
  const log = runPaths(dataDir, 'default', runId).events;
  const before = readFileSync(log, 'utf8');

  // Alice submits the form she sees ("yes, delete STAGING"), with the question it answers.
  const reply = await post(
    studio.port,
    `/api/runs/${runId}/resume`,
    { answer: { approve: true }, pause: detail.meta.interrupt.pause },
    { authorization: `Bearer ${studio.token}` },
  );

  // Promised: refused (the run waits for another question), nothing written, still waiting for production.
  const point = await loadRunPoint({ dataDir, runId });
  const deletedProduction = point.state.items['deleteProduction'] ? decodeValue(point.state.items['deleteProduction'].value) : undefined;
  expect({ status: reply.status, deletedProduction }).toEqual({ status: 409, deletedProduction: undefined });
  expect(reply.json.error).toBe(`run '${runId}' no longer waits for pause ${detail.meta.interrupt.pause}: another answer went on, and it now asks another question (pause ${bob.interrupt.pause}); read it before you answer`);
  expect(readFileSync(log, 'utf8')).toBe(before);
  expect(await listedRun({ dataDir, runId })).toMatchObject({ status: 'waiting', interrupt: { nodeId: 'production' } });

  // The answer to the question the run asks now goes through; one without a pause is refused (the page always names it).
  const unnamed = await post(studio.port, `/api/runs/${runId}/resume`, { answer: { approve: false } }, { authorization: `Bearer ${studio.token}` });
  expect(unnamed.status).toBe(409);
  expect(unnamed.json).toMatchObject({ parameter: 'pause' });
  const bad = await post(studio.port, `/api/runs/${runId}/resume`, { answer: { approve: false }, pause: 'latest' }, { authorization: `Bearer ${studio.token}` });
  expect(bad.status).toBe(400);
  const good = await post(studio.port, `/api/runs/${runId}/resume`, { answer: { approve: false }, pause: bob.interrupt.pause }, { authorization: `Bearer ${studio.token}` });
  expect(good.status).toBe(200);
  expect(await listedRun({ dataDir, runId })).toMatchObject({ status: 'completed' });
}, 120_000);
