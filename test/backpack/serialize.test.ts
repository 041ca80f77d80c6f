import { describe, expect, it } from 'vitest';
import { Backpack, BackpackError, type BackpackEvent } from '../../src/backpack/index.js';

function rich(): Backpack {
  const bp = new Backpack(undefined, { maxHistorySize: 8, maxValueBytes: 200, strictMode: true, keyframeInterval: 3 });
  bp.registerPermissions('reader', { read: ['a', 'pii.*'], deny: ['pii.ssn'], namespaceRead: ['sales.**'] });
  bp.pack('a', { when: new Date(7), ids: new Set([1n, 2n]), m: new Map([['x', undefined]]) }, { nodeId: 'w', nodeName: 'W', namespace: 'sales.w', tags: ['t1'] });
  bp.pack('pii.email', 'e@x.y', { tags: ['pii'], accessControl: { read: ['auth'] } });
  bp.pack('bytes', new Float32Array([1.5, 2.5]));
  bp.pack('big', 'z'.repeat(1000));
  bp.unpack('a', 'reader');
  bp.pack('tmp', 1);
  bp.quarantine('tmp', { reason: 'stale', nodeId: 'w' });
  try {
    bp.unpack('pii.ssn', 'reader');
  } catch {
    // strict mode: the denial is recorded
  }
  for (let i = 0; i < 6; i++) bp.pack('loop', i, { nodeId: `n${i}` });
  return bp;
}

describe('toJSON / fromJSON', () => {
  it('produces plain, versioned JSON that survives JSON.stringify', () => {
    const json = rich().toJSON();
    expect(json.version).toBe(2);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it('round-trips items, metadata, tags, history, quarantine, permissions and options exactly', () => {
    const bp = rich();
    const back = Backpack.fromJSON(JSON.parse(JSON.stringify(bp.toJSON())));
    expect(back.toJSON()).toEqual(bp.toJSON());
    expect(back.toObject()).toStrictEqual(bp.toObject());
    expect(back.keys()).toEqual(bp.keys());
    expect(back.getHistory()).toStrictEqual(bp.getHistory());
    for (const key of bp.keys()) expect(back.getItem(key)).toStrictEqual(bp.getItem(key));
    expect(back.getQuarantined()).toStrictEqual(bp.getQuarantined());
    expect(back.getPermissions('reader')).toEqual(bp.getPermissions('reader'));
    expect(back.options).toEqual(bp.options);
    expect(back.getAccessDenials()).toEqual(bp.getAccessDenials());
    expect(back.headSeq).toBe(bp.headSeq);
    expect(back.unpack('big')).toBe('z'.repeat(1000));
  });

  it('keeps snapshots and commit ids working after the round trip', () => {
    const bp = rich();
    const back = Backpack.fromJSON(bp.toJSON());
    for (const c of bp.getHistory()) {
      expect(back.getSnapshotAtCommit(c.commitId).toObject()).toStrictEqual(bp.getSnapshotAtCommit(c.commitId).toObject());
    }
    expect(() => back.unpack('pii.ssn', 'reader')).toThrow(/deny 'pii.ssn'/);
    back.pack('after', 1);
    expect(back.headSeq).toBe(bp.headSeq + 1);
  });

  it('restores values as frozen copies, like pack does', () => {
    const back = Backpack.fromJSON(new Backpack({ o: { list: [1] }, m: new Map([['k', 1]]) }).toJSON());
    const o = back.unpack<{ list: number[] }>('o')!;
    expect(() => o.list.push(2)).toThrow(TypeError);
    expect(() => back.unpack<Map<string, number>>('m')!.set('x', 2)).toThrow(/frozen/);
    expect(back.unpack('o')).toEqual({ list: [1] });
  });

  it('takes the event sink as an option, since it is not serialized', () => {
    const events: BackpackEvent[] = [];
    const back = Backpack.fromJSON(new Backpack({ a: 1 }).toJSON(), { eventStreamer: { emit: (e) => events.push(e) } });
    back.pack('b', 2);
    expect(events.map((e) => e.type)).toEqual(['backpack.packed']);
  });

  it('rejects bad input naming the JSON path of the first problem', () => {
    const good = new Backpack({ a: 1, b: 2 }).toJSON();
    const clone = (): ReturnType<Backpack['toJSON']> => JSON.parse(JSON.stringify(good));
    expect(() => Backpack.fromJSON(null)).toThrow(BackpackError);
    expect(() => Backpack.fromJSON({ ...clone(), version: 3 })).toThrow(/at 'version'/);
    const badSeq = clone();
    badSeq.history.commits[1]!.seq = 7;
    expect(() => Backpack.fromJSON(badSeq)).toThrow(/at 'history\.commits\[1\]\.seq': expected seq 2/);
    const badValue = clone();
    badValue.history.commits[0]!.value = { $bp: 'mystery' };
    expect(() => Backpack.fromJSON(badValue)).toThrow(/at 'history\.commits\[0\]\.value'.*unknown tag/);
    const badAction = clone() as unknown as { history: { commits: { action: string }[] } };
    badAction.history.commits[0]!.action = 'steal';
    expect(() => Backpack.fromJSON(badAction)).toThrow(/history\.commits\[0\]\.action/);
    const badTime = clone();
    badTime.history.commits[1]!.timestamp = badTime.history.commits[0]!.timestamp - 1;
    expect(() => Backpack.fromJSON(badTime)).toThrow(/timestamps must not decrease/);
    const badPerm = clone() as unknown as { permissions: Record<string, unknown> };
    badPerm.permissions = { n: { read: [1] } };
    expect(() => Backpack.fromJSON(badPerm)).toThrow(/permissions\.n\.read\[0\]/);
  });
});
