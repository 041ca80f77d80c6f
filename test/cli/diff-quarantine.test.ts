/**
 * `runs diff` reports a key quarantined only for a quarantine made between its two steps: a quarantine record the
 * earlier step already held (the key was quarantined before, then packed again) is history, not a change.
 */
import { describe, expect, it } from 'vitest';
import { diffStates, type DiffChange } from '../../src/cli/backpackflow/inspect.js';
import { loadRunPoint, runFlow } from '../../src/runtime/index.js';
import { stepper } from '../support/stepper.js';
import { tempDir } from './helpers.js';


describe('runs diff: which quarantine is a change', () => {
  it('a key deleted after an old quarantine is deleted; a new quarantine is reported with its own reason', async () => {
    const dataDir = tempDir();
    await runFlow(
      stepper([
        (b) => b.pack('k', 1), // step 1
        (b) => b.quarantine('k', { reason: 'old reason' }), // step 2
        (b) => b.pack('k', 2), // step 3: active again
        (b) => b.delete('k'), // step 4: deleted
        (b) => b.pack('k', 3), // step 5
        (b) => b.quarantine('k', { reason: 'new reason' }), // step 6
      ]),
      { dataDir, runId: 'r1' },
    );
    const at = (step: number) => loadRunPoint({ dataDir, runId: 'r1', step });
    const change = async (from: number, to: number): Promise<Pick<DiffChange, 'change' | 'quarantine'> | undefined> => {
      const k = diffStates('r1', await at(from), await at(to)).changes.find((c) => c.key === 'k');
      return k && { change: k.change, ...(k.quarantine ? { quarantine: k.quarantine } : {}) };
    };
    expect(await change(3, 4)).toEqual({ change: 'deleted' });
    expect(await change(1, 2)).toMatchObject({ change: 'quarantined', quarantine: { reason: 'old reason', nodeId: 'stepper', replaced: false } });
    expect(await change(2, 3)).toEqual({ change: 'added' });
    // Quarantined (and packed again) between 1 and 4: the quarantine happened in that span.
    expect(await change(1, 4)).toMatchObject({ change: 'quarantined', quarantine: { reason: 'old reason', nodeId: 'stepper', replaced: false } });
    // The item quarantined at step 6 is value 3, not the 2 the key had at step 3: named as a replacement.
    expect(await change(3, 6)).toMatchObject({ change: 'quarantined', quarantine: { reason: 'new reason', nodeId: 'stepper', replaced: true } });
    // Absent at 4 (its old quarantine record kept), quarantined anew by 6.
    expect(await change(4, 6)).toMatchObject({ change: 'quarantined', quarantine: { reason: 'new reason', nodeId: 'stepper' } });
    expect(await change(2, 4)).toBeUndefined();
  });
});
