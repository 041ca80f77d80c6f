/**
 * A waiting run's projection stored before pauses were numbered (its interrupt has no `pause`) is rebuilt from the
 * log, so listRuns, listedRun, `runs list --json` and the Studio name the pause as `runs show` and resumeRun do (the
 * Studio's check and `runs resume --enqueue` rely on it).
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, listRuns, listedRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { runPaths } from '../../src/store/index.js';
import { writeSealed } from '../../src/store/sealed-file.js';
import { makeTempDir } from '../support/temp.js';

function cleanup(): Flow {
  class Ask extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      backpack.pack('deleteStaging', (await this.interrupt({ question: 'Delete the STAGING database?' }, { schema: z.object({ approve: z.boolean() }) })).approve);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'cleanup' });
  flow.addNode(Ask, { id: 'staging' });
  return flow;
}

it('a projection stored before pauses were numbered still gives the pause (as runs show and resumeRun do)', async () => {
  const dataDir = makeTempDir('legacy-pause-', 'test');
  const first = await runFlow(cleanup(), { dataDir, runId: 'cleanup' });
  const pause = first.interrupt!.pause!;
  const paths = runPaths(dataDir, 'default', 'cleanup');
  const events = readFileSync(paths.events, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { seq: number; type: string });
  expect(events.find((e) => e.type === 'run.waiting')?.seq).toBe(pause);

  // The projection as 61a8fa6 stored it: the same, without interrupt.pause.
  const meta = (await listedRun({ dataDir, runId: 'cleanup' }))!;
  const { status: _status, ...stored } = meta as typeof meta & { status: string };
  const { pause: _pause, ...interrupt } = meta.interrupt!;
  await writeSealed(paths.runMeta, { ...stored, status: 'waiting', interrupt }, { fsync: false });

  const listed = await listedRun({ dataDir, runId: 'cleanup' });
  const inList = (await listRuns({ dataDir })).find((r) => r.runId === 'cleanup');
  expect({ listedRun: listed?.interrupt?.pause, listRuns: inList?.interrupt?.pause }).toEqual({ listedRun: pause, listRuns: pause });
});
