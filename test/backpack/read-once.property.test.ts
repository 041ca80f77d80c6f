/**
 * What node code hands the Backpack (a pack's tags and options, a child's registration, a handle's event context) is
 * read once, and what is checked is what is kept: a getter or a Proxy that answers one thing to a check and another
 * to a second read never gets its second answer stored, and none of its code runs after the call returns (review
 * s23a H3, H5: such an object in an item's tags ran later in another node's execution; a child registered as
 * `evil.helper` was recorded as another node).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Backpack, BackpackError, type BackpackEvent, type NodeRegistration } from '../../src/backpack/index.js';

/** Anything node code might pass where a tag belongs. */
const anyTag = fc.oneof(fc.string({ maxLength: 6 }), fc.integer(), fc.constant(null), fc.constant(undefined), fc.object({ maxDepth: 1 }), fc.constant(['nested']));

/** Counts reads; once `armed`, any read is a read after the call returned. */
function counter() {
  return { reads: 0, armed: false, late: 0, read(): void {
    this.reads++;
    if (this.armed) this.late++;
  } };
}

/** An array whose element `i` answers `first[i]` to its first read and `later[i]` to every other (a Proxy or accessors). */
function twoFacedArray(first: unknown[], later: unknown[], asProxy: boolean, count: ReturnType<typeof counter>): unknown[] {
  const seen = new Set<number>();
  const answer = (i: number): unknown => {
    count.read();
    if (seen.has(i)) return i < later.length ? later[i] : 'later';
    seen.add(i);
    return first[i];
  };
  if (asProxy) {
    return new Proxy([...first], {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && /^\d+$/.test(prop)) return answer(Number(prop));
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
  }
  const out: unknown[] = new Array(first.length);
  for (let i = 0; i < first.length; i++) Object.defineProperty(out, i, { get: () => answer(i), enumerable: true });
  return out;
}

/** Every surface where stored tags show up, touched the way ordinary code touches them. */
function touchEverything(bp: Backpack, events: BackpackEvent[]): void {
  for (const t of bp.getItem('k')?.metadata.tags ?? []) void String(t);
  JSON.stringify(bp.getItem('k'));
  JSON.stringify(bp.toJSON());
  JSON.stringify(bp.exportState());
  JSON.stringify(events);
  const last = bp.getHistory().at(-1);
  if (last !== undefined) bp.getSnapshotAtCommit(last.commitId).getItem('k');
}

describe('tags: copied once, checked, stored', () => {
  it('property: for any tags (a Proxy or accessors answering twice), the pack throws or stores the first answers, all strings, and no code of them runs later', () => {
    fc.assert(
      fc.property(fc.array(anyTag, { maxLength: 5 }), fc.array(anyTag, { maxLength: 5 }), fc.boolean(), (first, later, asProxy) => {
        const count = counter();
        const events: BackpackEvent[] = [];
        const bp = new Backpack(undefined, { eventStreamer: { emit: (e) => events.push(e) } });
        const tags = twoFacedArray(first, later, asProxy, count);
        let threw: unknown;
        try {
          bp.pack('k', 1, { tags: tags as string[] });
        } catch (error) {
          threw = error;
        }
        count.armed = true;
        if (first.every((t) => typeof t === 'string')) {
          expect(threw).toBeUndefined();
          const stored = bp.getItem('k')!.metadata.tags;
          expect(stored).toEqual(first);
          expect(Object.isFrozen(stored)).toBe(true);
          expect(stored.every((t) => typeof t === 'string')).toBe(true);
        } else {
          expect(threw).toBeInstanceOf(BackpackError);
          expect(bp.has('k')).toBe(false);
        }
        // One read per element, at pack: none before (a check) and none after.
        expect(count.reads).toBe(first.length);
        touchEverything(bp, events);
        expect(count.late).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  it('a Proxy answering strings to a check and an object to a copy stores neither the object nor anything that runs', () => {
    let reads = 0;
    const hook = { toString: () => 'ran' };
    const tags = new Proxy(['ok'], {
      get(target, prop, receiver) {
        if (prop === '0') return reads++ === 0 ? 'ok' : hook;
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const bp = new Backpack();
    bp.pack('k', 1, { tags });
    expect(bp.getItem('k')!.metadata.tags).toEqual(['ok']);
    expect(reads).toBe(1);
  });

  it('a length that is not an array length is refused, naming the key', () => {
    const bp = new Backpack();
    for (const length of [-1, 1.5, 'x', Number.MAX_SAFE_INTEGER + 2]) {
      const tags = new Proxy([] as string[], { get: (t, p, r) => (p === 'length' ? length : (Reflect.get(t, p, r) as unknown)) });
      expect(() => bp.pack('k', 1, { tags })).toThrow(/Cannot pack key 'k': tags must be an array of strings/);
    }
  });
});

describe('pack options: each read once', () => {
  it('accessControl is read once: the rules checked are the rules kept', () => {
    let reads = 0;
    const options = {
      get accessControl() {
        reads++;
        return reads === 1 ? { read: ['app.reader'] } : undefined;
      },
    };
    const bp = new Backpack();
    bp.pack('k', 1, options);
    expect(reads).toBe(1);
    expect(bp.getItem('k')!.accessControl).toEqual({ read: ['app.reader'] });
  });
});

type Identity = { nodeId: unknown; nodeName: unknown; namespace: unknown; permissions?: unknown };

/** A registration whose fields answer `first` to their first read and `later` to every other one. */
function twoFacedRegistration(first: Identity, later: Identity, count: ReturnType<typeof counter>): NodeRegistration {
  const reads = new Map<string, number>();
  const out = {} as NodeRegistration;
  for (const name of ['nodeId', 'nodeName', 'namespace', 'permissions'] as const) {
    Object.defineProperty(out, name, {
      enumerable: true,
      get() {
        count.read();
        const n = (reads.get(name) ?? 0) + 1;
        reads.set(name, n);
        return n === 1 ? first[name] : later[name];
      },
    });
  }
  return out;
}

const segment = fc.constantFrom('helper', 'approver', 'x', 'evil', 'app');
const identity: fc.Arbitrary<Identity> = fc.record({
  nodeId: fc.oneof(segment, fc.constant(''), fc.constant(7)),
  nodeName: fc.oneof(fc.constantFrom('Helper', 'Approver'), fc.constant(undefined)),
  namespace: fc.oneof(segment.map((s) => `evil.${s}`), segment, fc.constant('approver'), fc.constant('evil..x')),
  permissions: fc.oneof(fc.constant(undefined), fc.constant({ read: ['**'] }), fc.constant({ read: ['public'] }), fc.constant({ read: [3] })),
});

describe('registerChild: one read of the registration', () => {
  it('property: a child is registered with the identity and rules that passed the checks, or refused; no getter of it runs later', () => {
    fc.assert(
      fc.property(identity, identity, (first, later) => {
        const bp = new Backpack({ secret: 's', public: 'p' });
        bp.registerNode({ nodeId: 'approver', nodeName: 'Approver', namespace: 'approver' });
        const parent = bp.registerNode({ nodeId: 'evil', nodeName: 'Evil', namespace: 'evil' }).handle;
        const count = counter();
        let child: ReturnType<typeof parent.registerChild> | undefined;
        try {
          child = parent.registerChild(twoFacedRegistration(first, later, count));
        } catch (error) {
          expect(error).toBeInstanceOf(BackpackError);
        }
        count.armed = true;
        const valid =
          typeof first.nodeId === 'string' && first.nodeId !== '' && typeof first.nodeName === 'string' && typeof first.namespace === 'string' &&
          first.namespace.startsWith('evil.') && !first.namespace.includes('..') &&
          (first.permissions === undefined || (first.permissions as { read: unknown[] }).read.every((p) => typeof p === 'string'));
        expect(child !== undefined).toBe(valid);
        if (child === undefined) return;
        const handle = child.handle;
        expect(handle.identity).toEqual({ nodeId: first.nodeId, nodeName: first.nodeName, namespace: first.namespace });
        handle.pack('out', 1);
        const meta = bp.getItem('out')!.metadata;
        expect({ id: meta.sourceNodeId, name: meta.sourceNodeName, ns: meta.sourceNamespace }).toEqual({ id: first.nodeId, name: first.nodeName, ns: first.namespace });
        // The rules read at the check are the rules that apply.
        expect(handle.unpack('secret')).toBe(first.permissions === undefined || (first.permissions as { read: string[] }).read.includes('**') ? 's' : undefined);
        JSON.stringify(bp.toJSON());
        expect(count.late).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it("the audit's case: a child that passes as evil.helper is not recorded as the approver", () => {
    const bp = new Backpack();
    bp.registerNode({ nodeId: 'approver', nodeName: 'Approver', namespace: 'approver' });
    const parent = bp.registerNode({ nodeId: 'evil', nodeName: 'Evil', namespace: 'evil' }).handle;
    const count = counter();
    const child = parent.registerChild(
      twoFacedRegistration({ nodeId: 'helper', nodeName: 'Helper', namespace: 'evil.helper' }, { nodeId: 'approver', nodeName: 'Approver', namespace: 'approver' }, count),
    );
    child.withContext({}).pack('approval', 'approved');
    const meta = bp.getItem('approval')!.metadata;
    expect({ id: meta.sourceNodeId, ns: meta.sourceNamespace }).toEqual({ id: 'helper', ns: 'evil.helper' });
    expect(bp.getItemsByNamespace('approver')).toEqual([]);
  });
});

describe("a child handle's event context", () => {
  it('is read once and holds strings only (it goes into events other nodes read)', () => {
    const events: BackpackEvent[] = [];
    const bp = new Backpack(undefined, { eventStreamer: { emit: (e) => events.push(e) } });
    const parent = bp.registerNode({ nodeId: 'n', nodeName: 'N', namespace: 'n' }).handle;
    const child = parent.registerChild({ nodeId: 'c', nodeName: 'C', namespace: 'n.c' });
    expect(() => child.withContext({ spanId: { toString: () => 'span' } as unknown as string })).toThrow(/spanId of a handle's events must be a string, got object/);
    expect(() => child.withContext({ runId: 5 as unknown as string })).toThrow(/runId of a handle's events must be a string, got number/);
    let reads = 0;
    const context = {
      get spanId() {
        reads++;
        return reads === 1 ? 'span-1' : { evil: true };
      },
    } as { spanId: string };
    child.withContext(context).pack('k', 1);
    expect(reads).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'backpack.packed', spanId: 'span-1' });
  });
});
