/**
 * The action a durable run returns is the one its log records (`run.completed`'s `action`) and every reader shows:
 * `'default'` when the last node returned none, as routing reads it (before, the result said undefined where the log,
 * the trace and the Studio said `default`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, resumeRun, runFlow, StreamEventType } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** Returns the action in its config (`undefined` when it has none). */
class Ends extends BackpackNode {
  override post(): string | undefined {
    return this.config['action'] as string | undefined;
  }
}

/** Pauses for an answer on its first execution. */
class Asks extends BackpackNode {
  override async exec(): Promise<unknown> {
    return this.interrupt({ question: 'go on?' });
  }
  override post(): string | undefined {
    return this.config['action'] as string | undefined;
  }
}

function recordedEnd(dataDir: string, runId: string): { action?: unknown } {
  const lines = readFileSync(join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl'), 'utf8').replace(/\0+$/, '').trim().split('\n');
  const end = lines.map((line) => JSON.parse(line) as { type: string; payload: { action?: unknown } }).find((e) => e.type === StreamEventType.RUN_END);
  return end!.payload;
}

describe('RunResult.action', () => {
  it("is the action run.completed records, 'default' when the last node returned none", async () => {
    const dataDir = makeTempDir('bf-run-action-', 'test');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.option(fc.constantFrom('done', 'default', 'x.y'), { nil: undefined }), async (action) => {
        const flow = new Flow({ namespace: 'act' });
        flow.addNode(Ends, { id: 'end', ...(action === undefined ? {} : { action }) });
        const runId = `a${n++}`;
        const result = await runFlow(flow, { dataDir, runId });
        expect(result.action).toBe(action ?? 'default');
        expect(recordedEnd(dataDir, runId).action).toBe(result.action);
      }),
      { numRuns: 6, examples: [[undefined], ['done']] },
    );
  });

  it('is undefined while the run waits, and the recorded action once a resume completes it', async () => {
    const dataDir = makeTempDir('bf-run-action-', 'test');
    const build = (): Flow => {
      const flow = new Flow({ namespace: 'ask' });
      flow.addNode(Asks, { id: 'ask' });
      return flow;
    };
    const waiting = await runFlow(build(), { dataDir, runId: 'w' });
    expect(waiting).toMatchObject({ status: 'waiting', action: undefined });
    const done = await resumeRun(build(), { dataDir, runId: 'w', resume: true });
    expect(done).toMatchObject({ status: 'completed', action: 'default' });
    expect(recordedEnd(dataDir, 'w').action).toBe('default');
  });
});
