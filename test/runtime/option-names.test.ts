/**
 * A misspelt option of a runtime call is a TypeError naming it, before anything is read or written: ignored, it
 * recorded the run in `./.backpackflow` without its input under a random id and reported success (review s41), and a
 * misspelt `keepLast` would have let `pruneRuns` delete the runs it was told to keep.
 */
import { existsSync, readdirSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, deleteRun, forkRun, listRuns, loadRunPoint, openNewRun, pruneRuns, resumeRun, runFlow, verifyRun, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

function counter(): Flow {
  class Count extends BackpackNode {
    override post(backpack: BackpackHandle): undefined {
      backpack.pack('n', 1);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'c' });
  flow.addNode(Count, { id: 'count' });
  return flow;
}

/** Every runtime call that takes options, given `options` (plus what it requires) on a data dir with run 'base'. */
const CALLS: Record<string, (dataDir: string, extra: Record<string, unknown>) => Promise<unknown>> = {
  runFlow: (dataDir, extra) => runFlow(counter(), { dataDir, runId: 'new', ...extra }),
  resumeRun: (dataDir, extra) => resumeRun(counter(), { dataDir, runId: 'base', ...extra }),
  forkRun: (dataDir, extra) => forkRun(counter(), { dataDir, runId: 'base', atStep: 0, newRunId: 'fork', ...extra }),
  listRuns: (dataDir, extra) => listRuns({ dataDir, ...extra }),
  loadRunPoint: (dataDir, extra) => loadRunPoint({ dataDir, runId: 'base', ...extra }),
  verifyRun: (dataDir, extra) => verifyRun({ dataDir, runId: 'base', ...extra }),
  deleteRun: (dataDir, extra) => deleteRun({ dataDir, runId: 'base', ...extra }),
  pruneRuns: (dataDir, extra) => pruneRuns({ dataDir, status: 'completed', ...extra }),
  openNewRun: (dataDir, extra) => openNewRun({ dataDir, runId: 'opened', ...extra }),
};

async function dataDirWithRun(): Promise<string> {
  const dataDir = makeTempDir('option-names-', 'test');
  await runFlow(counter(), { dataDir, runId: 'base' });
  return dataDir;
}

const runs = (dataDir: string): string[] => readdirSync(`${dataDir}/sessions/default/runs`).sort();

describe('option names of the runtime calls', () => {
  it.each([
    ['runFlow', 'dataDirectory', 'dataDir'],
    ['runFlow', 'inputs', 'input'],
    ['runFlow', 'runID', 'runId'],
    ['resumeRun', 'answer', 'resume'],
    ['resumeRun', 'pause', undefined],
    ['forkRun', 'step', 'atStep'],
    ['forkRun', 'from', undefined],
    ['forkRun', 'atstep', 'atStep'],
    ['listRuns', 'session', 'sessionKey'],
    ['listRuns', 'all', undefined],
    ['loadRunPoint', 'atStep', 'step'],
    ['verifyRun', 'datadir', 'dataDir'],
    ['deleteRun', 'sessionkey', 'sessionKey'],
    ['pruneRuns', 'keeplast', 'keepLast'],
    ['openNewRun', 'durable', 'durability'],
  ])('%s refuses %s, naming it and what it may have meant, and touches nothing', async (call, wrong, meant) => {
    const dataDir = await dataDirWithRun();
    const before = runs(dataDir);
    const error = (await CALLS[call]!(dataDir, { [wrong]: 'x' }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toMatch(new RegExp(`^${call}: unknown option "${wrong}"`));
    if (meant !== undefined) expect(error.message).toContain(`(did you mean ${meant}?)`);
    else expect(error.message).not.toContain('did you mean');
    expect(error.message).toContain('; its options are ');
    expect(runs(dataDir)).toEqual(before);
    expect(existsSync(`${dataDir}/sessions/default/runs/base/events.jsonl`)).toBe(true);
  });

  it('pruneRuns with a misspelt keepLast deletes nothing (it would have deleted every completed run)', async () => {
    const dataDir = await dataDirWithRun();
    await runFlow(counter(), { dataDir, runId: 'second' });
    await expect(pruneRuns({ dataDir, status: 'completed', keep_last: 5 } as never)).rejects.toThrow(/unknown option "keep_last"/);
    expect(runs(dataDir)).toEqual(['base', 'second']);
  });

  it('every call refuses any option name it does not take, and accepts its own', async () => {
    const dataDir = await dataDirWithRun();
    const taken = new Set(['dataDir', 'sessionKey', 'redaction', 'store', 'modelDeltas', 'runId', 'input', 'newRun', 'durability', 'keyframeInterval', 'signal', 'resume', 'answering', 'atStep', 'newRunId', 'persist', 'step', 'olderThan', 'status', 'keepLast', 'dryRun', 'now']);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(CALLS)),
        fc.string({ minLength: 1, maxLength: 12 }).filter((key) => !taken.has(key) && key !== '__proto__'),
        async (call, key) => {
          const error = (await CALLS[call]!(dataDir, { [key]: 1 }).catch((e: unknown) => e)) as Error;
          expect(error).toBeInstanceOf(TypeError);
          expect(error.message.startsWith(`${call}: unknown option ${JSON.stringify(key)}`)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
    // The calls' own options pass the check (listRuns with persist, loadRunPoint with step).
    await expect(listRuns({ dataDir, persist: false })).resolves.toHaveLength(1);
    await expect(loadRunPoint({ dataDir, runId: 'base', step: 0 })).resolves.toMatchObject({ step: 0 });
  });
});
