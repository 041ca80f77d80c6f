/**
 * `runs blame` lists the writes that took effect, each at the step whose state holds it (a delete or a clear too);
 * writes replaced later in their own step are listed apart as superseded. `runs diff` reports a change of writer even
 * when value, version and millisecond are the same.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BLAME_EVENT_TYPES, blame, blameReads, diffStates, type BlameReport } from '../../src/cli/backpackflow/inspect.js';
import { readFilteredEvents } from '../../src/cli/backpackflow/store-access.js';
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { stepper } from '../support/stepper.js';
import { tempDir } from './helpers.js';
import { trials } from '../support/soak.js';

const dataDir = tempDir();

async function blameOf(runId: string, key: string): Promise<BlameReport> {
  const events = await readFilteredEvents({ dataDir, session: 'default', runId }, (e) => blameReads(e, key), undefined, BLAME_EVENT_TYPES);
  return blame(runId, key, events, await loadRunPoint({ dataDir, runId, step: 0 }));
}


afterEach(() => void vi.useRealTimers());

describe('runs blame: writes at the step whose state holds them', () => {
  it('pack, pack, delete in one step: the delete is listed at that step, the two packs as superseded', async () => {
    const flow = new Flow({ namespace: 'm' });
    class A extends BackpackNode { override post(b: BackpackHandle) { b.pack('k', 'a1'); return undefined; } }
    class B extends BackpackNode { override post(b: BackpackHandle) { b.pack('k', 'b1'); b.pack('k', 'b2'); b.delete('k'); return undefined; } }
    flow.addNode(A, { id: 'a' }).next(flow.addNode(B, { id: 'b' }));
    await runFlow(flow, { dataDir, runId: 'blame-del', durability: 'never' });
    const report = await blameOf('blame-del', 'k');
    expect(report.writes.map((w) => [w.step, w.action, w.nodeId, w.summary])).toEqual([
      [1, 'pack', 'a', '"a1"'],
      [2, 'delete', 'b', '(deleted)'],
    ]);
    expect(report.superseded!.map((w) => [w.step, w.summary])).toEqual([[2, '"b1"'], [2, '"b2"']]);
    for (const w of report.writes) {
      const item = (await loadRunPoint({ dataDir, runId: 'blame-del', step: w.step })).state.items['k'];
      expect(item === undefined ? '(deleted)' : JSON.stringify(item.value), `write ${w.summary} at step ${w.step}`).toBe(w.summary);
    }
  }, 15_000);

  it('property: every listed write is what its step\'s state holds, and every step that changed the key lists one', async () => {
    type Op = 'pack' | 'delete' | 'quarantine';
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.constantFrom<Op>('pack', 'pack', 'delete', 'quarantine'), { maxLength: 4 }), { minLength: 1, maxLength: 6 }), async (script) => {
        const runId = `bp${n++}`;
        let value = 0;
        await runFlow(
          stepper(script.map((ops) => (b: BackpackHandle) => {
            for (const o of ops) {
              if (o === 'pack') b.pack('k', `v${value++}`);
              else if (o === 'delete') b.delete('k');
              else if (b.has('k')) b.quarantine('k', { reason: 'bad' });
            }
          })),
          { dataDir, runId, durability: 'never' },
        );
        const report = await blameOf(runId, 'k');
        const holds: (string | undefined)[] = [];
        for (let step = 0; step <= script.length; step++) {
          const item = (await loadRunPoint({ dataDir, runId, step })).state.items['k'];
          holds.push(item === undefined ? undefined : `${JSON.stringify(item.value)} v${item.metadata.version}`);
        }
        for (const w of report.writes) {
          const expected = w.action === 'pack' ? `${w.summary} v${w.version}` : undefined;
          expect(holds[w.step], `${w.action} ${w.summary} at step ${w.step}`).toBe(expected);
        }
        for (let step = 1; step <= script.length; step++) {
          if (holds[step] === holds[step - 1]) continue;
          expect(report.writes.filter((w) => w.step === step), `step ${step}`).toHaveLength(1);
        }
      }),
      { numRuns: trials(12, 150) },
    );
  }, 120_000);
});

describe('runs diff: a change of writer is a change', () => {
  it('a key re-written by another node with the same value and version in the same millisecond is reported', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_700_000_000_000);
    const flow = new Flow({ namespace: 'm' });
    class X extends BackpackNode { override post(b: BackpackHandle) { b.pack('j', 1); return undefined; } }
    class Y extends BackpackNode { override post(b: BackpackHandle) { b.delete('j'); b.pack('j', 1); return undefined; } }
    flow.addNode(X, { id: 'x' }).next(flow.addNode(Y, { id: 'y' }));
    await runFlow(flow, { dataDir, runId: 'diff-same-ms', durability: 'never' });
    vi.useRealTimers();
    const s1 = await loadRunPoint({ dataDir, runId: 'diff-same-ms', step: 1 });
    const s2 = await loadRunPoint({ dataDir, runId: 'diff-same-ms', step: 2 });
    expect(s1.state.items['j']!.metadata.sourceNodeId).toBe('x');
    expect(s2.state.items['j']!.metadata.sourceNodeId).toBe('y');
    const diff = diffStates('diff-same-ms', s1, s2);
    expect(diff.changes.map((c) => [c.key, c.change, c.by.nodeId])).toEqual([['j', 'modified', 'y']]);
  }, 15_000);
});
