import { describe, expect, it } from 'vitest';
import { Backpack, BackpackError, KeyNotFoundError } from '../../src/backpack/index.js';

describe('Backpack pack/unpack', () => {
  it('stores and retrieves data', () => {
    const bp = new Backpack();
    bp.pack('userQuery', 'What is AI?', { tags: ['user-input'] });
    expect(bp.unpack('userQuery')).toBe('What is AI?');
    expect(bp.has('userQuery')).toBe(true);
    expect(bp.keys()).toEqual(['userQuery']);
    expect(bp.size).toBe(1);
  });

  it('returns undefined for missing keys and throws KeyNotFoundError on unpackRequired', () => {
    const bp = new Backpack();
    expect(bp.unpack('nope')).toBeUndefined();
    expect(() => bp.unpackRequired('nope', 'n1')).toThrow(KeyNotFoundError);
    expect(() => bp.unpackRequired('nope', 'n1')).toThrow(/'nope'.*node 'n1'/);
  });

  it('treats a key holding undefined as present for unpackRequired', () => {
    const bp = new Backpack();
    bp.pack('maybe', undefined);
    expect(bp.has('maybe')).toBe(true);
    expect(bp.unpackRequired('maybe')).toBeUndefined();
  });

  it('tracks version numbers and provenance metadata', () => {
    const bp = new Backpack();
    bp.pack('k', 1, { nodeId: 'a', nodeName: 'A', namespace: 'sales.a', tags: ['x'] });
    bp.pack('k', 2, { nodeId: 'b', nodeName: 'B', namespace: 'sales.b' });
    expect(bp.getVersion('k')).toBe(2);
    expect(bp.getVersion('missing')).toBe(0);
    const item = bp.getItem('k')!;
    expect(item.value).toBe(2);
    expect(item.metadata).toMatchObject({ sourceNodeId: 'b', sourceNodeName: 'B', sourceNamespace: 'sales.b', version: 2, tags: [] });
    expect(typeof item.metadata.timestamp).toBe('number');
  });

  it('never attributes an owner pack to a node', () => {
    const bp = new Backpack();
    bp.pack('k', 1);
    expect(bp.getItem('k')!.metadata.sourceNodeId).toBeUndefined();
    expect(bp.getHistory()[0]!.nodeId).toBeUndefined();
  });

  it('packs initialData as owner commits', () => {
    const bp = new Backpack({ a: 1, b: 'two' });
    expect(bp.toObject()).toEqual({ a: 1, b: 'two' });
    expect(bp.getHistory().map((c) => [c.action, c.key])).toEqual([
      ['pack', 'a'],
      ['pack', 'b'],
    ]);
  });

  it('peek reads without a commit', () => {
    const bp = new Backpack({ a: 1 });
    const before = bp.headSeq;
    expect(bp.peek('a')).toBe(1);
    expect(bp.headSeq).toBe(before);
    bp.unpack('a');
    expect(bp.headSeq).toBe(before + 1);
  });

  it('deletes and clears with commits, and reports a missing key', () => {
    const bp = new Backpack({ a: 1, b: 2, c: 3 });
    expect(bp.delete('a')).toBe(true);
    expect(bp.delete('a')).toBe(false);
    expect(bp.has('a')).toBe(false);
    bp.clear();
    expect(bp.size).toBe(0);
    const actions = bp.getHistory().map((c) => c.action);
    expect(actions.slice(-2)).toEqual(['delete', 'clear']);
    expect(bp.getHistory().at(-1)!.previousValue).toEqual({ b: 2, c: 3 });
  });

  it('rejects bad keys, tags and options with clear errors', () => {
    const bp = new Backpack();
    expect(() => bp.pack('', 1)).toThrow(/non-empty string/);
    for (const key of ['sales.', 'a..b', '.x']) expect(() => bp.pack(key, 1)).toThrow(new RegExp(`'${key.replace(/\./g, '\\.')}' has an empty segment`));
    expect(() => bp.pack('k', 1, { tags: [1 as unknown as string] })).toThrow(/key 'k': tags must be an array of strings/);
    expect(() => new Backpack(undefined, { maxHistorySize: -1 })).toThrow(/maxHistorySize/);
    expect(() => new Backpack(undefined, { strictMode: 'yes' as unknown as boolean })).toThrow(/strictMode/);
    expect(() => new Backpack(undefined, { eventStreamer: {} as never })).toThrow(/emit/);
    expect(() => bp.pack('k', 1, { accessControl: { read: 'x' as unknown as string[] } })).toThrow(/accessControl for key 'k' at 'read'/);
  });
});

describe('Backpack values are frozen copies (D7)', () => {
  it("shares the Backpack's own frozen copies when they are packed again, and copies anything else", () => {
    const bp = new Backpack();
    bp.pack('list', [{ a: 1 }, { b: [2] }]);
    const list = bp.unpack('list') as object[];
    bp.pack('list', [...list, { c: 3 }]);
    const next = bp.unpack('list') as object[];
    expect(next).not.toBe(list);
    expect(next[0]).toBe(list[0]);
    expect(next[1]).toBe(list[1]);
    expect(Object.isFrozen(next[2])).toBe(true);
    bp.pack('other', { inner: list[1] });
    expect((bp.unpack('other') as { inner: object }).inner).toBe(list[1]);
    // A frozen object of the caller's own is still copied: only what the Backpack froze all through is shared.
    const mine = Object.freeze({ nested: { x: 1 } });
    bp.pack('mine', mine);
    expect(bp.unpack('mine')).not.toBe(mine);
    mine.nested.x = 2;
    expect(bp.unpack('mine')).toEqual({ nested: { x: 1 } });
    // A value holding a typed array cannot be frozen: it is copied on every read and never shared.
    bp.pack('bytes', { data: new Uint8Array([1, 2]) });
    const read = bp.unpack('bytes') as { data: Uint8Array };
    bp.pack('again', read);
    read.data[0] = 9;
    expect((bp.unpack('bytes') as { data: Uint8Array }).data[0]).toBe(1);
    expect((bp.unpack('again') as { data: Uint8Array }).data[0]).toBe(1);
  });

  it('is not affected by mutating the packed object', () => {
    const bp = new Backpack();
    const value = { list: [1, 2], nested: { a: 1 } };
    bp.pack('v', value);
    const snap = bp.getSnapshotAtCommit(bp.getHistory()[0]!.commitId);
    value.list.push(3);
    value.nested.a = 99;
    expect(bp.unpack('v')).toEqual({ list: [1, 2], nested: { a: 1 } });
    expect(snap.unpack('v')).toEqual({ list: [1, 2], nested: { a: 1 } });
  });

  it('throws when the unpacked value is mutated, and the state is unchanged', () => {
    const bp = new Backpack();
    bp.pack('v', { list: [1], when: new Date(5), map: new Map([['a', 1]]), set: new Set([1]) });
    const got = bp.unpack<{ list: number[]; when: Date; map: Map<string, number>; set: Set<number> }>('v')!;
    expect(() => got.list.push(2)).toThrow(TypeError);
    expect(() => {
      (got as { extra?: number }).extra = 1;
    }).toThrow(TypeError);
    expect(() => got.when.setTime(0)).toThrow(/frozen/);
    expect(() => got.map.set('b', 2)).toThrow(/frozen/);
    expect(() => got.set.add(2)).toThrow(/frozen/);
    expect(bp.unpack('v')).toEqual({ list: [1], when: new Date(5), map: new Map([['a', 1]]), set: new Set([1]) });
  });

  it('copies typed arrays on read, so writing to one changes nothing stored', () => {
    const bp = new Backpack();
    bp.pack('bytes', { data: new Uint8Array([1, 2, 3]) });
    const snap = bp.getSnapshot(Date.now() + 1000);
    const got = bp.unpack<{ data: Uint8Array }>('bytes')!;
    got.data[0] = 99;
    expect(bp.unpack<{ data: Uint8Array }>('bytes')!.data).toEqual(new Uint8Array([1, 2, 3]));
    expect(snap.unpack<{ data: Uint8Array }>('bytes')!.data).toEqual(new Uint8Array([1, 2, 3]));
    expect(bp.getHistory()[0]!.newValue).toEqual({ data: new Uint8Array([1, 2, 3]) });
  });

  it('rejects functions, symbols, circular references and class instances, naming the key and path', () => {
    const bp = new Backpack();
    expect(() => bp.pack('fn', () => 1)).toThrow(BackpackError);
    expect(() => bp.pack('fn', () => 1)).toThrow(/key 'fn': the value is a function/);
    expect(() => bp.pack('deep', { a: [{ b: Symbol('s') }] })).toThrow(/key 'deep': the value at 'a\[0\]\.b' is a symbol/);
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => bp.pack('loop', loop)).toThrow(/key 'loop'.*'self' refers to itself/);
    class Point {
      x = 1;
    }
    expect(() => bp.pack('p', { at: new Point() })).toThrow(/'at' is a Point/);
    expect(bp.size).toBe(0);
    expect(bp.headSeq).toBe(0);
  });

  it('allows shared (non-circular) references', () => {
    const shared = { n: 1 };
    const bp = new Backpack();
    bp.pack('k', { a: shared, b: shared });
    expect(bp.unpack('k')).toEqual({ a: { n: 1 }, b: { n: 1 } });
  });
});

describe('Backpack.validate', () => {
  it('validates the current state as an object with a zod schema', async () => {
    const { z } = await import('zod');
    const schema = z.object({ query: z.string(), user: z.object({ emails: z.array(z.email()) }) });
    const bp = new Backpack({ query: 'q', user: { emails: ['a@b.co'] } });
    expect(bp.validate(schema)).toEqual({ success: true, errors: [] });
    bp.pack('user', { emails: ['not-an-email'] });
    bp.delete('query');
    const result = bp.validate(schema);
    expect(result.success).toBe(false);
    expect(result.errors.map((e) => e.path).sort()).toEqual(['query', 'user.emails[0]']);
    expect(result.errors.every((e) => e.message.length > 0)).toBe(true);
  });
});

describe('unusual keys and values', () => {
  it('handles a __proto__ key like any other key', () => {
    const bp = new Backpack();
    bp.pack('__proto__', { polluted: true });
    bp.pack('v', JSON.parse('{"__proto__": {"x": 1}}'));
    expect(bp.unpack('__proto__')).toEqual({ polluted: true });
    expect(Object.keys(bp.toObject())).toEqual(['__proto__', 'v']);
    expect(Object.keys(bp.unpack<object>('v')!)).toEqual(['__proto__']);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    bp.clear();
    expect(Object.keys(bp.getHistory().at(-1)!.previousValue as object)).toEqual(['__proto__', 'v']);
    expect(Backpack.diff(new Backpack(), new Backpack({ ['__proto__']: 1 })).added).toEqual(['__proto__']);
  });

  it('copies typed arrays in previous values read from history', () => {
    const bp = new Backpack();
    bp.pack('t', new Int32Array([1]));
    bp.pack('t', 2);
    const prev = bp.getHistory()[1]!.previousValue as Int32Array;
    prev[0] = 42;
    expect(bp.getHistory()[1]!.previousValue).toEqual(new Int32Array([1]));
  });
});
