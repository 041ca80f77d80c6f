/**
 * `runs diff` of a key quarantined, packed again and quarantined again in one step: the change names the item that
 * is quarantined at the later step (its value, writer and reason), and says it replaced the value the key had.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/index.js';
import { runFlow } from '../../src/runtime/index.js';
import { diffStates } from '../../src/cli/backpackflow/inspect.js';
import { renderDiff } from '../../src/cli/backpackflow/render.js';
import { loadRunPoint } from '../../src/runtime/index.js';
import { makeTempDir } from '../support/temp.js';

function quarantiningTwice(): Flow {
  class W extends BackpackNode {
    override async post(): Promise<undefined> {
      this.backpack.pack('bad', 'evil');
      return undefined;
    }
  }
  class Q extends BackpackNode {
    override async post(): Promise<undefined> {
      this.backpack.quarantine('bad', { reason: 'looks evil' });
      this.backpack.pack('bad', 'replacement');
      this.backpack.quarantine('bad', { reason: 'again' });
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'q' });
  flow.addNode(W, { id: 'w' }).next(flow.addNode(Q, { id: 'qq' }));
  return flow;
}

describe('runs diff of a quarantine', () => {
  it('shows the quarantined item itself, and that it replaced the earlier value', async () => {
    const dataDir = makeTempDir('bpf-records-', 'file');
    await runFlow(quarantiningTwice(), { dataDir, runId: 'q' });
    const [from, to] = await Promise.all([1, 2].map((step) => loadRunPoint({ dataDir, runId: 'q', step })));
    const report = diffStates('q', from!, to!);
    expect(report.changes).toHaveLength(1);
    const change = report.changes[0]!;
    expect(change).toMatchObject({ key: 'bad', change: 'quarantined', before: '"evil"', by: { nodeId: 'w' } });
    expect(change.quarantine).toMatchObject({ reason: 'again', nodeId: 'qq', summary: '"replacement"', by: { nodeId: 'qq', version: 1 }, replaced: true });
    expect(to!.state.quarantined['bad']?.value).toBe('replacement');
    const text = renderDiff(report);
    expect(text).toContain('⊘ bad = "replacement" (written by qq @ q.qq) quarantined by qq: again; it replaced "evil" (written by w @ q.w)');
  });
});
