/**
 * A resume finishes a run whose log ends with the step that ended its flow (its writer died before the run's end):
 * no node runs again, the flow's own `post` runs on that step's action, and the run ends as the flow says (its
 * action, or its post's failure). A run whose log records an end after its last step (one that failed in its flow's
 * post) is not made completed: the resume is refused and nothing is written.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, StoreError, listRuns, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

const eventsOf = (dataDir: string, runId: string): string => join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl');
const logOf = (dataDir: string, runId: string): { type: string; payload: Record<string, unknown> }[] =>
  readFileSync(eventsOf(dataDir, runId), 'utf8')
    .replace(/\0+$/, '')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));

/** The log as a writer killed between the flow's last step and the run's end leaves it: its last line (the end) cut. */
function cutEnd(dataDir: string, runId: string): void {
  const lines = readFileSync(eventsOf(dataDir, runId), 'utf8').replace(/\0+$/, '').trimEnd().split('\n');
  expect(lines.at(-1)).toContain('"run.completed"');
  writeFileSync(eventsOf(dataDir, runId), `${lines.slice(0, -1).join('\n')}\n`);
  const dir = join(dataDir, 'sessions', 'default', 'runs', runId);
  rmSync(join(dir, 'events.pending'), { force: true });
  rmSync(join(dir, 'projections'), { recursive: true, force: true });
}

class Work extends BackpackNode {
  static runs = 0;
  override async exec(): Promise<unknown> {
    Work.runs++;
    return 'done';
  }
  override async post(backpack: BackpackHandle): Promise<string> {
    backpack.pack('work', 'done');
    return 'finished';
  }
}

describe("the end of a run after its flow's last step", () => {
  it("a run that failed in its flow's own post is not made completed by a resume: refused, nothing written", async () => {
    class CheckedFlow extends Flow {
      override post(_shared: unknown, _prep: unknown, action: string | undefined): string | undefined {
        if (!this.backpack.has('approved')) throw new Error('the flow ended without an approval');
        return action;
      }
    }
    const build = (): Flow => {
      const flow = new CheckedFlow({ namespace: 'app' });
      flow.addNode(Work, { id: 'work' });
      return flow;
    };
    const dataDir = makeTempDir('run-end-post-', 'test');
    await expect(runFlow(build(), { dataDir, runId: 'checked' })).rejects.toThrow(/without an approval/);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'failed' });
    const before = logOf(dataDir, 'checked').length;
    const runs = Work.runs;
    const resumed = resumeRun(build(), { dataDir, runId: 'checked' });
    await expect(resumed).rejects.toThrow(StoreError);
    await expect(resumed).rejects.toThrow(/failed \(the flow ended without an approval\) after its last step \(1\), which ended its flow: no step is left to run.*fork it/);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'failed' });
    expect(logOf(dataDir, 'checked')).toHaveLength(before);
    expect(Work.runs).toBe(runs);
  });

  it("killed before its end: the resume runs the flow's own post, no node, and records the action the flow returns", async () => {
    let posts = 0;
    class RenamingFlow extends Flow {
      override post(_shared: unknown, _prep: unknown, action: string | undefined): string {
        posts++;
        return `${action}-checked`;
      }
    }
    const build = (): Flow => {
      const flow = new RenamingFlow({ namespace: 'app' });
      flow.addNode(Work, { id: 'work' });
      return flow;
    };
    const dataDir = makeTempDir('run-end-post-', 'test');
    await expect(runFlow(build(), { dataDir, runId: 'renamed' })).resolves.toMatchObject({ status: 'completed', action: 'finished-checked' });
    cutEnd(dataDir, 'renamed');
    expect((await listRuns({ dataDir }))[0]!.status).toBe('stopped');
    const before = logOf(dataDir, 'renamed').length;
    const runs = Work.runs;
    await expect(resumeRun(build(), { dataDir, runId: 'renamed' })).resolves.toMatchObject({ status: 'completed', action: 'finished-checked', steps: 1 });
    expect(Work.runs).toBe(runs);
    expect(posts).toBe(2);
    const added = logOf(dataDir, 'renamed').slice(before);
    expect(added.map((e) => e.type)).toEqual(['run.started', 'run.completed']);
    expect(added[0]!.payload).toMatchObject({ resumed: true });
    expect(added[1]!.payload).toMatchObject({ action: 'finished-checked', steps: 0 });
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'completed' });
  });

  it("killed before its end, and its flow's post fails when the resume runs it: recorded failed, not completed", async () => {
    let posts = 0;
    class FlakyFlow extends Flow {
      override post(_shared: unknown, _prep: unknown, action: string | undefined): string | undefined {
        // It sees the state of the last step.
        if (this.backpack.peek('work') !== 'done') throw new Error('no work in the state');
        if (++posts > 1) throw new Error('the check failed this time');
        return action;
      }
    }
    const build = (): Flow => {
      const flow = new FlakyFlow({ namespace: 'app' });
      flow.addNode(Work, { id: 'work' });
      return flow;
    };
    const dataDir = makeTempDir('run-end-post-', 'test');
    await runFlow(build(), { dataDir, runId: 'flaky' });
    cutEnd(dataDir, 'flaky');
    await expect(resumeRun(build(), { dataDir, runId: 'flaky' })).rejects.toThrow(/the check failed this time/);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'failed' });
    // And the failure stands: a second resume is refused.
    await expect(resumeRun(build(), { dataDir, runId: 'flaky' })).rejects.toThrow(/failed \(the check failed this time\) after its last step/);
  });
});
