/**
 * An action is a string (or undefined): what `post` returns goes into routing and into the `node.completed`,
 * `route.missing` and `run.completed` events every node may read, so anything else is refused with a FlowError naming
 * the node (review s23a H4: an object there ran its getters in the execution of a later node that read the
 * history, with that node's handle). And a node's copy of an event (getHistory, a subscriber) runs no code of
 * anything in the event, whatever reached it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, BaseFlow, BaseNode, Flow, FlowError, type BackpackHandle } from '../../src/index.js';

const LISTED = new Set(['node.completed', 'run.completed', 'route.missing', 'route.taken']);

describe('post returns an action string or undefined', () => {
  it('property: whatever post returns, the run fails with a FlowError naming the node, or every action in the events is a string', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.object(), fc.array(fc.string()), fc.integer(), fc.boolean(), fc.constant(null), fc.string({ minLength: 1 }), fc.constant(undefined), fc.constant(Symbol('s'))),
        async (returned) => {
          class N extends BackpackNode {
            override post() {
              return returned as unknown as string;
            }
          }
          class Next extends BackpackNode {}
          const flow = new Flow();
          flow.addNode(N, { id: 'n' }).on('other', flow.addNode(Next, { id: 'next' }));
          const error = await flow.run().then(() => undefined, (e: unknown) => e);
          const isAction = returned === undefined || typeof returned === 'string';
          if (isAction) expect(error).toBeUndefined();
          else {
            expect(error).toBeInstanceOf(FlowError);
            expect((error as Error).message).toMatch(/^Node 'n': post must return an action \(a string\) or undefined, got (an object|an array|a number|a boolean|null|a symbol)$/);
            // Reported as the node's failure in post, with its text only.
            expect(flow.eventStreamer.getHistory({ type: 'error' })[0]).toMatchObject({ nodeId: 'n', payload: { phase: 'post', error: { name: 'FlowError' } } });
          }
          for (const e of flow.eventStreamer.getHistory()) {
            if (LISTED.has(e.type)) expect(typeof e.payload.action).toBe('string');
          }
        },
      ),
      { numRuns: 80 },
    );
  });

  it('an object with a toString is refused too (routing by its text would run it), and the check runs none of its code', async () => {
    let touched = 0;
    class Odd extends BackpackNode {
      override post() {
        // (`then` is read by the await of post's result, in this node's own execution.)
        const get = (_t: object, key: PropertyKey) => (key === 'then' ? undefined : (touched++, () => 'default'));
        return new Proxy({}, { get, getPrototypeOf: () => (touched++, Object.prototype) }) as unknown as string;
      }
    }
    const flow = new Flow();
    flow.addNode(Odd, { id: 'odd' });
    await expect(flow.run()).rejects.toThrow(/Node 'odd': post must return an action \(a string\) or undefined, got an object/);
    expect(touched).toBe(0);
    expect(flow.eventStreamer.getHistory({ type: 'node.completed' })).toEqual([]);
  });

  it("a node cannot run its code in a later node's execution through its action (the audit's chat loop)", async () => {
    const log: string[] = [];
    class Reader extends BackpackNode {
      override permissions = { read: ['vault', 'turn'], write: ['verdict'] };
      override prep() {
        return this.eventStreamer.getHistory({ type: 'node.completed' }).length;
      }
    }
    const nodes: { reader?: BackpackNode } = {};
    class Evil extends BackpackNode {
      override permissions = { read: ['turn'] };
      override post(_bp: BackpackHandle) {
        const target = nodes.reader!;
        return {
          get detail() {
            try {
              const handle = target.backpack;
              log.push(`vault=${String(handle.unpack('vault'))}`);
              handle.pack('verdict', 'approved');
            } catch {
              // not in the reader's execution
            }
            return 'x';
          },
        } as unknown as string;
      }
    }
    const flow = new Flow({ initialData: { vault: 'TOPSECRET', turn: 1 } });
    nodes.reader = flow.addNode(Reader, { id: 'reader' });
    nodes.reader.next(flow.addNode(Evil, { id: 'evil' }));
    await expect(flow.run()).rejects.toThrow(/Node 'evil': post must return an action/);
    await expect(flow.run({ turn: 2 })).rejects.toThrow(/Node 'evil': post must return an action/);
    expect(log.join('\n')).not.toContain('TOPSECRET');
    expect(flow.backpack.getItem('verdict')).toBeUndefined();
  });

  it('the flow engine holds every step to the same rule (a plain node of a BaseFlow)', async () => {
    class Plain extends BaseNode {
      override post() {
        return ['default'] as unknown as string;
      }
    }
    const flow = new BaseFlow({ start: new Plain({ id: 'plain' }) });
    await expect(flow.run({})).rejects.toThrow(/^Node 'plain': post must return an action \(a string\) or undefined, got an array$/);
  });
});

describe("a node's copy of an event runs no code of what is in it", () => {
  /** A payload member that records every time its code runs: a getter, a toJSON, a Proxy's traps, a class method. */
  function hostile(ran: string[]) {
    class Live {
      own = 'data';
      get late() {
        ran.push('class getter');
        return 'late';
      }
      toJSON() {
        ran.push('toJSON');
        return {};
      }
    }
    return {
      getter: Object.defineProperty({}, 'x', { enumerable: true, get: () => (ran.push('getter'), 'x') }),
      proxy: new Proxy({}, { get: () => ran.push('proxy get'), getPrototypeOf: () => (ran.push('proxy proto'), Object.prototype), ownKeys: () => (ran.push('proxy keys'), []) }),
      instance: new Live(),
      fn: Object.assign(() => ran.push('fn'), { toJSON: () => ran.push('fn toJSON') }),
      list: [Object.defineProperty({}, 'y', { enumerable: true, get: () => (ran.push('nested getter'), 'y') })],
    };
  }

  it('getHistory and a subscriber copy data properties only: no getter, trap or toJSON of an event (even the owner’s) runs in the node', async () => {
    const ran: string[] = [];
    const seen: unknown[] = [];
    class Reader extends BackpackNode {
      override prep() {
        this.eventStreamer.on('node.completed', (event) => void seen.push(JSON.stringify(event)));
        for (const event of this.eventStreamer.getHistory({ type: 'node.completed' })) seen.push(JSON.stringify(event));
      }
      override post(): undefined {
        // An event the owner emits while this node runs reaches its subscriber.
        flow.eventStreamer.emit({ type: 'node.completed', namespace: 'app.reader', payload: { action: 'default', odd: hostile(ran) } });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Reader, { id: 'reader' });
    flow.eventStreamer.emit({ type: 'node.completed', namespace: 'app.other', payload: { action: 'default', odd: hostile(ran) } });
    await flow.run();
    expect(ran).toEqual([]);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    const copied = JSON.parse(seen[0] as string) as { payload: { odd: Record<string, unknown> } };
    expect(copied.payload.odd).toEqual({ getter: {}, instance: { own: 'data' }, list: [{}] });
  });

  it('a payload a node emits is copied as data: nothing of the node (a function, an object without a JSON form) is kept for others to run', async () => {
    const ran: string[] = [];
    class Part extends BackpackNode {
      override post(): undefined {
        class NoJson {
          n = 1n;
          get later() {
            ran.push('getter');
            return 1;
          }
        }
        this.eventStreamer.emit({ type: 'custom', payload: { name: 'x', fn: () => ran.push('fn'), odd: new NoJson() } });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Part, { id: 'part' });
    await flow.run();
    const [event] = flow.eventStreamer.getHistory({ type: 'custom' });
    expect(event!.payload).toStrictEqual({ name: 'x', fn: undefined, odd: { n: 1n } });
    expect(ran).toEqual([]);
  });
});
