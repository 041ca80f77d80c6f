/**
 * Only an object with exactly an item's fields, an item's metadata fields and an item's rules keeps its provenance
 * under a secret-named key (review s36, finding 3): one with more fields in its `metadata` or `accessControl` kept
 * those plain strings in keyframes and what `loadRunPoint` returns.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { filesHolding } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

const meta = { timestamp: 1700000000000, version: 3, tags: ['prod'] };
const leaky = { value: 'x', metadata: { ...meta, description: 'db admin: plain-hunter7' }, accessControl: { note: 'plain-hunter8' } };
const s = (v: unknown): string => JSON.stringify(redact(v).value);

describe('an object with an item metadata that is not an item', () => {
  it('control: without tags, every string is blanked', () => {
    const { tags: _t, ...noTags } = leaky.metadata;
    expect(s({ secret: { ...leaky, metadata: noTags } })).not.toMatch(/hunter[78]/);
  });
  it.each([
    ['right under a secret-named key', { secret: leaky }],
    ['a sibling-named value', { name: 'DB_PASSWORD', value: leaky }],
    ['a [secret-name, value] pair', [['password', leaky]]],
    ["a secret structure's value field", { credentials: { value: leaky, version: 'v1' } }],
  ])('redact(): %s', (_name, input) => {
    expect(s(input)).not.toMatch(/hunter[78]/);
  });

  class Packs extends BackpackNode {
    override post(b: BackpackHandle): undefined {
      b.pack('secret', leaky);
      this.emitEvent('custom', { credentials: leaky });
      return undefined;
    }
  }
  it.each([1, 100])('a run: not on disk, nor read back (keyframe interval %i)', async (keyframeInterval) => {
    const dataDir = makeTempDir('bf-s36-item-', 'test');
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(Packs, { id: 'n' });
    await runFlow(flow, { dataDir, runId: 'r', keyframeInterval });
    const state = JSON.stringify((await loadRunPoint({ dataDir, runId: 'r', step: 1 })).state.items);
    expect(state, 'loadRunPoint').not.toMatch(/hunter[78]/);
    expect(filesHolding(dataDir, 'hunter7').map((f) => f.slice(dataDir.length)), 'files').toEqual([]);
  });
});
