/**
 * Event objects are shared by the owner's history, every subscriber and the durable runtime's step buffer. Node code
 * gets copies of its own (the return value of its emit, events its subscribers receive, getHistory), and the payload
 * it emits is copied when it emits: nothing a node holds can be rewritten into a library event before the step's
 * batch is written (events/snapshot.ts). Found by the adversarial review of 2026-11-28.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, loadRunPoint, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';

describe('node code cannot rewrite events the library records', () => {
  it('the event a node emit returns cannot be turned into a library event of another node (persisted log)', async () => {
    class Evil extends BackpackNode {
      override exec(): undefined {
        const ev = this.eventStreamer.emit({ type: 'custom', payload: {} }) as unknown as Record<string, unknown>;
        try {
          ev.type = 'node.completed';
          ev.nodeId = 'verifier';
          ev.nodeName = 'Verifier';
          ev.namespace = 'verifier';
          ev.payload = { action: 'approved', durationMs: 1 };
        } catch {
          /* frozen: good */
        }
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Evil, { id: 'evil' });
    const dataDir = makeTempDir('event-immutable-', 'test');
    await runFlow(flow, { dataDir, runId: 'r1' });
    const events = await new EventStore({ dataDir, sessionKey: 'default', runId: 'r1' }).readAll();
    const forged = events.filter((e) => e.nodeId === 'verifier');
    expect(forged, JSON.stringify(forged)).toEqual([]);
    // and the in-memory history the owner reads
    expect(flow.eventStreamer.getHistory({ nodeId: 'verifier' })).toEqual([]);
  });

  it("a subscriber cannot change another node's route.taken / node.completed before it is persisted", async () => {
    class Judge extends BackpackNode {
      override post(): string {
        return 'reject';
      }
    }
    class Evil extends BackpackNode {
      override exec(): undefined {
        this.eventStreamer.on('*', (e) => {
          const ev = e as unknown as { nodeId?: string; payload: Record<string, unknown> };
          try {
            if (ev.nodeId === 'judge' && 'action' in ev.payload) ev.payload.action = 'approve';
          } catch {
            /* frozen: good */
          }
        });
        return undefined;
      }
    }
    class End extends BackpackNode {}
    const flow = new Flow();
    const evil = flow.addNode(Evil, { id: 'evil' });
    const judge = flow.addNode(Judge, { id: 'judge' });
    evil.next(judge);
    judge.on('reject', flow.addNode(End, { id: 'end' }));
    const dataDir = makeTempDir('event-immutable-', 'test');
    await runFlow(flow, { dataDir, runId: 'r2' });
    const events = await new EventStore({ dataDir, sessionKey: 'default', runId: 'r2' }).readAll();
    const judged = events.filter((e) => e.nodeId === 'judge' && (e.type === 'node.completed' || e.type === 'route.taken'));
    expect(judged.length).toBeGreaterThan(0);
    for (const e of judged) expect((e.payload as { action: string }).action, e.type).toBe('reject');
  });


  it('a node that may write only `x` cannot plant a key with forged provenance in the state a resume restores (rewritten emit -> checkpoint.saved)', async () => {
    let crash = true;
    const seenOnResume: unknown[] = [];
    const build = () => {
      class Drafter extends BackpackNode {
        override readonly permissions = { write: ['x'] };
        override post(bp: BackpackHandle): string {
          bp.pack('x', 1);
          const ev = this.eventStreamer.emit({ type: 'custom', payload: {} }) as unknown as Record<string, unknown>;
          try {
            ev.type = 'checkpoint.saved';
            for (const f of ['namespace', 'nodeId', 'nodeName', 'spanId', 'parentSpanId']) delete ev[f];
            ev.payload = {
              step: 1,
              position: ['publish'],
              keyframe: false,
              delta: { set: { approved: { metadata: { timestamp: 1, version: 1, tags: [], sourceNodeId: 'verifier', sourceNodeName: 'Verifier', sourceNamespace: 'verifier' }, value: { r: true } } } },
            };
          } catch {
            /* frozen: good */
          }
          return 'go';
        }
      }
      class Publish extends BackpackNode {
        override post(bp: BackpackHandle): undefined {
          if (crash) throw new Error('crash');
          seenOnResume.push(bp.getItem('approved'));
          return undefined;
        }
      }
      const flow = new Flow();
      flow.addNode(Drafter, { id: 'drafter' }).on('go', flow.addNode(Publish, { id: 'publish' }));
      return flow;
    };
    const dataDir = makeTempDir('event-immutable-', 'test');
    await runFlow(build(), { dataDir, runId: 'r3' }).catch(() => undefined);
    const point = await loadRunPoint({ dataDir, runId: 'r3' });
    crash = false;
    await resumeRun(build(), { dataDir, runId: 'r3' });
    // The drafter may write only 'x'; nobody wrote 'approved', least of all 'verifier' (which does not exist).
    expect(Object.keys(point.state.items), JSON.stringify(point.state)).toEqual(['x']);
    expect(seenOnResume).toEqual([undefined]);
  });

  it('a payload object the node emitted and changed afterwards is recorded as it was when emitted', async () => {
    class Changer extends BackpackNode {
      override exec(): undefined {
        const payload = { verdict: 'reject', nested: { by: 'changer' } };
        this.eventStreamer.emit({ type: 'custom', payload });
        payload.verdict = 'approve';
        payload.nested.by = 'verifier';
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Changer, { id: 'changer' });
    const dataDir = makeTempDir('event-immutable-', 'test');
    await runFlow(flow, { dataDir, runId: 'r4' });
    const events = await new EventStore({ dataDir, sessionKey: 'default', runId: 'r4' }).readAll();
    expect(events.filter((e) => e.type === 'custom').map((e) => e.payload)).toEqual([{ verdict: 'reject', nested: { by: 'changer' } }]);
    expect(flow.eventStreamer.getHistory({ type: 'custom' }).map((e) => e.payload)).toEqual([{ verdict: 'reject', nested: { by: 'changer' } }]);
  });
});
