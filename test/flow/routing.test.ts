import { afterEach, describe, expect, it, vi } from 'vitest';
import { makeScope } from '../../src/flow/scope.js';
import { BaseFlow, BaseNode, FlowAction, FlowError, Node } from '../../src/index.js';

type Shared = { log: string[]; count?: number };

/** A node that logs its id and returns a fixed action. */
class Step extends Node<Shared> {
  constructor(id: string, private readonly action?: string) {
    super({ id });
  }
  override post(shared: Shared): string | undefined {
    shared.log.push(this.id);
    return this.action;
  }
}

afterEach(() => vi.restoreAllMocks());

describe('FlowAction', () => {
  it('has the lowercase string values of DESIGN D2', () => {
    expect({ ...FlowAction }).toEqual({
      COMPLETE: 'complete',
      ERROR: 'error',
      SUCCESS: 'success',
      FAILURE: 'failure',
      RETRY: 'retry',
      DEFAULT: 'default',
    });
  });
});

describe('BaseNode routing API', () => {
  it('on() returns the node itself and registers the route', () => {
    const a = new Step('a');
    const b = new Step('b');
    expect(a.on('go', b)).toBe(a);
    expect(a.getNextNode('go')).toBe(b);
  });

  it("next() registers 'default' and returns the successor for chaining", () => {
    const a = new Step('a');
    const b = new Step('b');
    const c = new Step('c');
    expect(a.next(b).next(c)).toBe(c);
    expect(a.getNextNode('default')).toBe(b);
    expect(b.getNextNode(FlowAction.DEFAULT)).toBe(c);
    expect(a.getNextNode('complete')).toBeUndefined();
  });

  it('getNextNode() with no action means default', () => {
    const a = new Step('a');
    const b = new Step('b');
    a.next(b);
    expect(a.getNextNode()).toBe(b);
    expect(a.getNextNode(undefined)).toBe(b);
  });

  it('convenience methods route the matching FlowAction', () => {
    const a = new Step('a');
    const targets = Object.fromEntries(['c', 'e', 's', 'f', 'r'].map((id) => [id, new Step(id)]));
    a.onComplete(targets.c!).onError(targets.e!).onSuccess(targets.s!).onFailure(targets.f!).onRetry(targets.r!);
    expect(a.getNextNode('complete')).toBe(targets.c);
    expect(a.getNextNode('error')).toBe(targets.e);
    expect(a.getNextNode('success')).toBe(targets.s);
    expect(a.getNextNode('failure')).toBe(targets.f);
    expect(a.getNextNode('retry')).toBe(targets.r);
  });

  it('successors is a read-only copy: changing it does not change routing', () => {
    const a = new Step('a');
    const b = new Step('b');
    a.on('x', b);
    const view = a.successors as Map<string, BaseNode>;
    view.delete('x');
    view.set('y', b);
    expect(a.getNextNode('x')).toBe(b);
    expect(a.getNextNode('y')).toBeUndefined();
    expect([...a.successors.keys()]).toEqual(['x']);
  });

  it('rejects an empty action or a non-node successor with a message naming the node', () => {
    const a = new Step('a');
    expect(() => a.on('', new Step('b'))).toThrow(/Node 'a': action must be a non-empty string/);
    expect(() => a.on('go', {} as BaseNode)).toThrow(/Node 'a': successor for action 'go' must be a node/);
  });
});

describe('BaseFlow orchestration', () => {
  it('runs a linear chain in order and returns the last action', async () => {
    const a = new Step('a');
    const c = new Step('c', 'finished');
    a.next(new Step('b')).next(c);
    const shared: Shared = { log: [] };
    const result = await new BaseFlow({ start: a }).run(shared);
    expect(shared.log).toEqual(['a', 'b', 'c']);
    expect(result).toBe('finished');
  });

  it('branches on the action post returns', async () => {
    class Decide extends Node<Shared> {
      override post(shared: Shared): string {
        shared.log.push('decide');
        return (shared.count ?? 0) > 5 ? 'big' : 'small';
      }
    }
    const build = () => {
      const decide = new Decide({ id: 'decide' });
      decide.on('big', new Step('big-path')).on('small', new Step('small-path'));
      return new BaseFlow({ start: decide });
    };
    const big: Shared = { log: [], count: 10 };
    const small: Shared = { log: [], count: 1 };
    await build().run(big);
    await build().run(small);
    expect(big.log).toEqual(['decide', 'big-path']);
    expect(small.log).toEqual(['decide', 'small-path']);
  });

  it('runs loops until the exit action', async () => {
    class Counter extends Node<Shared> {
      override post(shared: Shared): string {
        shared.count = (shared.count ?? 0) + 1;
        return shared.count < 4 ? 'again' : 'done';
      }
    }
    const counter = new Counter({ id: 'counter' });
    counter.on('again', counter).on('done', new Step('end'));
    const shared: Shared = { log: [] };
    await new BaseFlow({ start: counter }).run(shared);
    expect(shared.count).toBe(4);
    expect(shared.log).toEqual(['end']);
  });

  it('setEntryNode overrides the start node', async () => {
    const a = new Step('a');
    const b = new Step('b');
    const flow = new BaseFlow({ start: a }).setEntryNode(b);
    const shared: Shared = { log: [] };
    await flow.run(shared);
    expect(flow.entryNode).toBe(b);
    expect(shared.log).toEqual(['b']);
  });

  it('a flow without an entry node fails with a FlowError', async () => {
    await expect(new BaseFlow({ id: 'empty' }).run({ log: [] })).rejects.toThrow(
      new FlowError(`Flow 'empty' has no entry node: add a node or call setEntryNode(node)`),
    );
  });

  it('a node with no successors ends the flow quietly under every policy', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    for (const policy of ['end', 'warn', 'throw'] as const) {
      const shared: Shared = { log: [] };
      await expect(new BaseFlow({ start: new Step('only', 'anything'), onMissingRoute: policy }).run(shared)).resolves.toBe('anything');
      expect(shared.log).toEqual(['only']);
    }
    expect(warn).not.toHaveBeenCalled();
  });

  describe('missing route (node has routes, but not for its action)', () => {
    const build = (policy?: 'end' | 'warn' | 'throw') => {
      const a = new Step('a', 'unknown');
      a.on('known', new Step('b'));
      return new BaseFlow({ id: 'f', start: a, ...(policy ? { onMissingRoute: policy } : {}) });
    };

    it("'warn' (the default) ends the flow and warns naming the node, action and routes", async () => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
      const shared: Shared = { log: [] };
      await expect(build().run(shared)).resolves.toBe('unknown');
      expect(shared.log).toEqual(['a']);
      expect(warn).toHaveBeenCalledOnce();
      expect(warn.mock.calls[0]![0]).toContain(`node 'a' returned action 'unknown', which has no route (routes: 'known')`);
    });

    it("'end' ends the flow silently", async () => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
      const shared: Shared = { log: [] };
      await expect(build('end').run(shared)).resolves.toBe('unknown');
      expect(shared.log).toEqual(['a']);
      expect(warn).not.toHaveBeenCalled();
    });

    it("'throw' raises a FlowError", async () => {
      await expect(build('throw').run({ log: [] })).rejects.toThrow(FlowError);
      await expect(build('throw').run({ log: [] })).rejects.toThrow(/'unknown', which has no route/);
    });

    it('undefined action with only non-default routes is reported as default', async () => {
      const a = new Step('a');
      a.on('x', new Step('b'));
      await expect(new BaseFlow({ start: a, onMissingRoute: 'throw' }).run({ log: [] })).rejects.toThrow(
        /returned action 'default', which has no route \(routes: 'x'\)/,
      );
    });
  });

  it('maxSteps bounds a cycle with an error naming the last nodes visited', async () => {
    const a = new Step('a');
    const b = new Step('b');
    a.next(b);
    b.next(a);
    const error = await new BaseFlow({ id: 'loop', start: a, maxSteps: 7 }).run({ log: [] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowError);
    expect((error as Error).message).toContain(`Flow 'loop' exceeded maxSteps (7); last nodes visited: a → b → a → b → a. A route cycle does not end`);
  });

  it('maxSteps defaults to 1000', async () => {
    const a = new Step('a');
    a.next(a);
    const shared: Shared = { log: [] };
    await expect(new BaseFlow({ start: a }).run(shared)).rejects.toThrow(/maxSteps \(1000\)/);
    expect(shared.log).toHaveLength(1000);
  });

  it('rejects invalid options naming the flow', () => {
    expect(() => new BaseFlow({ id: 'f', maxSteps: 0 })).toThrow(/Flow 'f': maxSteps must be an integer >= 1; got 0/);
    expect(() => new BaseFlow({ id: 'f', onMissingRoute: 'ignore' as 'end' })).toThrow(/onMissingRoute must be one of end, warn, throw/);
  });

  it('reports each step, with the next node, to scope.onStep', async () => {
    const a = new Step('a', 'go');
    a.on('go', new Step('b'));
    const steps: unknown[] = [];
    class Observed extends BaseFlow<Shared> {
      runObserved(shared: Shared) {
        return this._orchestrate(shared, makeScope({ path: [], params: {} }, { onStep: (s) => void steps.push(s) }));
      }
    }
    await new Observed({ start: a }).runObserved({ log: [] });
    expect(steps).toEqual([
      { path: [], completed: 'a', action: 'go', next: 'b', step: 1 },
      { path: [], completed: 'b', action: 'default', next: undefined, step: 2 },
    ]);
  });

  it('stops before the next step when the signal aborts', async () => {
    const controller = new AbortController();
    class Abort extends Node<Shared> {
      override post(shared: Shared): undefined {
        shared.log.push(this.id);
        controller.abort(new Error('stopped by user'));
        return undefined;
      }
    }
    const a = new Abort({ id: 'a' });
    a.next(new Step('b'));
    class Run extends BaseFlow<Shared> {
      go(shared: Shared) {
        return this._orchestrate(shared, { path: [], params: {}, signal: controller.signal });
      }
    }
    const shared: Shared = { log: [] };
    await expect(new Run({ start: a }).go(shared)).rejects.toThrow('stopped by user');
    expect(shared.log).toEqual(['a']);
  });

  it('resumes at the node a resume position names, and refuses an unknown one', async () => {
    const a = new Step('a');
    const b = new Step('b');
    a.next(b).next(new Step('c'));
    class Resumable extends BaseFlow<Shared> {
      resumeAt(shared: Shared, resume: string[]) {
        return this._orchestrate(shared, makeScope({ path: [], params: {} }, { resume }));
      }
    }
    const shared: Shared = { log: [] };
    await new Resumable({ start: a }).resumeAt(shared, ['b']);
    expect(shared.log).toEqual(['b', 'c']);
    await expect(new Resumable({ id: 'r', start: a }).resumeAt({ log: [] }, ['zzz'])).rejects.toThrow(
      `Cannot resume flow 'r' at node 'zzz': no such node is reachable from its entry node`,
    );
  });
});
