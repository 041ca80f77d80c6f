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
