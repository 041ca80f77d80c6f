import { describe, expect, it } from 'vitest';
import { AccessDeniedError, Backpack, BackpackError, type BackpackEvent } from '../../src/backpack/index.js';

const research = { nodeId: 'research-1', nodeName: 'ResearchNode', namespace: 'sales.research' };
const chat = { nodeId: 'chat-1', nodeName: 'ChatNode', namespace: 'sales.chat' };

describe('BackpackHandle (D6)', () => {
  it('attributes packs to its identity', () => {
    const bp = new Backpack();
    const h = bp.forNode(research);
    h.pack('facts', ['a'], { tags: ['verified'] });
    expect(bp.getItem('facts')!.metadata).toMatchObject({ sourceNodeId: 'research-1', sourceNodeName: 'ResearchNode', sourceNamespace: 'sales.research', tags: ['verified'] });
    expect(h.identity).toEqual(research);
    expect(Reflect.ownKeys(h)).toEqual([]);
  });

  it('refuses provenance that differs from its identity, naming both', () => {
    const bp = new Backpack();
    const h = bp.forNode(research);
    expect(() => h.pack('k', 1, { nodeId: 'other' } as never)).toThrow(BackpackError);
    expect(() => h.pack('k', 1, { namespace: 'admin' } as never)).toThrow(/'research-1' cannot pack 'k' as namespace 'admin'/);
    expect(() => h.pack('k', 1, { nodeName: 'Admin' } as never)).toThrow(/nodeName/);
    expect(() => h.delete('k', { nodeId: 'other' })).toThrow(BackpackError);
    expect(() => h.quarantine('k', { reason: 'r', nodeId: 'other' })).toThrow(BackpackError);
    h.pack('k', 1, { nodeId: 'research-1' } as never);
    expect(bp.has('k')).toBe(true);
  });

  it('keeps attribution correct for two handles used concurrently', async () => {
    const bp = new Backpack();
    const a = bp.forNode(research);
    const b = bp.forNode(chat);
    await Promise.all([
      (async () => {
        for (let i = 0; i < 20; i++) {
          a.pack(`a${i}`, i);
          await Promise.resolve();
        }
      })(),
      (async () => {
        for (let i = 0; i < 20; i++) {
          b.pack(`b${i}`, i);
          await Promise.resolve();
        }
      })(),
    ]);
    for (const c of bp.getHistory()) expect(c.nodeId).toBe(c.key.startsWith('a') ? 'research-1' : 'chat-1');
  });

  it('checks its own permissions on every read and write', () => {
    const bp = new Backpack({ secret: 's', open: 'o' }, { strictMode: true });
    const h = bp.registerNode({ ...chat, permissions: { read: ['open'], write: ['reply'] } }).handle;
    expect(h.unpack('open')).toBe('o');
    expect(() => h.unpack('secret')).toThrow(AccessDeniedError);
    expect(() => h.unpackRequired('secret')).toThrow(AccessDeniedError);
    expect(() => h.pack('secret', 'x')).toThrow(AccessDeniedError);
    expect(() => h.delete('open')).toThrow(AccessDeniedError);
    h.pack('reply', 'hi');
    expect(h.getItem('reply')).toBeUndefined();
    expect(bp.getItem('reply')!.metadata.sourceNodeId).toBe('chat-1');
  });

  it('deletes and quarantines as its node', () => {
    const bp = new Backpack({ a: 1, b: 2 });
    const h = bp.forNode(chat);
    expect(h.delete('a')).toBe(true);
    expect(h.quarantine('b', { reason: 'stale' })).toBe(true);
    expect(h.quarantine('missing', { reason: 'stale' })).toBe(false);
    expect(bp.getHistory().slice(-2).map((c) => [c.action, c.nodeId])).toEqual([
      ['delete', 'chat-1'],
      ['quarantine', 'chat-1'],
    ]);
    expect(bp.getQuarantined().get('b')!.quarantine.nodeId).toBe('chat-1');
  });

  it("emits events with the handle's identity, run and span, and summaries instead of values", () => {
    const events: BackpackEvent[] = [];
    const bp = new Backpack(undefined, { eventStreamer: { emit: (e) => events.push(e) } });
    const h = bp.forNode(research, { runId: 'run-1', spanId: 'span-1' });
    h.pack('doc', 'x'.repeat(1000), { tags: ['t'] });
    h.unpack('doc');
    h.unpack('missing');
    h.quarantine('doc', { reason: 'bad' });
    expect(events.map((e) => e.type)).toEqual(['backpack.packed', 'backpack.unpacked', 'backpack.unpacked', 'backpack.quarantined']);
    for (const e of events) expect(e).toMatchObject({ nodeId: 'research-1', nodeName: 'ResearchNode', namespace: 'sales.research', runId: 'run-1', spanId: 'span-1' });
    expect(events[0]!.payload).toMatchObject({ key: 'doc', version: 1, tags: ['t'] });
    expect((events[0]!.payload.valueSummary as string).length).toBeLessThanOrEqual(80);
    expect(events[1]!.payload).toEqual({ key: 'doc', found: true, sourceNodeId: 'research-1', sourceNamespace: 'sales.research' });
    expect(events[2]!.payload).toEqual({ key: 'missing', found: false });
    expect(events[3]!.payload).toEqual({ key: 'doc', reason: 'bad' });
    expect(JSON.stringify(events).length).toBeLessThan(2000);
  });

  it('emits nothing without an event sink, and the raw Backpack emits without run or span', () => {
    const events: BackpackEvent[] = [];
    const bp = new Backpack(undefined, { eventStreamer: { emit: (e) => events.push(e) } });
    bp.pack('a', 1);
    expect(events[0]).toEqual({ type: 'backpack.packed', payload: { key: 'a', version: 1, valueSummary: '1' } });
    const silent = new Backpack();
    expect(() => silent.forNode(chat).pack('a', 1)).not.toThrow();
  });

  it('validates the identity', () => {
    const bp = new Backpack();
    expect(() => bp.forNode({ nodeId: '', nodeName: 'X', namespace: 'x' })).toThrow(/non-empty nodeId/);
    expect(() => bp.forNode({ nodeId: 'x', nodeName: 'X' } as never)).toThrow(/nodeName and namespace/);
  });
});

describe('a child registered inside a run (registerChild)', () => {
  it('keeps its events in the run of the handle that registered it: another runId is refused, none gets the run', () => {
    const events: BackpackEvent[] = [];
    const bp = new Backpack(undefined, { eventStreamer: { emit: (event) => void events.push(event) } });
    const parent = bp.registerNode(research).withContext({ runId: 'run-a', spanId: 'span-parent' });
    const child = parent.registerChild({ nodeId: 'child-1', nodeName: 'Child', namespace: 'sales.research.child' });
    expect(() => child.withContext({ runId: 'run-b', spanId: 'span-parent' })).toThrow(/registered inside run 'run-a': its events cannot carry run 'run-b'/);
    child.withContext({ spanId: 'span-parent' }).pack('a', 1);
    child.withContext({ runId: 'run-a' }).pack('b', 2);
    child.handle.pack('c', 3);
    const packed = events.filter((event) => event.nodeId === 'child-1');
    expect(packed.map((event) => event.runId)).toEqual(['run-a', 'run-a', 'run-a']);
    expect(packed.map((event) => event.spanId)).toEqual(['span-parent', 'span-parent', 'span-parent']);
  });

  it("keeps its events in the span of the handle that registered it: another span (another node's) is refused (review s49a L1)", () => {
    const events: BackpackEvent[] = [];
    const bp = new Backpack(undefined, { eventStreamer: { emit: (event) => void events.push(event) } });
    const parent = bp.registerNode(research).withContext({ runId: 'run-a', spanId: 'span-parent' });
    const child = parent.registerChild({ nodeId: 'victim', nodeName: 'Victim', namespace: 'sales.research.victim' });
    expect(() => child.withContext({ spanId: 'span-of-another-node' })).toThrow(
      "Node 'victim' was registered inside span 'span-parent' (the execution that registered it): its events cannot carry span 'span-of-another-node'",
    );
    expect(events).toEqual([]);
  });

  it('outside a run, a child binding takes the context it is given', () => {
    const events: BackpackEvent[] = [];
    const bp = new Backpack(undefined, { eventStreamer: { emit: (event) => void events.push(event) } });
    const child = bp.registerNode(research).handle.registerChild({ nodeId: 'child-2', nodeName: 'Child', namespace: 'sales.research.child' });
    child.withContext({ runId: 'run-x' }).pack('k', 1);
    expect(events.filter((event) => event.nodeId === 'child-2').map((event) => event.runId)).toEqual(['run-x']);
  });
});
