/**
 * A node's thrown error passes up through the executions of the nodes it runs inside (a composite's retry, its
 * fallback, its `error` event, its internal flow's `run.error`). There the library reads it as data only: no getter,
 * Proxy trap or `toString` of the error runs, so code of the part never runs as the composite, with the composite's
 * handle and rights (review s23a, LOW "node errors are read in the enclosing execution"). A Proxy thrown by a node
 * becomes a FlowError naming it.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, describeError, Flow, FlowError, type BackpackHandle } from '../../src/index.js';

/**
 * A composite that may read `vault`, running one part that may not; `thrown` makes what the part throws from `phase`
 * (from exec, the part's own retry wraps it in a NodeExecutionError; from post, it passes up as it is).
 */
function build(thrown: (composite: () => BackpackNode) => unknown, maxRetries = 1, phase: 'exec' | 'post' = 'exec') {
  const nodes: { composite?: BackpackNode } = {};
  class Part extends BackpackNode {
    override permissions = { read: ['public'], write: ['out'] };
    override exec() {
      if (phase === 'exec') throw thrown(() => nodes.composite!);
    }
    override post(): undefined {
      if (phase === 'post') throw thrown(() => nodes.composite!);
      return undefined;
    }
  }
  class Composite extends BackpackNode {
    override permissions = { read: ['vault', 'public'], write: ['out', 'verdict'] };
    protected override buildInternalFlow(flow: Flow) {
      flow.addNode(Part, { id: 'part' });
    }
  }
  const flow = new Flow({ namespace: 'app', initialData: { vault: 'TOPSECRET', public: 'p' } });
  nodes.composite = flow.addNode(Composite, { id: 'c', maxRetries, retryDelayMs: 1 });
  return flow;
}

/** What the part's code does if it ever runs inside the composite's execution: read the vault, pack as the composite. */
function actAsComposite(composite: () => BackpackNode, log: string[]): void {
  try {
    const handle: BackpackHandle = composite().backpack;
    log.push(`vault=${String(handle.unpack('vault'))}`);
    handle.pack('verdict', 'approved');
  } catch {
    // Not inside the composite's execution: nothing to take.
  }
}

describe("a part's error is read as data in the composite's execution", () => {
  for (const retries of [1, 2]) {
    it(`getters of name, message and cause never run as the composite (maxRetries ${retries})`, async () => {
      const log: string[] = [];
      const flow = build((composite) => {
        const error = new Error('plain text');
        for (const key of ['name', 'message', 'cause']) {
          Object.defineProperty(error, key, {
            configurable: true,
            get() {
              actAsComposite(composite, log);
              return key === 'cause' ? undefined : 'x';
            },
          });
        }
        return error;
      }, retries, 'post');
      await expect(flow.run()).rejects.toThrow();
      expect(log).toEqual([]);
      expect(flow.backpack.getItem('verdict')).toBeUndefined();
      // Described without its getters: the name and message that are data, or 'Error' and ''.
      for (const event of flow.eventStreamer.getHistory({ type: 'error' })) expect(event.payload.error).toMatchObject({ name: expect.any(String), message: expect.any(String) });
    });
  }

  it('a thrown object with a toString, or a getter on its prototype, does not run as the composite', async () => {
    const log: string[] = [];
    const flow = build((composite) => ({
      toString() {
        actAsComposite(composite, log);
        return 'thrown object';
      },
    }), 1, 'post');
    await expect(flow.run()).rejects.toBeDefined();
    const flow2 = build((composite) => {
      class Sneaky extends Error {
        override get message(): string {
          actAsComposite(composite, log);
          return 'sneaky';
        }
      }
      return new Sneaky();
    }, 1, 'post');
    await expect(flow2.run()).rejects.toBeInstanceOf(Error);
    expect(log).toEqual([]);
    expect(flow.backpack.getItem('verdict')).toBeUndefined();
    expect(flow2.backpack.getItem('verdict')).toBeUndefined();
  });

  it('a thrown Proxy becomes a FlowError naming the node (from post), or stays the cause of its exec failure: no trap runs as the composite', async () => {
    const log: string[] = [];
    const proxy = (composite: () => BackpackNode) => {
      const trap = () => (actAsComposite(composite, log), undefined);
      return new Proxy(new Error('p'), { get: trap, getPrototypeOf: () => (actAsComposite(composite, log), Error.prototype), has: () => false });
    };
    const fromPost = build(proxy, 1, 'post');
    const error = await fromPost.run().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/^Node 'c' failed on attempt 1 of 1: Node 'part' \(app\.c\.part\) threw a Proxy/);
    const [partError] = fromPost.eventStreamer.getHistory({ type: 'error' });
    expect(partError).toMatchObject({ nodeId: 'part', payload: { phase: 'post', error: { name: 'FlowError' } } });
    for (const retries of [1, 2]) {
      const fromExec = build(proxy, retries, 'exec');
      await expect(fromExec.run()).rejects.toThrow(/^Node 'c' failed on attempt \d of \d: Node 'part' failed on attempt 1 of 1: \[object Object\]$/);
      expect(fromExec.backpack.getItem('verdict')).toBeUndefined();
    }
    expect(log).toEqual([]);
    expect(fromPost.backpack.getItem('verdict')).toBeUndefined();
  });

  it('describeError keeps the text of ordinary errors, DOMExceptions and thrown primitives', () => {
    expect(describeError(new TypeError('bad'))).toEqual({ name: 'TypeError', message: 'bad' });
    expect(describeError(new FlowError('flow'))).toEqual({ name: 'FlowError', message: 'flow' });
    expect(describeError(new DOMException('stopped', 'AbortError'))).toEqual({ name: 'AbortError', message: 'stopped' });
    expect(describeError('text')).toEqual({ name: 'Error', message: 'text' });
    expect(describeError(42)).toEqual({ name: 'Error', message: '42' });
    expect(describeError({ message: 'an object' })).toEqual({ name: 'Error', message: 'an object' });
    expect(describeError({})).toEqual({ name: 'Error', message: '[object Object]' });
  });
});
