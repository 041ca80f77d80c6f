/**
 * What node code hands the library is read once, before it is checked, and what is stored or shown is the checked
 * copy (review s23a H3, M2 and the same pattern elsewhere): tags, an emit's input, a history filter, an interrupt's
 * schema, a route's mappings. A getter or a Proxy that answers one thing to a check and another to a later read
 * gets nothing past the check, and none of its code runs later in another node's execution.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, InterruptAnswerError, type BackpackHandle } from '../../src/index.js';

/** An array that reads as ['ok'] to the first read of its element and as [payload] afterwards. */
function twoFacedTags(payload: object): string[] {
  let reads = 0;
  return new Proxy(['ok'], {
    get(target, prop, receiver) {
      if (prop === '0') return reads++ === 0 ? 'ok' : payload;
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

describe('tags', () => {
  it("a node's tag cannot run its code inside another node's execution and act through that node's handle (s23a H3)", async () => {
    const log: string[] = [];
    class Victim extends BackpackNode {
      override permissions = { read: ['report', 'vault'], write: ['verdict'] };
      override prep(bp: BackpackHandle) {
        const item = bp.getItem('report');
        return item?.metadata.tags.some((t) => String(t).startsWith('mapped-from:'));
      }
    }
    class Evil extends BackpackNode {
      override permissions = { read: ['public'], write: ['report'] };
      override post(bp: BackpackHandle): undefined {
        const victim = this.successors.get('default') as BackpackNode;
        const hook = {
          toString() {
            try {
              const handle = victim.backpack;
              log.push(`vault=${String(handle.unpack('vault'))}`);
              handle.pack('verdict', 'approved-by-victim');
            } catch (e) {
              log.push(`refused: ${(e as Error).message}`);
            }
            return 'x';
          },
        };
        bp.pack('report', 'r', { tags: twoFacedTags(hook) });
        return undefined;
      }
    }
    const flow = new Flow({ initialData: { vault: 'TOPSECRET', public: 'p' } });
    flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Victim, { id: 'victim' }));
    await flow.run();
    expect(log).toEqual([]);
    expect(flow.backpack.getItem('report')!.metadata.tags).toEqual(['ok']);
    expect(flow.backpack.getItem('verdict')).toBeUndefined();
  });
});

describe('emit', () => {
  it("a node cannot emit an event in another node's namespace through a getter (s23a M2)", async () => {
    class Approver extends BackpackNode {}
    let reads = 0;
    class Evil extends BackpackNode {
      override post(): undefined {
        this.eventStreamer.emit({
          type: 'tool.result',
          payload: { tool: 'approve', result: 'approved' },
          get namespace() {
            return ++reads <= 1 ? 'app.evil' : 'app.approver';
          },
        });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Approver, { id: 'approver' }));
    await flow.run();
    expect(reads).toBe(1);
    expect(flow.eventStreamer.getHistory({ type: 'tool.result' }).map((e) => e.namespace)).toEqual(['app.evil']);
  });

  it('reads type, namespace and payload once each; a namespace that is not a string is refused', async () => {
    const reads: string[] = [];
    const problems: string[] = [];
    class Emitter extends BackpackNode {
      override post(): undefined {
        const input = {} as Parameters<BackpackNode['eventStreamer']['emit']>[0];
        for (const [name, first, later] of [['type', 'custom', 'node.completed'], ['namespace', 'app.e.inner', 'app.other'], ['payload', { n: 1 }, undefined]] as const) {
          let n = 0;
          Object.defineProperty(input, name, { enumerable: true, get: () => (reads.push(name), n++ === 0 ? first : later) });
        }
        this.eventStreamer.emit(input);
        try {
          this.eventStreamer.emit({ type: 'custom', namespace: { toString: () => 'app.e' } as unknown as string, payload: {} });
        } catch (error) {
          problems.push((error as Error).message);
        }
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Emitter, { id: 'e' });
    await flow.run();
    expect(reads.sort()).toEqual(['namespace', 'payload', 'type']);
    expect(flow.eventStreamer.getHistory({ type: 'custom' }).map((e) => [e.namespace, e.payload])).toEqual([['app.e.inner', { n: 1 }]]);
    expect(problems).toEqual(["Node 'e' in namespace 'app.e' cannot emit events for namespace 'object'"]);
  });

  it('getHistory reads its filter once: the namespace pattern checked is the one used', async () => {
    let reads = 0;
    let got: unknown;
    class Reader extends BackpackNode {
      override prep() {
        got = this.eventStreamer.getHistory({
          get namespace() {
            reads++;
            return 'app.**';
          },
        });
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Reader, { id: 'r' });
    await flow.run();
    expect(reads).toBe(1);
    expect(Array.isArray(got)).toBe(true);
  });
});

describe('interrupt', () => {
  it("reads its schema once: the answer is checked against the schema recorded for the person", async () => {
    let reads = 0;
    class Ask extends BackpackNode {
      override async post(bp: BackpackHandle): Promise<undefined> {
        const options = {
          get schema() {
            reads++;
            // The schema the person is shown is strict; a second read would check the answer against anything.
            return reads === 1 ? z.object({ approved: z.boolean() }) : z.any();
          },
        };
        bp.pack('answer', await this.interrupt('approve?', options));
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'doc' });
    flow.addNode(Ask, { id: 'ask' });
    const error = await flow.run(undefined, { answers: new Map([['doc.ask', [{ approved: 'yes' }]]]) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InterruptAnswerError);
    expect(reads).toBe(1);
    expect(flow.backpack.has('answer')).toBe(false);
  });
});

describe('route mappings', () => {
  it('are copied once, then checked: a getter cannot pass the check with a key and keep an object (shown in route.taken)', async () => {
    class A extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('results', 1);
        return undefined;
      }
    }
    class B extends BackpackNode {}
    const flow = new Flow();
    const a = flow.addNode(A, { id: 'a' });
    let reads = 0;
    const mappings = Object.defineProperty({}, 'results', {
      enumerable: true,
      get: () => (++reads === 1 ? 'documents' : { toString: () => 'documents' }),
    }) as Record<string, string>;
    a.on('default', flow.addNode(B, { id: 'b' }), { mappings });
    expect(reads).toBe(1);
    expect(a.getRouteMappings('default')).toEqual({ results: 'documents' });
    await flow.run();
    expect(flow.eventStreamer.getHistory({ type: 'route.taken' })[0]!.payload).toEqual({ action: 'default', from: 'a', to: 'b', mappings: { results: 'documents' } });
    expect(flow.backpack.peek('documents')).toBe(1);
  });
});
