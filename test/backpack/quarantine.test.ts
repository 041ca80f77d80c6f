import { describe, expect, it } from 'vitest';
import { Backpack, BackpackError } from '../../src/backpack/index.js';

describe('quarantine (D10)', () => {
  it('moves an item out of the active state and lists it with the reason', () => {
    const bp = new Backpack();
    bp.pack('retry_0', { error: 'timeout' }, { nodeId: 'api', namespace: 'tools.api' });
    expect(bp.quarantine('retry_0', { reason: 'Retry failed, successful attempt follows', nodeId: 'api' })).toBe(true);
    expect(bp.has('retry_0')).toBe(false);
    expect(bp.unpack('retry_0', 'reader')).toBeUndefined();
    expect(bp.unpackByNamespace('tools.*')).toEqual({});
    expect(bp.keys()).toEqual([]);
    const q = bp.getQuarantined().get('retry_0')!;
    expect(q.value).toEqual({ error: 'timeout' });
    expect(q.metadata.sourceNodeId).toBe('api');
    expect(q.quarantine).toMatchObject({ reason: 'Retry failed, successful attempt follows', nodeId: 'api', seq: 2 });
  });

  it("is invisible to snapshots' active state but kept in their quarantine", () => {
    const bp = new Backpack({ a: 1 });
    bp.quarantine('a', { reason: 'stale' });
    const snap = bp.getSnapshot(Date.now());
    expect(snap.toObject()).toEqual({});
    expect([...snap.getQuarantined().keys()]).toEqual(['a']);
    const before = bp.getSnapshotAtCommit(bp.getHistory()[0]!.commitId);
    expect(before.toObject()).toEqual({ a: 1 });
    expect(before.getQuarantined().size).toBe(0);
  });

  it('returns false for a missing key and needs a reason', () => {
    const bp = new Backpack({ a: 1 });
    expect(bp.quarantine('missing', { reason: 'x' })).toBe(false);
    expect(() => bp.quarantine('a', { reason: '' })).toThrow(BackpackError);
    expect(() => bp.quarantine('a', {} as never)).toThrow(/quarantine\('a'\) needs a reason/);
    expect(bp.has('a')).toBe(true);
  });

  it('lets the key be packed again while the quarantined entry stays', () => {
    const bp = new Backpack({ a: 1 });
    bp.quarantine('a', { reason: 'bad' });
    bp.pack('a', 2);
    expect(bp.unpack('a')).toBe(2);
    expect(bp.getItem('a')!.metadata.version).toBe(1);
    expect(bp.getQuarantined().get('a')!.value).toBe(1);
  });
});
