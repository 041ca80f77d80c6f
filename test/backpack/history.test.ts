import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Backpack, HistoryPrunedError, InvalidCommitError, isUnavailable, UnavailableValue } from '../../src/backpack/index.js';

describe('history (D8)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('records every pack, unpack, delete, quarantine and clear, oldest first, with increasing seq', () => {
    const bp = new Backpack();
    bp.pack('a', 1, { nodeId: 'n1', nodeName: 'N1', namespace: 'x.n1' });
    bp.unpack('a', 'n2');
    bp.unpack('missing', 'n2');
    bp.pack('a', 2, { nodeId: 'n1' });
    bp.quarantine('a', { reason: 'retry failed', nodeId: 'n3' });
    bp.pack('b', { big: true });
    bp.delete('b');
    bp.pack('c', 3);
    bp.clear();
    const history = bp.getHistory();
    expect(history.map((c) => [c.seq, c.action, c.key, c.nodeId])).toEqual([
      [1, 'pack', 'a', 'n1'],
      [2, 'unpack', 'a', 'n2'],
      [3, 'unpack', 'missing', 'n2'],
      [4, 'pack', 'a', 'n1'],
      [5, 'quarantine', 'a', 'n3'],
      [6, 'pack', 'b', undefined],
      [7, 'delete', 'b', undefined],
      [8, 'pack', 'c', undefined],
      [9, 'clear', '*', undefined],
    ]);
    expect(history[0]).toMatchObject({ nodeName: 'N1', namespace: 'x.n1', valueSummary: '1', newValue: 1, previousValue: undefined, timestamp: 1_000_000 });
    expect(history[1]!.valueSummary).toBe('[accessed]');
    expect(history[2]!.valueSummary).toBe('[not found]');
    expect(history[3]).toMatchObject({ newValue: 2, previousValue: 1 });
    expect(history[4]).toMatchObject({ reason: 'retry failed', previousValue: 2 });
    expect(history[6]).toMatchObject({ previousValue: { big: true } });
    expect(new Set(history.map((c) => c.commitId)).size).toBe(9);
    expect(bp.headSeq).toBe(9);
    expect(Object.isFrozen(history[0])).toBe(true);
  });

  it('does not record reads when recordReads is false', () => {
    const bp = new Backpack({ a: 1 }, { recordReads: false });
    bp.unpack('a', 'n');
    expect(bp.getHistory().map((c) => c.action)).toEqual(['pack']);
  });

  it('returns only commits after sinceSeq, and refuses when some were pruned', () => {
    const bp = new Backpack(undefined, { maxHistorySize: 3 });
    for (let i = 1; i <= 5; i++) bp.pack('k', i);
    expect(bp.getHistory({ sinceSeq: 4 }).map((c) => c.seq)).toEqual([5]);
    expect(bp.getHistory({ sinceSeq: 5 })).toEqual([]);
    expect(() => bp.getHistory({ sinceSeq: 1 })).toThrow(HistoryPrunedError);
    expect(bp.getHistory().map((c) => c.seq)).toEqual([3, 4, 5]);
  });

  it('supports time travel via getSnapshot(timestamp)', () => {
    const bp = new Backpack();
    bp.pack('context', 'good');
    vi.setSystemTime(2_000_000);
    bp.pack('context', 'bad', { nodeId: 'research-2' });
    bp.pack('extra', 1);
    vi.setSystemTime(3_000_000);
    bp.delete('extra');
    expect(bp.getSnapshot(1_500_000).toObject()).toEqual({ context: 'good' });
    expect(bp.getSnapshot(2_000_000).toObject()).toEqual({ context: 'bad', extra: 1 });
    expect(bp.getSnapshot(3_000_000).toObject()).toEqual({ context: 'bad' });
    expect(bp.getSnapshot(999_999).toObject()).toEqual({});
    expect(bp.getSnapshot(1_500_000).getItem('context')!.metadata.version).toBe(1);
  });

  it('keeps timestamps non-decreasing when the clock goes back', () => {
    const bp = new Backpack();
    bp.pack('a', 1);
    vi.setSystemTime(500);
    bp.pack('b', 2);
    const [first, second] = bp.getHistory();
    expect(second!.timestamp).toBeGreaterThanOrEqual(first!.timestamp);
  });

  it('gives snapshots at a commit and before a node', () => {
    const bp = new Backpack();
    bp.pack('context', 'v1', { nodeId: 'research-1' });
    bp.pack('context', 'v2', { nodeId: 'research-2' });
    bp.pack('response', 'r', { nodeId: 'chat-1' });
    const [c1, c2] = bp.getHistory();
    expect(bp.getSnapshotAtCommit(c1!.commitId).toObject()).toEqual({ context: 'v1' });
    expect(bp.getSnapshotAtCommit(c2!.commitId).toObject()).toEqual({ context: 'v2' });
    expect(bp.getSnapshotBeforeNode('research-2').toObject()).toEqual({ context: 'v1' });
    expect(bp.getSnapshotBeforeNode('research-1').toObject()).toEqual({});
    const diff = bp.diff(bp.getSnapshotBeforeNode('research-2'), bp.getSnapshot(Date.now()));
    expect(diff).toEqual({
      added: ['response'],
      modified: ['context'],
      deleted: [],
      details: {
        response: { before: undefined, after: 'r', changedBy: 'chat-1' },
        context: { before: 'v1', after: 'v2', changedBy: 'research-2' },
      },
    });
  });

  it('raises InvalidCommitError for unknown commits and nodes', () => {
    const bp = new Backpack({ a: 1 });
    expect(() => bp.getSnapshotAtCommit('nope')).toThrow(InvalidCommitError);
    expect(() => bp.getSnapshotAtCommit('deadbeef-1')).toThrow(/not in this Backpack's history/);
    expect(() => bp.getSnapshotBeforeNode('ghost')).toThrow(/No commit by node 'ghost'/);
    const other = new Backpack({ a: 1 });
    expect(() => bp.getSnapshotAtCommit(other.getHistory()[0]!.commitId)).toThrow(InvalidCommitError);
  });

  it('gives snapshots that are independent Backpacks with the same permissions', () => {
    const bp = new Backpack({ a: 1 });
    bp.registerPermissions('n', { read: ['a'] });
    const snap = bp.getSnapshot(Date.now());
    snap.pack('b', 2);
    expect(bp.has('b')).toBe(false);
    expect(snap.getPermissions('n')).toEqual({ read: ['a'] });
    expect(snap.unpack('b', 'n')).toBeUndefined();
    expect(snap.headSeq).toBe(2);
  });

  it('branches with replayFromCommit: state and history up to the commit, then continues on its own', () => {
    const bp = new Backpack();
    bp.pack('a', 1, { nodeId: 'n1' });
    bp.pack('b', 2, { nodeId: 'n2' });
    bp.pack('a', 3, { nodeId: 'n3' });
    const target = bp.getHistory()[1]!;
    const branch = bp.replayFromCommit(target.commitId);
    expect(branch.toObject()).toEqual({ a: 1, b: 2 });
    expect(branch.getHistory().map((c) => c.commitId)).toEqual(bp.getHistory().slice(0, 2).map((c) => c.commitId));
    branch.pack('c', 4);
    expect(branch.headSeq).toBe(3);
    expect(branch.getHistory()[2]!.commitId).not.toBe(bp.getHistory()[2]!.commitId);
    expect(bp.has('c')).toBe(false);
    expect(branch.getSnapshotAtCommit(target.commitId).toObject()).toEqual({ a: 1, b: 2 });
  });

  it('prunes by count, keeps retained snapshots exact and refuses pruned ones', () => {
    const bp = new Backpack(undefined, { maxHistorySize: 5, keyframeInterval: 2 });
    for (let i = 1; i <= 12; i++) bp.pack(`k${i % 3}`, i);
    const history = bp.getHistory();
    expect(history.map((c) => c.seq)).toEqual([8, 9, 10, 11, 12]);
    expect(bp.getSnapshotAtCommit(history[0]!.commitId).toObject()).toEqual({ k1: 7, k2: 8, k0: 6 });
    expect(bp.getSnapshotAtCommit(history[4]!.commitId).toObject()).toEqual({ k1: 10, k2: 11, k0: 12 });
    const pruned = `${history[0]!.commitId.split('-')[0]}-3`;
    expect(() => bp.getSnapshotAtCommit(pruned)).toThrow(HistoryPrunedError);
    expect(() => bp.getSnapshotAtCommit(pruned)).toThrow(/oldest retained commit is seq 8/);
  });

  it('prunes by bytes', () => {
    const bp = new Backpack(undefined, { maxHistoryBytes: 3000 });
    for (let i = 0; i < 20; i++) bp.pack(`k${i}`, 'x'.repeat(500));
    const history = bp.getHistory();
    expect(history.length).toBeLessThan(20);
    expect(history.length).toBeGreaterThan(0);
    expect(history.at(-1)!.seq).toBe(20);
    expect(bp.getSnapshotAtCommit(history[0]!.commitId).size).toBe(history[0]!.seq);
  });

  it('refuses snapshots before the window by time and by node once pruned', () => {
    const bp = new Backpack(undefined, { maxHistorySize: 2 });
    bp.pack('a', 1, { nodeId: 'early' });
    vi.setSystemTime(2_000_000);
    bp.pack('b', 2, { nodeId: 'mid' });
    vi.setSystemTime(3_000_000);
    bp.pack('c', 3, { nodeId: 'late' });
    expect(() => bp.getSnapshot(999_999)).toThrow(HistoryPrunedError);
    expect(bp.getSnapshot(1_000_000).toObject()).toEqual({ a: 1 });
    expect(() => bp.getSnapshotBeforeNode('early')).toThrow(HistoryPrunedError);
    expect(bp.getSnapshot(1_500_000).toObject()).toEqual({ a: 1 });
    expect(bp.getSnapshotBeforeNode('late').toObject()).toEqual({ a: 1, b: 2 });
  });

  it('keeps a value above maxValueBytes in state but only a reference in history', () => {
    const bp = new Backpack(undefined, { maxValueBytes: 100 });
    const big = 'y'.repeat(500);
    bp.pack('big', big, { nodeId: 'n' });
    bp.pack('small', 1);
    expect(bp.unpack('big')).toBe(big);
    const commit = bp.getHistory()[0]!;
    expect(commit.newValue).toBeInstanceOf(UnavailableValue);
    const snap = bp.getSnapshot(Date.now());
    const inSnapshot = snap.unpack('big');
    expect(isUnavailable(inSnapshot)).toBe(true);
    expect(inSnapshot).toMatchObject({ key: 'big', unavailable: true });
    expect((inSnapshot as UnavailableValue).reason).toMatch(/maxValueBytes/);
    expect(snap.unpack('small')).toBe(1);
    bp.pack('big', 'now small');
    expect(bp.getHistory().at(-1)!.previousValue).toBeInstanceOf(UnavailableValue);
  });

  it('lists keys a node read and wrote in the access log', () => {
    const bp = new Backpack({ q: 'x' });
    const h = bp.forNode({ nodeId: 'n', nodeName: 'N', namespace: 'n' });
    h.unpack('q');
    h.unpack('q');
    h.unpack('missing');
    h.pack('answer', 1);
    h.quarantine('answer', { reason: 'wrong' });
    expect(bp.getAccessLog('n', 'read')).toEqual(['q']);
    expect(bp.getAccessLog('n', 'write')).toEqual(['answer']);
    expect(bp.getAccessLog('other', 'read')).toEqual([]);
  });
});
