/**
 * Under a secret-named key only a Backpack item as the stores write one (an item's fields, an item's metadata) keeps
 * its provenance; any other object holding a `metadata` object has every string blanked (review s35, finding 1): a
 * Kubernetes Secret's `last-applied-configuration` annotation holds its data in clear, and a custom event's
 * `{ credentials: { metadata: { note } } }` wrote the note to events.jsonl.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { filesHolding } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

const B64 = Buffer.from('hunter2-db-pass').toString('base64'); // aHVudGVyMi1kYi1wYXNz
const k8sSecret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    name: 'db',
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({ apiVersion: 'v1', data: { 'database-url': B64 }, kind: 'Secret', metadata: { name: 'db' } }) },
  },
  data: { 'database-url': B64 },
};

describe('an item-shaped object under a secret-named key', () => {
  it('redact(): every string under a secret-named key is blanked, metadata too', () => {
    expect(JSON.stringify(redact({ credentials: { meta: { note: 'plain-hunter4' } } }).value)).not.toContain('hunter4');
    expect(JSON.stringify(redact({ secret: k8sSecret }).value)).not.toContain(B64);
    expect(JSON.stringify(redact({ credentials: { metadata: { note: 'plain-hunter5' }, value: 'x' } }).value)).not.toContain('hunter5');
    expect(JSON.stringify(redact({ password: { metadata: {}, accessControl: 'plain-hunter6' } }).value)).not.toContain('hunter6');
  });

  class Packs extends BackpackNode {
    override post(b: BackpackHandle): undefined {
      b.pack('secret', k8sSecret);
      this.emitEvent('custom', { credentials: { metadata: { note: 'plain-hunter5' }, value: 'x' } });
      return undefined;
    }
  }

  it.each([1, 100])('a run: not on disk, nor read back (keyframe interval %i)', async (keyframeInterval) => {
    const dataDir = makeTempDir('bf-item-item-', 'test');
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(Packs, { id: 'n' });
    await runFlow(flow, { dataDir, runId: 'r', keyframeInterval });
    const state = JSON.stringify((await loadRunPoint({ dataDir, runId: 'r', step: 1 })).state.items);
    expect(state.includes(B64), 'loadRunPoint').toBe(false);
    expect(filesHolding(dataDir, B64).map((f) => f.slice(dataDir.length)), 'files').toEqual([]);
    expect(filesHolding(dataDir, 'hunter5').map((f) => f.slice(dataDir.length)), 'custom event').toEqual([]);
  });
});
