/**
 * A node runs only as a step its flow takes. `_run` and `run` are public (PocketFlow's shape), and node code reaches
 * other nodes through `this.successors`; calling them must not run a node out of the flow's order (a `publish`
 * behind an `approve` that said no), nor a subflow, nor the node itself as a step no route took.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError } from '../../src/index.js';
import type { BaseNode } from '../../src/flow/index.js';

type Handle = Parameters<BackpackNode['post']>[0];

describe('a node cannot run other nodes (or itself) out of the flow', () => {
  it("every direct call from node code is refused, and the person's 'no' routes to revise", async () => {
    const attempts: string[] = [];
    const ran: string[] = [];
    const fakeScopes = [{ runId: 'x', path: [] }, { runId: undefined, path: ['p'] }];
    let entered = false;
    class Worker extends BackpackNode {
      override async prep(): Promise<void> {
        // Run once: before the fix, its own _run ran this prep again.
        if (entered) return;
        entered = true;
        const approve = this.successors.get('default')!;
        const publish = approve.successors.get('yes')!;
        const sub = approve.successors.get('later')! as Flow;
        const inner = sub.getNode('inner')!;
        const calls: [string, () => Promise<unknown>][] = [
          ...fakeScopes.map((scope, i): [string, () => Promise<unknown>] => [`publish._run ${i}`, () => publish._run(undefined, scope as never)]),
          ['publish.run', () => (publish as BaseNode).run(undefined)],
          ['sub._run', () => sub._run(undefined, fakeScopes[0] as never)],
          ['inner.run', () => (inner as BaseNode).run(undefined)],
          ['self._run', () => this._run(undefined, fakeScopes[0] as never)],
        ];
        for (const [name, call] of calls) {
          try {
            await call();
            attempts.push(`${name}: ran`);
          } catch (error) {
            attempts.push(`${name}: ${error instanceof FlowError ? 'refused' : String(error)}`);
          }
        }
      }
    }
    class Approve extends BackpackNode {
      override post(): string {
        return 'no';
      }
    }
    class Step extends BackpackNode {
      override post(backpack: Handle): undefined {
        ran.push(this.id);
        backpack.pack(`${this.id}-ran`, true);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'p' });
    const worker = flow.addNode(Worker, { id: 'worker' });
    const approve = flow.addNode(Approve, { id: 'approve' });
    worker.next(approve);
    approve.on('yes', flow.addNode(Step, { id: 'publish' }));
    approve.on('no', flow.addNode(Step, { id: 'revise' }));
    const sub = flow.addSubflow({ namespace: 'later' });
    sub.addNode(Step, { id: 'inner' });
    approve.on('later', sub);
    await flow.run();
    expect(attempts).toEqual(['publish._run 0: refused', 'publish._run 1: refused', 'publish.run: refused', 'sub._run: refused', 'inner.run: refused', 'self._run: refused']);
    expect(ran).toEqual(['revise']);
    expect(flow.backpack.has('publish-ran')).toBe(false);
    expect(flow.backpack.has('inner-ran')).toBe(false);
  });

  it('routes, loops, subflows and the entry still run as before', async () => {
    const ran: string[] = [];
    class Count extends BackpackNode {
      override post(backpack: Handle): string | undefined {
        const n = ((backpack.unpack('n') as number | undefined) ?? 0) + 1;
        backpack.pack('n', n);
        ran.push(`${this.id}${n}`);
        return n < 3 ? 'again' : 'done';
      }
    }
    class Step extends BackpackNode {
      override post(): undefined {
        ran.push(this.id);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'ok' });
    const count = flow.addNode(Count, { id: 'c' });
    count.on('again', count);
    const sub = flow.addSubflow({ namespace: 'tail' });
    sub.addNode(Step, { id: 'inner' });
    count.on('done', sub);
    await flow.run();
    expect(ran).toEqual(['c1', 'c2', 'c3', 'inner']);
  });
});

/**
 * The flow's own step methods are protected only in TypeScript: node code reaches them on any flow it can reach (a
 * subflow, an internal flow, one it builds itself) with `Flow.prototype.<method>.call(...)`. Each acts only within a
 * run of that flow, on its own nodes (review s23a, M3).
 */
describe("node code cannot take a flow's steps through its protected methods", () => {
  type Method = (this: unknown, ...args: unknown[]) => unknown;
  const method = (name: string): Method => (Flow.prototype as unknown as Record<string, Method>)[name]!;

  it('node code cannot run a node behind a gate by calling Flow.prototype.runStep itself', async () => {
    class Publish extends BackpackNode {
      override post(bp: Handle): undefined {
        bp.pack('published', true);
        return undefined;
      }
    }
    class Approve extends BackpackNode {
      override post(): string {
        return 'rejected';
      }
    }
    let outcome = '';
    class Evil extends BackpackNode {
      override async prep(_bp: Handle, scope: Parameters<BackpackNode['prep']>[1]): Promise<void> {
        const approve = this.successors.get('default') as BackpackNode;
        const publish = approve.successors.get('approved') as BackpackNode;
        try {
          await method('runStep').call(new Flow(), publish, undefined, scope);
          outcome = 'ran';
        } catch (e) {
          outcome = `refused: ${(e as Error).message}`;
        }
      }
    }
    const flow = new Flow();
    const evil = flow.addNode(Evil, { id: 'evil' });
    const approve = flow.addNode(Approve, { id: 'approve' });
    evil.next(approve);
    approve.on('approved', flow.addNode(Publish, { id: 'publish' }));
    await flow.run();
    expect(flow.backpack.unpack('published')).toBeUndefined();
    expect(outcome).toMatch(/^refused: Flow 'flow' cannot take a step here: not in a run of this flow/);
  });

  it('nor runStep, _orchestrate, execute, applyMappings, routeTaken, routeMissing or _run on a subflow or an internal flow it reaches, with any scope', async () => {
    const outcomes: string[] = [];
    const ran: string[] = [];
    class Step extends BackpackNode {
      override post(bp: Handle): undefined {
        ran.push(this.id);
        bp.pack(`${this.id}-ran`, true);
        return undefined;
      }
    }
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Step, { id: 'part' });
      }
    }
    class Mine extends BackpackNode {}
    class Evil extends BackpackNode {
      override async prep(_bp: Handle, scope: Parameters<BackpackNode['prep']>[1]): Promise<void> {
        const gate = this.successors.get('default')!;
        const sub = gate.successors.get('yes') as Flow;
        const composite = gate.successors.get('later') as BackpackNode;
        const inner = sub.getNode('inner')!;
        const internal = composite.internalFlow!;
        // A flow of its own, with a node of its own whose route leads to the subflow's node.
        const own = this.createNestedFlow({ namespace: 'own' });
        const mine = own.addNode(Mine, { id: 'mine' });
        const scopes = [scope, { ...scope }, { path: [], params: {} }];
        const calls: [string, () => unknown][] = [];
        for (const [i, s] of scopes.entries()) {
          calls.push(
            [`runStep sub ${i}`, () => method('runStep').call(sub, inner, undefined, s)],
            [`runStep own ${i}`, () => method('runStep').call(own, inner, undefined, s)],
            [`_orchestrate sub ${i}`, () => method('_orchestrate').call(sub, undefined, s)],
            [`_orchestrate internal ${i}`, () => method('_orchestrate').call(internal, undefined, s)],
            [`execute sub ${i}`, () => method('execute').call(sub, undefined, s)],
            [`execute internal ${i}`, () => method('execute').call(internal, undefined, s)],
            [`_run internal ${i}`, () => internal._run(undefined, s as never)],
            [`applyMappings ${i}`, () => method('applyMappings').call(sub, inner, 'x', mine, { secret: 'copied' }, undefined, s)],
            [`routeTaken ${i}`, () => method('routeTaken').call(sub, inner, 'forged', mine, s)],
            [`routeMissing ${i}`, () => method('routeMissing').call(sub, inner, 'forged', s)],
          );
        }
        calls.push(['run sub as BaseFlow', () => (Object.getPrototypeOf(Flow.prototype) as { run: Method }).run.call(sub, undefined)]);
        for (const [name, call] of calls) {
          try {
            await call();
            outcomes.push(`${name}: ran`);
          } catch (error) {
            outcomes.push(`${name}: ${error instanceof FlowError ? 'refused' : String(error)}`);
          }
        }
      }
    }
    class Gate extends BackpackNode {
      override post(): string {
        return 'no';
      }
    }
    const flow = new Flow({ namespace: 'p', initialData: { secret: 'S' } });
    const evil = flow.addNode(Evil, { id: 'evil' });
    const gate = flow.addNode(Gate, { id: 'gate' });
    evil.next(gate);
    const sub = flow.addSubflow({ namespace: 'later' });
    sub.addNode(Step, { id: 'inner' });
    gate.on('yes', sub);
    gate.on('later', flow.addNode(Composite, { id: 'composite' }));
    const forged: unknown[] = [];
    flow.eventStreamer.on('*', (e) => void (e.type.startsWith('route.') && e.payload.action === 'forged' && forged.push(e)));
    await flow.run();
    expect(outcomes.filter((o) => !o.endsWith(': refused'))).toEqual([]);
    expect(ran).toEqual([]);
    expect(flow.backpack.has('inner-ran')).toBe(false);
    expect(flow.backpack.has('part-ran')).toBe(false);
    expect(flow.backpack.has('copied')).toBe(false);
    expect(forged).toEqual([]);
  });

  it("the engine's scope reaches no node code: a class's own _run is not what its flow calls", async () => {
    const captured: unknown[] = [];
    class Leaky extends BackpackNode {
      override _run(shared: unknown, scope: Parameters<BackpackNode['_run']>[1]): Promise<string | undefined> {
        captured.push(scope);
        return super._run(shared, scope);
      }
      override post(bp: Handle): undefined {
        bp.pack('leaky-ran', true);
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Leaky, { id: 'leaky' });
    await flow.run();
    expect(flow.backpack.unpack('leaky-ran')).toBe(true);
    expect(captured).toEqual([]);
  });

  it('a route to a node of another flow is refused when the flow would take it', async () => {
    class Step extends BackpackNode {}
    const other = new Flow({ namespace: 'other' });
    const stranger = other.addNode(Step, { id: 'stranger' });
    const flow = new Flow({ namespace: 'p' });
    flow.addNode(Step, { id: 'first' }).next(stranger);
    await expect(flow.run()).rejects.toThrow(/Flow 'p' cannot run 'stranger' as a step: it was not added to this flow/);
  });
});
