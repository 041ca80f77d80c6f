import { describe, expect, it } from 'vitest';
import { makeScope } from '../../src/flow/scope.js';
import {
  BaseFlow,
  BatchFlow,
  BatchNode,
  Node,
  NodeExecutionError,
  ParallelBatchFlow,
  ParallelBatchNode,
  type Attempt,
  type RunScope,
} from '../../src/index.js';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('Node lifecycle', () => {
  it('passes prep result to exec and both to post, with shared state to prep and post', async () => {
    const calls: unknown[] = [];
    class Double extends Node<{ n: number; out?: number }, number, number> {
      override prep(shared: { n: number }) {
        calls.push(['prep', shared.n]);
        return shared.n;
      }
      override exec(n: number) {
        calls.push(['exec', n]);
        return n * 2;
      }
      override post(shared: { out?: number }, prepRes: number, execRes: number) {
        calls.push(['post', prepRes, execRes]);
        shared.out = execRes;
        return 'done';
      }
    }
    const shared = { n: 21 } as { n: number; out?: number };
    await expect(new Double().run(shared)).resolves.toBe('done');
    expect(shared.out).toBe(42);
    expect(calls).toEqual([['prep', 21], ['exec', 21], ['post', 21, 42]]);
  });

  it('a node run alone does not follow its successors', async () => {
    const log: string[] = [];
    class Log extends Node<string[]> {
      override post(l: string[]) {
        l.push(this.id);
        return undefined;
      }
    }
    const a = new Log({ id: 'a' });
    a.next(new Log({ id: 'b' }));
    await a.run(log);
    expect(log).toEqual(['a']);
  });

  it('gives a default id from the class name, and keeps an explicit one', () => {
    class Fetch extends Node {}
    expect(new Fetch().id).toMatch(/^Fetch#\d+$/);
    expect(new Fetch({ id: 'fetch-1' }).id).toBe('fetch-1');
  });
});

describe('Node retries', () => {
  class Flaky extends Node<unknown, string, string> {
    attempts: Attempt[] = [];
    constructor(private readonly failures: number, options: ConstructorParameters<typeof Node>[0] = {}) {
      super(options);
    }
    override exec(_p: string, attempt: Attempt): string {
      this.attempts.push(attempt);
      if (attempt.attempt <= this.failures) throw new Error(`boom ${attempt.attempt}`);
      return `ok on ${attempt.attempt}`;
    }
    override post(_s: unknown, _p: string, e: string) {
      return e;
    }
  }

  it('maxRetries is the total number of attempts and exec sees the current attempt', async () => {
    const node = new Flaky(2, { maxRetries: 3 });
    await expect(node.run({})).resolves.toBe('ok on 3');
    expect(node.attempts).toEqual([
      { attempt: 1, maxAttempts: 3 },
      { attempt: 2, maxAttempts: 3 },
      { attempt: 3, maxAttempts: 3 },
    ]);
  });

  it('defaults to a single attempt', async () => {
    const node = new Flaky(1);
    await expect(node.run({})).rejects.toThrow(NodeExecutionError);
    expect(node.attempts).toHaveLength(1);
  });

  it('after the last failure throws a NodeExecutionError naming node and attempt, keeping the cause', async () => {
    const error = await new Flaky(5, { id: 'flaky', maxRetries: 2 }).run({}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeExecutionError);
    const e = error as NodeExecutionError;
    expect(e.message).toBe(`Node 'flaky' failed on attempt 2 of 2: boom 2`);
    expect(e.nodeId).toBe('flaky');
    expect(e.attempt).toBe(2);
    expect((e.cause as Error).message).toBe('boom 2');
  });

  it('execFallback replaces the result after the last failure', async () => {
    class WithFallback extends Flaky {
      override execFallback(prepRes: string, error: unknown) {
        return `fallback after ${(error as Error).message}`;
      }
    }
    await expect(new WithFallback(9, { maxRetries: 2 }).run({})).resolves.toBe('fallback after boom 2');
  });

  it('waits retryDelayMs between attempts', async () => {
    const times: number[] = [];
    class Timed extends Node {
      override exec(_p: unknown, attempt: Attempt) {
        times.push(performance.now());
        if (attempt.attempt < 3) throw new Error('again');
        return 'ok';
      }
    }
    await new Timed({ maxRetries: 3, retryDelayMs: 20 }).run({});
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(15);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(15);
  });

  it('rejects invalid retry options naming the node', () => {
    expect(() => new Node({ id: 'n', maxRetries: 0 })).toThrow(/Node 'n': maxRetries is the total number of attempts/);
    expect(() => new Node({ id: 'n', maxRetries: 1.5 })).toThrow(RangeError);
    expect(() => new Node({ id: 'n', retryDelayMs: -1 })).toThrow(/retryDelayMs must be a number >= 0/);
  });

  it('reports each failed attempt that will be retried to onAttemptFailed', async () => {
    const reported: Array<[string, number, number]> = [];
    class Reporting extends Flaky {
      protected override onAttemptFailed(error: unknown, attempt: Attempt, delayMs: number, _scope: RunScope) {
        reported.push([(error as Error).message, attempt.attempt, delayMs]);
      }
    }
    await new Reporting(2, { maxRetries: 3 }).run({});
    expect(reported).toEqual([['boom 1', 1, 0], ['boom 2', 2, 0]]);
  });
});

describe('BatchNode', () => {
  it('runs exec once per item in order and hands post the results in order', async () => {
    const seen: number[] = [];
    class Square extends BatchNode<{ items: number[]; out?: number[] }, number, number> {
      override prep(shared: { items: number[] }) {
        return shared.items;
      }
      override async exec(item: number) {
        await new Promise((r) => setTimeout(r, (5 - item) * 2));
        seen.push(item);
        return item * item;
      }
      override post(shared: { out?: number[] }, _items: number[], results: number[]) {
        shared.out = results;
        return undefined;
      }
    }
    const shared = { items: [1, 2, 3, 4] } as { items: number[]; out?: number[] };
    await new Square().run(shared);
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(shared.out).toEqual([1, 4, 9, 16]);
  });

  it('retries each item separately', async () => {
    const attempts = new Map<string, number[]>();
    class Items extends BatchNode<unknown, string, string> {
      override prep() {
        return ['a', 'b'];
      }
      override exec(item: string, attempt: Attempt) {
        attempts.set(item, [...(attempts.get(item) ?? []), attempt.attempt]);
        if (item === 'b' && attempt.attempt === 1) throw new Error('first try fails');
        return item.toUpperCase();
      }
      override post(_s: unknown, _i: string[], results: string[]) {
        return results.join('');
      }
    }
    await expect(new Items({ maxRetries: 2 }).run({})).resolves.toBe('AB');
    expect(Object.fromEntries(attempts)).toEqual({ a: [1], b: [1, 2] });
  });

  it('rejects a prep that does not return an array', async () => {
    class Bad extends BatchNode {
      override prep() {
        return 'nope' as unknown as unknown[];
      }
    }
    await expect(new Bad({ id: 'bad' }).run({})).rejects.toThrow(`Batch node 'bad': prep must return an array of items, got string`);
  });

  it('execFallback applies per item', async () => {
    class Fallback extends BatchNode<unknown, number, number> {
      override prep() {
        return [1, 2, 3];
      }
      override exec(item: number) {
        if (item === 2) throw new Error('two');
        return item;
      }
      override execFallback() {
        return -1;
      }
      override post(_s: unknown, _i: number[], r: number[]) {
        return r.join(',');
      }
    }
    await expect(new Fallback().run({})).resolves.toBe('1,-1,3');
  });
});

describe('ParallelBatchNode', () => {
  class Tracked extends ParallelBatchNode<unknown, number, number> {
    inFlight = 0;
    maxInFlight = 0;
    override prep() {
      return [5, 1, 4, 2, 3, 6];
    }
    override async exec(item: number) {
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      await new Promise((r) => setTimeout(r, item * 2));
      this.inFlight--;
      return item * 10;
    }
    override post(_s: unknown, _i: number[], results: number[]) {
      return results.join(',');
    }
  }

  it('runs items concurrently and keeps results in input order', async () => {
    const node = new Tracked();
    await expect(node.run({})).resolves.toBe('50,10,40,20,30,60');
    expect(node.maxInFlight).toBe(6);
  });

  it('never has more than `concurrency` items in flight', async () => {
    const node = new Tracked({ concurrency: 2 });
    await expect(node.run({})).resolves.toBe('50,10,40,20,30,60');
    expect(node.maxInFlight).toBe(2);
  });

  it('keeps a separate attempt counter per item', async () => {
    const attempts: Record<string, number[]> = {};
    class PerItem extends ParallelBatchNode<unknown, string, string> {
      override prep() {
        return ['x', 'y', 'z'];
      }
      override async exec(item: string, attempt: Attempt) {
        (attempts[item] ??= []).push(attempt.attempt);
        await tick();
        if (item !== 'y' && attempt.attempt < 3) throw new Error(`${item} fails`);
        return `${item}${attempt.attempt}`;
      }
      override post(_s: unknown, _i: string[], r: string[]) {
        return r.join(' ');
      }
    }
    await expect(new PerItem({ maxRetries: 3 }).run({})).resolves.toBe('x3 y1 z3');
    expect(attempts).toEqual({ x: [1, 2, 3], y: [1], z: [1, 2, 3] });
  });

  it('rejects an invalid concurrency', () => {
    expect(() => new Tracked({ id: 'p', concurrency: 0 })).toThrow(/Node 'p': concurrency must be a positive integer, got 0/);
  });

  it('fails when an item fails after its attempts', async () => {
    class Failing extends ParallelBatchNode<unknown, number, number> {
      override prep() {
        return [1, 2];
      }
      override exec(item: number) {
        if (item === 2) throw new Error('item 2 broke');
        return item;
      }
    }
    await expect(new Failing({ id: 'pf' }).run({})).rejects.toThrow(`Node 'pf' failed on attempt 1 of 1: item 2 broke`);
  });
});

describe('nested flows', () => {
  type S = { log: string[] };
  class Log extends Node<S> {
    constructor(id: string, private readonly action?: string) {
      super({ id });
    }
    override post(s: S) {
      s.log.push(this.id);
      return this.action;
    }
  }

  it('a flow is a node: it runs inside another flow and its last action routes the outer flow', async () => {
    const innerEnd = new Log('inner-b', 'inner-done');
    const inner = new BaseFlow<S>({ id: 'inner', start: new Log('inner-a') });
    inner.entryNode!.next(innerEnd);
    const start = new Log('outer-a');
    start.next(inner).on('inner-done', new Log('outer-after'));
    const s: S = { log: [] };
    await new BaseFlow<S>({ start }).run(s);
    expect(s.log).toEqual(['outer-a', 'inner-a', 'inner-b', 'outer-after']);
  });

  it("nested nodes see the enclosing flow's id in scope.path", async () => {
    const paths: string[][] = [];
    class Where extends Node<S> {
      override prep(_s: S, scope: RunScope) {
        paths.push([...scope.path]);
      }
    }
    const inner = new BaseFlow<S>({ id: 'inner', start: new Where({ id: 'deep' }) });
    const outerStart = new Where({ id: 'top' });
    outerStart.next(inner);
    await new BaseFlow<S>({ id: 'outer', start: outerStart }).run({ log: [] });
    expect(paths).toEqual([[], ['inner']]);
  });

  it('resumes inside a nested flow from a position stack', async () => {
    const inner = new BaseFlow<S>({ id: 'inner', start: new Log('i1') });
    inner.entryNode!.next(new Log('i2')).next(new Log('i3'));
    const o1 = new Log('o1');
    o1.next(inner).next(new Log('o2'));
    class Resumable extends BaseFlow<S> {
      resumeAt(s: S, resume: string[]) {
        return this._orchestrate(s, makeScope({ path: [], params: {} }, { resume }));
      }
    }
    const s: S = { log: [] };
    await new Resumable({ start: o1 }).resumeAt(s, ['inner', 'i2']);
    expect(s.log).toEqual(['i2', 'i3', 'o2']);
  });
});

describe('BatchFlow and ParallelBatchFlow', () => {
  type S = { seen: string[] };
  class RecordFile extends Node<S> {
    override prep(_s: S, scope: RunScope) {
      return scope.params;
    }
    override async exec(params: { file?: string }) {
      await tick();
      return params.file;
    }
    override post(s: S, _p: unknown, file: string) {
      s.seen.push(`${this.id}:${file}`);
      return undefined;
    }
  }
  const files = [{ file: 'a.txt' }, { file: 'b.txt' }, { file: 'c.txt' }];

  it('BatchFlow runs the flow once per params object, in order', async () => {
    class PerFile extends BatchFlow<S> {
      override prep() {
        return files;
      }
    }
    const first = new RecordFile({ id: 'read' });
    first.next(new RecordFile({ id: 'write' }));
    const s: S = { seen: [] };
    await new PerFile({ start: first }).run(s);
    expect(s.seen).toEqual(['read:a.txt', 'write:a.txt', 'read:b.txt', 'write:b.txt', 'read:c.txt', 'write:c.txt']);
  });

  it('ParallelBatchFlow runs them concurrently, up to its concurrency', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    class Slow extends Node<S> {
      override prep(_s: S, scope: RunScope) {
        return scope.params.file;
      }
      override async exec(file: string) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 10));
        inFlight--;
        return file;
      }
      override post(s: S, _p: unknown, file: string) {
        s.seen.push(file);
        return undefined;
      }
    }
    class PerFile extends ParallelBatchFlow<S> {
      override prep() {
        return [...files, { file: 'd.txt' }];
      }
    }
    const s: S = { seen: [] };
    await new PerFile({ start: new Slow({ id: 'slow' }), concurrency: 2 }).run(s);
    expect([...s.seen].sort()).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt']);
    expect(maxInFlight).toBe(2);
  });

  it('batch params merge over the enclosing params', async () => {
    const params: unknown[] = [];
    class Capture extends Node<S> {
      override prep(_s: S, scope: RunScope) {
        params.push(scope.params);
      }
    }
    class Inner extends BatchFlow<S> {
      override prep() {
        return [{ page: 1 }, { page: 2 }];
      }
    }
    class Outer extends BatchFlow<S> {
      override prep() {
        return [{ file: 'a' }];
      }
    }
    const inner = new Inner({ id: 'pages', start: new Capture({ id: 'cap' }) });
    await new Outer({ start: inner }).run({ seen: [] });
    expect(params).toEqual([{ file: 'a', page: 1 }, { file: 'a', page: 2 }]);
  });

  it('rejects a prep that is not a list of objects', async () => {
    class Bad extends BatchFlow<S> {
      override prep() {
        return [1, 2] as unknown as Record<string, unknown>[];
      }
    }
    await expect(new Bad({ id: 'bad', start: new RecordFile() }).run({ seen: [] })).rejects.toThrow(
      `Batch flow 'bad': prep must return an array of parameter objects`,
    );
  });
});

describe('node reuse (DESIGN D3)', () => {
  it('one node instance running in two concurrent flow runs keeps their data apart', async () => {
    type S = { name: string; steps: string[]; attempts: number[] };
    class Work extends Node<S, string, string> {
      override prep(s: S) {
        return s.name;
      }
      override async exec(name: string, attempt: Attempt) {
        await new Promise((r) => setTimeout(r, name === 'slow' ? 15 : 1));
        if (name === 'slow' && attempt.attempt === 1) throw new Error('retry me');
        return `${name}@${attempt.attempt}`;
      }
      override post(s: S, _p: string, e: string) {
        s.steps.push(e);
        return undefined;
      }
    }
    const shared = new Work({ id: 'work', maxRetries: 2 });
    const flow = new BaseFlow<S>({ start: shared });
    const slow: S = { name: 'slow', steps: [], attempts: [] };
    const fast: S = { name: 'fast', steps: [], attempts: [] };
    await Promise.all([flow.run(slow), flow.run(fast), flow.run(fast)]);
    expect(slow.steps).toEqual(['slow@2']);
    expect(fast.steps).toEqual(['fast@1', 'fast@1']);
  });
});
