/**
 * The RunScope a node receives (prep's and exec's second argument) is shared by every later step of the flow and
 * inherited by every composite's internal flow. It is frozen, and what only the engine may use (the run's interrupt
 * answers, its resume position, the durable runtime's step callback) is not on it (flow/scope.ts, RunControls).
 * Found by the adversarial review of 2026-11-28: node code could rewrite all three.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, RunInterrupted, loadRunPoint, runFlow, type BackpackHandle, type RunScope } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

describe('node code cannot rewrite the run scope other nodes run with', () => {
  it("a node cannot answer another node's interrupt (human approval) by planting answers in the scope", async () => {
    class Evil extends BackpackNode {
      override prep(_bp: BackpackHandle, scope: RunScope) {
        try {
          (scope as { answers?: unknown }).answers = new Map([['approve', [{ approved: true }]]]);
        } catch {
          /* frozen: good */
        }
        return undefined;
      }
    }
    class Approve extends BackpackNode {
      override async post(bp: BackpackHandle): Promise<undefined> {
        const answer = await this.interrupt({ question: 'publish?' }, { schema: z.object({ approved: z.boolean() }) });
        bp.pack('approved', answer.approved);
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Approve, { id: 'approve' }));
    const outcome = await flow.run().then(() => 'completed', (e: unknown) => (e instanceof RunInterrupted ? 'waiting for a person' : String(e)));
    expect(outcome).toBe('waiting for a person');
    expect(flow.backpack.has('approved')).toBe(false);
  });

  it("a node cannot make a later composite's internal flow start past its gate by planting a resume position", async () => {
    const ran: string[] = [];
    class Check extends BackpackNode {
      override post() {
        ran.push('check');
        return 'rejected';
      }
    }
    class Publish extends BackpackNode {
      override post(): undefined {
        ran.push('publish');
        return undefined;
      }
    }
    class Gate extends BackpackNode {
      protected override buildInternalFlow(inner: Flow): void {
        const check = inner.addNode(Check, { id: 'check' });
        check.on('approved', inner.addNode(Publish, { id: 'publish' }));
      }
    }
    class Evil extends BackpackNode {
      override prep(_bp: BackpackHandle, scope: RunScope) {
        try {
          (scope as { resume?: string[] }).resume = ['publish'];
        } catch {
          /* frozen: good */
        }
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Gate, { id: 'gate' }));
    await flow.run().catch(() => undefined);
    expect(ran).toEqual(['check']);
  });

  it("a node cannot call the durable runtime's step callback to record a checkpoint at a position of its choosing", async () => {
    let crash = true;
    class Evil extends BackpackNode {
      override async prep(_bp: BackpackHandle, scope: RunScope) {
        try {
          await (scope as unknown as { onStep?: (b: unknown) => Promise<void> }).onStep?.({ path: [], completed: 'approve', action: 'default', next: 'publish', step: 1 });
        } catch {
          /* refused: good */
        }
        if (crash) throw new Error('crash');
        return undefined;
      }
    }
    class Approve extends BackpackNode {}
    class Publish extends BackpackNode {}
    const flow = new Flow();
    const evil = flow.addNode(Evil, { id: 'evil' });
    const approve = flow.addNode(Approve, { id: 'approve' });
    evil.next(approve);
    approve.next(flow.addNode(Publish, { id: 'publish' }));
    const dataDir = makeTempDir('run-scope-', 'test');
    await runFlow(flow, { dataDir, runId: 'r' }).catch(() => undefined);
    const point = await loadRunPoint({ dataDir, runId: 'r' });
    // evil never finished: a resume must start at evil, not past approve.
    expect(point.position).toEqual(['evil']);
    crash = false;
  });

  it('every scope a node receives, and its path, is frozen, and nothing on it is a function, Map, Set or mutable array', async () => {
    const seen: RunScope[] = [];
    class Look extends BackpackNode {
      override prep(_bp: BackpackHandle, scope: RunScope) {
        seen.push(scope);
        return undefined;
      }
      override exec(_prep: unknown) {
        return undefined;
      }
    }
    class Composite extends BackpackNode {
      protected override buildInternalFlow(inner: Flow): void {
        inner.addNode(Look, { id: 'inner' });
      }
    }
    const flow = new Flow();
    flow.addNode(Look, { id: 'outer' }).next(flow.addNode(Composite, { id: 'comp' }));
    const dataDir = makeTempDir('run-scope-', 'test');
    await runFlow(flow, { dataDir, runId: 'frozen' });
    expect(seen).toHaveLength(2);
    for (const scope of seen) {
      expect(Object.isFrozen(scope)).toBe(true);
      expect(Object.isFrozen(scope.path)).toBe(true);
      expect(Object.isFrozen(scope.params)).toBe(true);
      for (const value of Object.values(scope)) {
        expect(typeof value).not.toBe('function');
        expect(value instanceof Map || value instanceof Set).toBe(false);
        if (Array.isArray(value)) expect(Object.isFrozen(value)).toBe(true);
      }
      expect(Object.keys(scope).sort()).toEqual(expect.arrayContaining(['params', 'path']));
      for (const key of ['resume', 'onStep', 'answers']) expect(key in scope).toBe(false);
    }
    expect(seen[1]!.path).toEqual(['comp']);
  });
});
