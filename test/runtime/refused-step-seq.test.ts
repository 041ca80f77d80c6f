/**
 * A step whose batch the store refuses (an event the encoding cannot take) is not in the log, and the run.failed
 * recorded after it continues the log's seqs from the last stored event: no seq gap where the refused batch was.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, listRuns, runFlow, StreamEventType } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** A payload nested deeper than redaction and the value codec can walk (they recurse). */
const tooDeep = (): unknown => JSON.parse('['.repeat(20_000) + ']'.repeat(20_000));

class Fine extends BackpackNode {
  override exec(): string {
    return 'ok';
  }
}

/** Reports an event that cannot be stored, and ends its step normally: the step's batch is refused. */
class ReportsTooDeep extends BackpackNode {
  override exec(): string {
    this.emitEvent(StreamEventType.CUSTOM, { report: tooDeep() });
    return 'ok';
  }
}

describe('a refused step batch', () => {
  it('leaves no seq gap: the run.failed after it continues from the last stored event', async () => {
    const dataDir = makeTempDir('bf-refused-step-', 'test');
    const flow = new Flow();
    const a = flow.addNode(Fine, { id: 'a' });
    const b = flow.addNode(ReportsTooDeep, { id: 'b' });
    const c = flow.addNode(Fine, { id: 'c' });
    a.next(b);
    b.next(c);
    await expect(runFlow(flow, { dataDir, runId: 'refused' })).rejects.toThrow();
    const events = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'refused', 'events.jsonl'), 'utf8')
      .replace(/\0+$/, '')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { seq: number; type: string });
    expect(events.at(-1)!.type).toBe(StreamEventType.RUN_ERROR);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const [run] = await listRuns({ dataDir });
    expect(run).toMatchObject({ runId: 'refused', status: 'failed' });
  });
});
