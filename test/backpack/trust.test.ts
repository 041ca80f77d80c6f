/**
 * Issue 12's leaks, one test each: what node code could reach before, and must not reach now.
 */
import { describe, expect, it } from 'vitest';
import { AccessDeniedError, Backpack, BackpackError, BackpackHandle, KeyNotFoundError, matchesNamespace } from '../../src/backpack/index.js';
import { EventStreamer } from '../../src/events/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';

const SECRET = 'sk-the-owners-secret-value';

/** Every value reachable from `roots` through own and inherited properties (getters called), to `depth` levels. */
function reachable(roots: unknown[], depth = 3): unknown[] {
  const seen = new Set<unknown>();
  let frontier = roots;
  for (let d = 0; d <= depth; d++) {
    const next: unknown[] = [];
    for (const value of frontier) {
      if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) continue;
      seen.add(value);
      for (let o: object | null = value as object; o && o !== Object.prototype && o !== Function.prototype; o = Object.getPrototypeOf(o)) {
        for (const key of Reflect.ownKeys(o)) {
          if (key === 'constructor' || key === 'caller' || key === 'callee' || key === 'arguments') continue;
          try {
            next.push(Reflect.get(o, key, value));
          } catch {
            // A getter that refuses (node.backpack outside its execution, an internal flow's backpack) reveals nothing.
          }
        }
      }
    }
    frontier = next;
  }
  return [...seen];
}

describe('trust: node code reaches state only through its handle (issue 12)', () => {
  it('leak 1: no owner Backpack, EventStreamer or denied value is reachable from a node, its handle, flow view or event view', async () => {
    const found: unknown[] = [];
    class Prober extends BackpackNode {
      override readonly permissions = { read: ['public'], write: ['out'] };
      override prep(backpack: BackpackHandle) {
        found.push(...reachable([backpack, this, this.flow, this.eventStreamer]));
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'agent' });
    flow.addNode(Prober, { id: 'prober' });
    await flow.run({ secret: SECRET, public: 'hello' });
    expect(found.length).toBeGreaterThan(10);
    expect(found.some((v) => v instanceof Backpack)).toBe(false);
    expect(found.some((v) => v instanceof EventStreamer)).toBe(false);
    expect(found.some((v) => v instanceof Flow)).toBe(false);
    expect(JSON.stringify(found.filter((v) => typeof v === 'string'))).not.toContain(SECRET);
  });

  it('leak 2: the event history a node reads carries nothing of a key it may not read', async () => {
    let seen: unknown[] = [];
    let live: unknown[] = [];
    class Writer extends BackpackNode {
      override post(backpack: BackpackHandle) {
        backpack.pack('apiToken', SECRET);
        backpack.pack('note', 'fine');
        return undefined;
      }
    }
    class Reader extends BackpackNode {
      override readonly permissions = { read: ['note'] };
      override prep(backpack: BackpackHandle) {
        this.eventStreamer.on('*', (e) => void live.push(e));
        backpack.unpack('apiToken');
        backpack.unpack('note');
        seen = this.eventStreamer.getHistory();
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'agent' });
    flow.addNode(Writer, { id: 'writer' }).next(flow.addNode(Reader, { id: 'reader' }));
    live = [];
    await flow.run();
    expect(seen.length).toBeGreaterThan(3);
    for (const events of [seen, live] as { type: string; nodeId?: string }[][]) {
      const text = JSON.stringify(events);
      expect(text).not.toContain(SECRET);
      // Only the reader's own denial names the key (the key it asked for); nothing from the writer does.
      const naming = events.filter((e) => JSON.stringify(e).includes('apiToken'));
      expect(naming.map((e) => [e.type, e.nodeId])).toEqual([['access.denied', 'reader']]);
    }
    // The owner's stream still has everything.
    expect(JSON.stringify(flow.eventStreamer.getHistory())).toContain('apiToken');
  });

  it('leak 3: provenance is the registered identity, never an option', () => {
    const bp = new Backpack();
    const h = bp.forNode({ nodeId: 'worker', nodeName: 'Worker', namespace: 'agent.worker' });
    expect(() => h.pack('k', 1, { nodeId: 'owner', namespace: 'agent.owner' } as never)).toThrow(/cannot pack 'k' as nodeId 'owner'/);
    bp.registerNode({ nodeId: 'attacker', nodeName: 'Attacker', namespace: 'untrusted.attacker', permissions: { namespaceWrite: ['trusted.**'] } });
    expect(() => bp.pack('k', 1, { nodeId: 'attacker', namespace: 'trusted.node' })).toThrow(
      /'attacker' is registered with namespace 'untrusted\.attacker', not 'trusted\.node'/,
    );
    expect(() => bp.pack('k', 1, { nodeId: 'attacker' })).toThrow(/namespaceWrite: \[trusted\.\*\*\] \(namespace 'untrusted\.attacker'\)/);
    expect(bp.has('k')).toBe(false);
  });

  it('leak 4: unpackByNamespace and every read that takes a node apply its permissions', () => {
    const bp = new Backpack();
    bp.pack('secret', SECRET, { nodeId: 'w', namespace: 'sales.w' });
    bp.pack('open', 'o', { nodeId: 'w' });
    bp.registerNode({ nodeId: 'r', nodeName: 'R', namespace: 'sales.r', permissions: { read: ['open'] } });
    expect(bp.unpackByNamespace('sales.*', 'r')).toEqual({ open: 'o' });
    expect(bp.getItemsByNamespace('sales.*', 'r').map((i) => i.key)).toEqual(['open']);
    expect(bp.toObject('r')).toEqual({ open: 'o' });
    expect(bp.keys('r')).toEqual(['open']);
    expect(bp.peek('secret', 'r')).toBeUndefined();
    expect(bp.getItem('secret', 'r')).toBeUndefined();
    const head = bp.getHistory().at(-1)!.commitId;
    expect(bp.getSnapshotAtCommit(head, { nodeId: 'r' }).keys()).toEqual(['open']);
    expect(JSON.stringify(bp.getHistory({ nodeId: 'r' }))).not.toContain(SECRET);
    expect(JSON.stringify(bp.toJSON({ nodeId: 'r' }))).not.toContain(SECRET);
    expect(JSON.stringify(bp.exportState(undefined, { nodeId: 'r' }))).not.toContain(SECRET);
    expect(bp.diff(new Backpack(), bp, { nodeId: 'r' }).added).toEqual(['open']);
  });

  it('leak 5: * is exactly one non-empty segment, and keys and namespaces with empty segments are refused', () => {
    expect(matchesNamespace('sales.*', 'sales.')).toBe(false);
    expect(matchesNamespace('sales.*', 'sales.chat')).toBe(true);
    expect(matchesNamespace('sales.**', 'sales')).toBe(true);
    const bp = new Backpack();
    for (const key of ['sales.', 'a..b', '.x']) expect(() => bp.pack(key, 1)).toThrow(new RegExp(`Backpack key '${key.replace(/\./g, '\\.')}' has an empty segment`));
    expect(() => bp.registerNode({ nodeId: 'n', nodeName: 'N', namespace: 'a..b' })).toThrow(/Namespace of node 'n' 'a\.\.b' has an empty segment/);
  });

  it('leak 6: item rules match the reader\'s full namespace, not a bare node id', () => {
    const bp = new Backpack();
    bp.pack('review', 'draft', { accessControl: { read: ['agent.reviewer'] } });
    const impostor = bp.forNode({ nodeId: 'reviewer', nodeName: 'Reviewer', namespace: 'other.reviewer' });
    const real = bp.forNode({ nodeId: 'reviewer', nodeName: 'Reviewer', namespace: 'agent.reviewer' });
    expect(impostor.unpack('review')).toBeUndefined();
    expect(real.unpack('review')).toBe('draft');
  });

  it('leak 7: namespaceSegment is one segment, and full namespaces are unique across composite internals', async () => {
    class Leaf extends BackpackNode {}
    const flow = new Flow({ namespace: 'agent' });
    expect(() => flow.addNode(Leaf, { id: 'x', namespaceSegment: 'a.b' })).toThrow(/must be one segment/);
    class Composite extends BackpackNode {
      protected override buildInternalFlow(inner: Flow) {
        inner.addNode(Leaf, { id: 'b' });
      }
    }
    const a = flow.addNode(Composite, { id: 'a' });
    expect(a.internalFlow!.getNode('b')).toBeDefined();
    const second = new Flow({ namespace: 'agent.a', backpack: flow.backpack });
    expect(() => second.addNode(Leaf, { id: 'impostor', namespaceSegment: 'b' })).toThrow(/Nodes 'b' and 'impostor' would share the full namespace 'agent\.a\.b'/);
  });

  it('leak 8: permissions declared as a getter, a static, or in the config restrict the node', async () => {
    const read: Record<string, unknown> = {};
    class Getter extends BackpackNode {
      override get permissions() {
        return { read: ['open'] };
      }
      override prep(backpack: BackpackHandle) {
        read[this.id] = backpack.unpack('secret');
        return undefined;
      }
    }
    class Static extends BackpackNode {
      static permissions = { read: ['open'] };
      override prep(backpack: BackpackHandle) {
        read[this.id] = backpack.unpack('secret');
        return undefined;
      }
    }
    class Plain extends BackpackNode {
      override prep(backpack: BackpackHandle) {
        read[this.id] = backpack.unpack('secret');
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'agent' });
    const g = flow.addNode(Getter, { id: 'getter' });
    const s = flow.addNode(Static, { id: 'static' });
    const c = flow.addNode(Plain, { id: 'config', permissions: { read: ['open'] } });
    const free = flow.addNode(Plain, { id: 'free' });
    g.next(s).next(c).next(free);
    await flow.run({ secret: SECRET, open: 1 });
    expect(read).toEqual({ getter: undefined, static: undefined, config: undefined, free: SECRET });
    expect(c.params).toEqual({});
  });

  it('leak 9: a key hidden by an item rule looks exactly like a missing key', () => {
    const bp = new Backpack(undefined, { strictMode: true });
    bp.pack('hidden', SECRET, { accessControl: { read: ['agent.auth'], write: ['agent.auth'] } });
    const h = bp.forNode({ nodeId: 'chat', nodeName: 'Chat', namespace: 'agent.chat' });
    const missingError = (() => { try { h.unpackRequired('absent'); } catch (e) { return e as Error; } })()!;
    const hiddenError = (() => { try { h.unpackRequired('hidden'); } catch (e) { return e as Error; } })()!;
    expect(hiddenError).toBeInstanceOf(KeyNotFoundError);
    expect(hiddenError.message).toBe(missingError.message.replace('absent', 'hidden'));
    expect(hiddenError.message).not.toContain('agent.auth');
    expect(h.unpack('hidden')).toBeUndefined();
    expect(h.has('hidden')).toBe(h.has('absent'));
    expect(h.keys()).toEqual([]);
    // Writing it is refused without naming who may.
    const write = (() => { try { h.pack('hidden', 1); } catch (e) { return e as Error; } })()!;
    expect(write).toBeInstanceOf(AccessDeniedError);
    expect(write.message).not.toContain('agent.auth');
    // The owner keeps the full reason.
    expect(bp.getAccessDenials('chat').map((d) => d.rule).join()).toContain('agent.auth');
  });

  it('a composite\'s internal nodes can do no more than the composite', async () => {
    let leaked: unknown = 'not run';
    class Inner extends BackpackNode {
      override prep(backpack: BackpackHandle) {
        leaked = backpack.unpack('secret');
        return undefined;
      }
    }
    class Composite extends BackpackNode {
      override readonly permissions = { read: ['open'] };
      protected override buildInternalFlow(inner: Flow) {
        inner.addNode(Inner, { id: 'inner' });
      }
    }
    const flow = new Flow({ namespace: 'agent' });
    flow.addNode(Composite, { id: 'c' });
    await flow.run({ secret: SECRET, open: 1 });
    expect(leaked).toBeUndefined();
    expect(flow.backpack.getAccessDenials('inner')[0]!.rule).toMatch(/enclosing node 'c'/);
  });

  it('a node cannot emit the Backpack\'s or the runtime\'s events, nor speak for another namespace', async () => {
    const errors: string[] = [];
    class Forger extends BackpackNode {
      override prep() {
        for (const input of [
          { type: 'backpack.packed' as const, payload: { key: 'x' } },
          { type: 'custom' as const, namespace: 'agent.other', payload: {} },
        ]) {
          try {
            this.eventStreamer.emit(input);
          } catch (e) {
            errors.push((e as Error).message);
          }
        }
        this.eventStreamer.emit({ type: 'custom', payload: { ok: true } });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'agent' });
    flow.addNode(Forger, { id: 'forger' });
    await flow.run();
    expect(errors).toEqual([expect.stringMatching(/cannot emit 'backpack\.packed'/), expect.stringMatching(/cannot emit events for namespace 'agent\.other'/)]);
    expect(flow.eventStreamer.getHistory({ type: 'custom' })[0]!.namespace).toBe('agent.forger');
  });

  it('the owner naming an unregistered node registers it; a later claim that disagrees is an error', () => {
    const bp = new Backpack();
    bp.pack('a', 1, { nodeId: 'n', namespace: 'x.n' });
    expect(bp.getItem('a')!.metadata.sourceNamespace).toBe('x.n');
    expect(() => bp.pack('b', 1, { nodeId: 'n', namespace: 'y.n' })).toThrow(BackpackError);
  });

  it('node code cannot rewrite the library classes that other code runs (their prototypes are frozen)', async () => {
    const attempts: unknown[] = [];
    class Patcher extends BackpackNode {
      override prep() {
        const patches: (() => void)[] = [
          () => void ((Backpack.prototype as unknown as Record<string, unknown>).toObject = () => ({})),
          () => void Object.defineProperty(BackpackNode.prototype, 'backpack', { get: () => undefined }),
          () => void ((BackpackHandle.prototype as unknown as Record<string, unknown>).unpack = () => undefined),
          () => void ((EventStreamer.prototype as unknown as Record<string, unknown>).emit = () => undefined),
          () => void ((Flow.prototype as unknown as Record<string, unknown>).run = () => undefined),
        ];
        for (const patch of patches) {
          try {
            patch();
            attempts.push('patched');
          } catch (e) {
            attempts.push((e as Error).name);
          }
        }
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'agent' });
    flow.addNode(Patcher, { id: 'patcher' });
    await flow.run({ secret: SECRET });
    expect(attempts).toEqual(['TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError']);
    expect(flow.backpack.toObject()).toEqual({ secret: SECRET });
  });

  it('keeps every commit attributed to its maker when many nodes run at once on one Backpack (0 of 400 wrong)', async () => {
    const shared = new Backpack();
    class Worker extends BackpackNode {
      override async post(backpack: BackpackHandle) {
        for (let j = 0; j < 20; j++) {
          backpack.pack(`k-${this.id}-${j}`, j);
          await new Promise((r) => setTimeout(r, (j * 7 + Number(this.id.slice(1))) % 3));
        }
        return undefined;
      }
    }
    const flows = Array.from({ length: 20 }, (_, i) => {
      const flow = new Flow({ namespace: `team${i}`, backpack: shared });
      flow.addNode(Worker, { id: `w${i}` });
      return flow;
    });
    await Promise.all(flows.map((f) => f.run()));
    const packs = shared.getHistory().filter((c) => c.action === 'pack');
    expect(packs).toHaveLength(400);
    const wrong = packs.filter((c) => !c.key.startsWith(`k-${c.nodeId}-`) || c.namespace !== `team${c.nodeId!.slice(1)}.${c.nodeId}`);
    expect(wrong).toEqual([]);
  });
});
