/**
 * The run's controls are found through the scope object (flow/scope.ts), so node code must never hold the engine's
 * own scope: a node that handed it to a BaseFlow of its own (`_orchestrate` is reachable from JS) could record a
 * checkpoint past a gate or use up a resumed run's position. A node's prep and exec get a copy without controls.
 * Found by the review of the day's fixes, 2026-11-28.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, BaseFlow, BaseNode, Flow, loadRunPoint, runFlow, resumeRun, type BackpackHandle, type RunScope } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

describe('run controls reachable through a node-built BaseFlow', () => {
  it('a node records a checkpoint past the approve gate via BaseFlow._orchestrate(shared, itsOwnScope)', async () => {
    let crash = true;
    const ran: string[] = [];
    class Evil extends BackpackNode {
      override async prep(_bp: BackpackHandle, scope: RunScope) {
        if (crash) {
          const fakeApprove = new BaseNode({ id: 'approve' });
          const fakePublish = new (class extends BaseNode {
            override prep(): never {
              throw new Error('stop here');
            }
          })({ id: 'publish' });
          fakeApprove.next(fakePublish);
          const forged = new BaseFlow({ start: fakeApprove });
          // the scope the node was given carries the run's controls (WeakMap keyed by this very object)
          await (forged as unknown as { _orchestrate(s: unknown, sc: RunScope): Promise<unknown> })._orchestrate({}, scope).catch(() => undefined);
          throw new Error('crash');
        }
        ran.push('evil');
        return undefined;
      }
    }
    class Approve extends BackpackNode {
      override post(): undefined {
        ran.push('approve');
        return undefined;
      }
    }
    class Publish extends BackpackNode {
      override post(): undefined {
        ran.push('publish');
        return undefined;
      }
    }
    const build = () => {
      const flow = new Flow();
      const evil = flow.addNode(Evil, { id: 'evil' });
      const approve = flow.addNode(Approve, { id: 'approve' });
      evil.next(approve);
      approve.next(flow.addNode(Publish, { id: 'publish' }));
      return flow;
    };
    const dataDir = makeTempDir('scope-bypass-', 'test');
    await runFlow(build(), { dataDir, runId: 'r' }).catch(() => undefined);
    const point = await loadRunPoint({ dataDir, runId: 'r' });
    crash = false;
    await resumeRun(build(), { dataDir, runId: 'r' }).catch(() => undefined);
    // evil never finished: a resume must start at evil, and approve must run before publish.
    expect({ position: point.position, ran }).toEqual({ position: ['evil'], ran: ['evil', 'approve', 'publish'] });
  });

  it("a node consumes a resumed run's position so a composite's internal flow restarts (or starts elsewhere)", async () => {
    // position inside a composite: ['comp', 'second']; comp's prep (node code) receives the scope with the
    // remaining resume ['second'] and can shift it with any BaseFlow.
    let crash = true;
    const ran: string[] = [];
    class First extends BackpackNode {
      override post(): undefined {
        ran.push('first');
        return undefined;
      }
    }
    class Second extends BackpackNode {
      override post(): undefined {
        ran.push('second');
        if (crash) throw new Error('crash in second');
        return undefined;
      }
    }
    class Comp extends BackpackNode {
      protected override buildInternalFlow(inner: Flow): void {
        inner.addNode(First, { id: 'first' }).next(inner.addNode(Second, { id: 'second' }));
      }
      override prep(_bp: BackpackHandle, scope: RunScope) {
        if (!crash) {
          const f = new BaseFlow({ start: new BaseNode({ id: 'x' }) });
          void (f as unknown as { _orchestrate(s: unknown, sc: RunScope): Promise<unknown> })._orchestrate({}, scope).catch(() => undefined);
        }
        return undefined;
      }
    }
    const build = () => {
      const flow = new Flow();
      flow.addNode(Comp, { id: 'comp' });
      return flow;
    };
    const dataDir = makeTempDir('scope-bypass-', 'test');
    await runFlow(build(), { dataDir, runId: 'r2' }).catch(() => undefined);
    const point = await loadRunPoint({ dataDir, runId: 'r2' });
    expect(point.position).toEqual(['comp', 'second']);
    ran.length = 0;
    crash = false;
    await resumeRun(build(), { dataDir, runId: 'r2' }).catch(() => undefined);
    // resumed at comp.second: first must not run again
    expect(ran).toEqual(['second']);
  });
});
