/**
 * History keeps only a reference (an UnavailableValue) of a value above maxValueBytes. Backpack.diff between two
 * snapshots must not call two such references equal because their size and summary match: it reports a change it
 * cannot rule out, flagged `unknown`, and the same reference (the same pack) stays equal.
 */
import { describe, expect, it } from 'vitest';
import { Backpack } from '../../src/index.js';

describe('Backpack.diff of history snapshots holding large values', () => {
  it('reports a large value replaced by another of the same size and summary as modified, flagged unknown', () => {
    const bp = new Backpack(undefined, { maxValueBytes: 40 });
    bp.pack('report', 'a'.repeat(100));
    const c1 = bp.getHistory().at(-1)!.commitId;
    bp.pack('report', 'a'.repeat(99) + 'b');
    const c2 = bp.getHistory().at(-1)!.commitId;
    const d = bp.diff(bp.getSnapshotAtCommit(c1), bp.getSnapshotAtCommit(c2));
    expect(d.modified).toEqual(['report']);
    expect(d.details['report']!.unknown).toBe(true);
  });

  it('keeps a large value that was not packed again unchanged between two snapshots', () => {
    const bp = new Backpack(undefined, { maxValueBytes: 40 });
    bp.pack('report', 'a'.repeat(100));
    const c1 = bp.getHistory().at(-1)!.commitId;
    bp.pack('note', 'small');
    const c2 = bp.getHistory().at(-1)!.commitId;
    const d = bp.diff(bp.getSnapshotAtCommit(c1), bp.getSnapshotAtCommit(c2));
    expect(d).toMatchObject({ added: ['note'], modified: [], deleted: [] });
  });
});
