/**
 * A failed durable run whose last batch (the failing step's events and its run.failed) cannot be stored is still
 * recorded as failed, with the reason: a run.failed event alone names what could not be stored and why, `listRuns`
 * says failed (not stopped, resumable, with no error), and the caller's error names it too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, listRuns, resumeRun, runFlow, StoreError, StreamEventType } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** A payload nested deeper than redaction and the value codec can walk (they recurse). */
const tooDeep = (): unknown => JSON.parse('['.repeat(20_000) + ']'.repeat(20_000));

/** Reports an event that cannot be stored, then fails. */
class Unstorable extends BackpackNode {
  override exec(): never {
    this.emitEvent(StreamEventType.CUSTOM, { report: tooDeep() });
    throw new Error('the tool broke');
  }
}

/** Reports an event that cannot be stored, then pauses for a person. */
class UnstorableThenAsks extends BackpackNode {
  override async prep(): Promise<void> {
    this.emitEvent(StreamEventType.CUSTOM, { report: tooDeep() });
    await this.interrupt({ question: 'ok?' });
  }
}

const storedEvents = (dataDir: string, runId: string): { type: string; payload: unknown }[] =>
  readFileSync(join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; payload: unknown });
const eventTypes = (dataDir: string, runId: string): string[] => storedEvents(dataDir, runId).map((event) => event.type);

/** The error a durable run of one node of class `Node` rejects with (undefined if it does not reject). */
function failureOf(Node: new (...args: any[]) => BackpackNode, id: string, dataDir: string, runId: string): Promise<Error | undefined> {
  const flow = new Flow();
  flow.addNode(Node, { id });
  return runFlow(flow, { dataDir, runId }).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
}

describe('a failed run whose last batch cannot be stored', () => {
  it('is recorded as failed with the reason, and the caller is told what could not be stored', async () => {
    const dataDir = makeTempDir('bf-failure-record-', 'test');
    const error = await failureOf(Unstorable, 'worker', dataDir, 'run-lost');
    expect(error).toBeInstanceOf(StoreError);
    expect(error!.message).toMatch(/^run default\/run-lost failed \(Node 'worker' failed on attempt 1 of 1: the tool broke\), and the run's last events \(seq \d+-\d+: node\.started, .*custom.*run\.failed\) could not be stored: /);
    expect((error!.cause as Error).message).toMatch(/the tool broke/);

    const [run] = await listRuns({ dataDir });
    expect(run).toMatchObject({ runId: 'run-lost', status: 'failed' });
    expect(run!.error).toMatch(/the tool broke \(the run's last events \(seq .*\) could not be stored: /);
    expect(eventTypes(dataDir, 'run-lost')).toEqual([StreamEventType.RUN_START, StreamEventType.CHECKPOINT_SAVED, StreamEventType.RUN_ERROR]);
    // A run.failed like any other (an ErrorSummary, the run's duration), so every reader renders it.
    const failed = storedEvents(dataDir, 'run-lost').at(-1)!;
    expect(failed.payload).toMatchObject({ durationMs: expect.any(Number), error: { name: 'NodeExecutionError', message: expect.stringMatching(/the tool broke \(the run's last events/) } });
    // Failed, not waiting to be resumed: a resume is still possible, from the last recorded step, as for any failure.
    expect(run!.status).not.toBe('stopped');
  });

  it('is recorded as failed when the batch lost held a pause (run.waiting), not as waiting', async () => {
    const dataDir = makeTempDir('bf-failure-record-', 'test');
    const error = await failureOf(UnstorableThenAsks, 'asker', dataDir, 'run-wait');
    expect(error).toBeInstanceOf(StoreError);
    expect(error!.message).toMatch(/run\.waiting\) could not be stored/);
    const [run] = await listRuns({ dataDir });
    expect(run).toMatchObject({ status: 'failed' });
    await expect(resumeRun(new Flow(), { dataDir, runId: 'run-wait', resume: 'yes' })).rejects.toThrow(/failed, not waiting/);
  });
});
