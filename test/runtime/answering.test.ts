/**
 * ResumeRunOptions.answering: an answer names the pause it is to (InterruptInfo.pause, the seq of the run.waiting
 * that recorded it, as runFlow's result, listRuns and a resume's result give it). An answer to a pause the run has
 * left (another resume answered it, and the run asks something else now) is refused, nothing written.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, StoreError, listedRun, loadRunPoint, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { runPaths } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';

const Decision = z.object({ approve: z.boolean() });

function cleanup(): Flow {
  const asking = (question: string, key: string) =>
    class extends BackpackNode {
      override async post(backpack: BackpackHandle): Promise<undefined> {
        backpack.pack(key, (await this.interrupt({ question }, { schema: Decision })).approve);
        return undefined;
      }
    };
  const flow = new Flow({ namespace: 'cleanup' });
  const staging = flow.addNode(asking('Delete the STAGING database?', 'deleteStaging'), { id: 'staging' });
  staging.next(flow.addNode(asking('Delete the PRODUCTION database?', 'deleteProduction'), { id: 'production' }));
  return flow;
}

describe('answering a pause by its number', () => {
  it('names each pause as every reader does, and refuses an answer to a pause the run has left', async () => {
    const dataDir = makeTempDir('answering-', 'test');
    const runId = 'cleanup';
    const first = await runFlow(cleanup(), { dataDir, runId });
    const staging = first.interrupt!.pause!;
    expect(first.interrupt).toMatchObject({ nodeId: 'staging', pause: staging });
    expect((await listedRun({ dataDir, runId }))?.interrupt?.pause).toBe(staging);
    const events = readFileSync(runPaths(dataDir, 'default', runId).events, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { seq: number; type: string });
    expect(events.find((e) => e.type === 'run.waiting')?.seq).toBe(staging);

    // Bob answers the staging question; the run now asks about production.
    const second = await resumeRun(cleanup(), { dataDir, runId, resume: { approve: false }, answering: staging });
    expect(second.interrupt).toMatchObject({ nodeId: 'production' });
    const production = second.interrupt!.pause!;
    expect(production).toBeGreaterThan(staging);

    // Alice answers the staging question she saw: refused, nothing written.
    const log = runPaths(dataDir, 'default', runId).events;
    const before = readFileSync(log, 'utf8');
    const stale = await resumeRun(cleanup(), { dataDir, runId, resume: { approve: true }, answering: staging }).then(() => undefined, (e: unknown) => e);
    expect(stale).toBeInstanceOf(StoreError);
    expect((stale as Error).message).toContain(`the answer is to pause ${staging}, but it now waits for pause ${production} (node 'production', cleanup.production), another question`);
    expect(readFileSync(log, 'utf8')).toBe(before);
    expect((await loadRunPoint({ dataDir, runId })).state.items['deleteProduction']).toBeUndefined();

    // A pause that is no integer is a TypeError; the right one goes through.
    await expect(resumeRun(cleanup(), { dataDir, runId, resume: { approve: true }, answering: -1 })).rejects.toThrow(TypeError);
    expect((await resumeRun(cleanup(), { dataDir, runId, resume: { approve: false }, answering: production })).status).toBe('completed');
    // A completed run is refused as before.
    await expect(resumeRun(cleanup(), { dataDir, runId, resume: { approve: true }, answering: production })).rejects.toThrow('already completed');
  });
});
