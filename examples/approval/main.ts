/**
 * `npm run example:approval`: the approval agent, durably, in two processes' worth of steps: the run pauses for a
 * person, the process could exit here (the run is recorded as waiting), and a resume with the answer finishes it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeValue, listRuns, loadRunPoint, resumeRun, runFlow } from '../../src/index.js';
import { buildFlow } from './agent.js';

const dataDir = mkdtempSync(join(tmpdir(), 'bf-approval-'));
try {
  const paused = await runFlow(buildFlow(), { dataDir, runId: 'post-1', input: { topic: 'tides' } });
  console.log(`status: ${paused.status}; ${paused.interrupt?.nodeId} asks ${JSON.stringify(paused.interrupt?.payload)}`);
  console.log(`listed as: ${(await listRuns({ dataDir }))[0]!.status}`);

  // A wrong answer is refused before anything is written, with the JSON path; the run keeps waiting.
  await resumeRun(buildFlow(), { dataDir, runId: 'post-1', resume: { approved: 'yes' } }).catch((e: Error) => console.log(`refused: ${e.name}`));

  const done = await resumeRun(buildFlow(), { dataDir, runId: 'post-1', resume: { approved: true, note: 'ship it' } });
  const published = (await loadRunPoint({ dataDir, runId: 'post-1' })).state.items['published'];
  console.log(`status: ${done.status}; published: ${JSON.stringify(decodeValue(published!.value))}`);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
