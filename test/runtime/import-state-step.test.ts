/**
 * A flow's owner that replaces the state with Backpack.importState during a durable run: the step records it (audit
 * s18, H1: the tracker took the new history's commits for ones after its own, and recorded no change).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';

const dataDir = mkdtempSync(join(tmpdir(), 'bpf-import-step-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

it('the step after flow.backpack.importState(...) reads back as the live state', async () => {
  const flow = new Flow({ namespace: 'main', maxSteps: 5 });
  let live: unknown;
  class Restore extends BackpackNode {
    override post(_backpack: BackpackHandle): undefined {
      // A node that restores a saved snapshot of the state (one item, where the run had three).
      const snapshot = new Flow({ namespace: 'snap' }).backpack;
      snapshot.pack('restored', 'from a snapshot');
      flow.backpack.importState(snapshot.exportState());
      live = flow.backpack.exportState().items;
      return undefined;
    }
  }
  flow.addNode(Restore, { id: 'restore' });
  await runFlow(flow, { dataDir, runId: 'import', input: { a: 1, b: 2, c: 3 } });
  const point = await loadRunPoint({ dataDir, runId: 'import', step: 1 });
  expect(Object.keys(point.state.items)).toEqual(Object.keys(live as object));
});

it('a state replaced by an empty one reads back empty', async () => {
  const flow = new Flow({ namespace: 'main', maxSteps: 5 });
  class Clear extends BackpackNode {
    override post(_backpack: BackpackHandle): undefined {
      flow.backpack.importState({ version: 1, items: {}, quarantined: {} });
      return undefined;
    }
  }
  flow.addNode(Clear, { id: 'clear' });
  await runFlow(flow, { dataDir, runId: 'import-empty', input: { a: 1 } });
  expect((await loadRunPoint({ dataDir, runId: 'import-empty', step: 1 })).state.items).toEqual({});
});
