/** Issue 14's run records: waiting runs, segments across resumes, fork origin, and each error counted once. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { BackpackHandle } from '../../src/backpack/index.js';
import type { StreamEvent } from '../../src/events/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { emptyRunMeta, foldRunMetaBatch } from '../../src/store/run-meta.js';

function fold(events: StreamEvent[]) {
  return foldRunMetaBatch(emptyRunMeta('s', events[0]?.runId ?? 'r'), events);
}

class Boom extends BackpackNode {
  override exec(): never {
    throw new Error('boom');
  }
}

describe('run projection (issue 14)', () => {
  it('counts an error once, however many composites it passes through', async () => {
    class Inner extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(Boom, { id: 'boom', maxRetries: 2 });
      }
    }
    class Outer extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(Inner, { id: 'inner' });
      }
    }
    const flow = new Flow({ namespace: 'e' });
    flow.addNode(Outer, { id: 'outer' });
    await expect(flow.run()).rejects.toThrow(/boom/);
    const events = flow.eventStreamer.getHistory();
    expect(events.filter((e) => e.type === 'error')).toHaveLength(3);
    const meta = fold(events);
    expect(meta.status).toBe('failed');
    expect(meta.errorCount).toBe(1);
  });

  it('counts a run failure no node reported (a step limit) once', async () => {
    class Loop extends BackpackNode {}
    const flow = new Flow({ namespace: 'l', maxSteps: 3 });
    const a = flow.addNode(Loop, { id: 'a' });
    a.next(a);
    await expect(flow.run()).rejects.toThrow(/maxSteps|steps/);
    expect(fold(flow.eventStreamer.getHistory()).errorCount).toBe(1);
  });

  it('records a pause as waiting with its interrupt, and a resume as a new segment keeping the first start', async () => {
    class Ask extends BackpackNode {
      override async post(backpack: BackpackHandle) {
        backpack.pack('ok', await this.interrupt('ok?', { schema: z.boolean() }));
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'w' });
    flow.addNode(Ask, { id: 'ask' });
    await flow.run(undefined, { runId: 'run-1' }).catch(() => undefined);
    const first = flow.eventStreamer.getHistory();
    const waiting = fold(first);
    expect(waiting).toMatchObject({ status: 'waiting', interrupt: { nodeId: 'ask', namespace: 'w.ask', index: 0, payload: 'ok?', schema: { type: 'boolean' } } });
    expect(waiting.segments).toHaveLength(1);
    // The second segment, as a resume in another process would record it (later timestamps, continued seq).
    const again = new Flow({ namespace: 'w' });
    again.addNode(Ask, { id: 'ask' });
    again.eventStreamer.setNextSeq('run-1', first.at(-1)!.seq + 1);
    await new Promise((r) => setTimeout(r, 5));
    await again.run(undefined, { runId: 'run-1', answers: new Map([['w.ask', [true]]]) });
    const meta = foldRunMetaBatch(waiting, again.eventStreamer.getHistory());
    expect(meta.status).toBe('completed');
    expect(meta.interrupt).toBeUndefined();
    expect(meta.startedAt).toBe(first[0]!.timestamp);
    expect(meta.segments!.map((s) => s.outcome)).toEqual(['waiting', 'completed']);
    expect(meta.durationMs).toBe(meta.segments!.reduce((n, s) => n + s.durationMs!, 0));
    expect(meta.durationMs!).toBeLessThan(meta.endedAt! - meta.startedAt);
  });
});
