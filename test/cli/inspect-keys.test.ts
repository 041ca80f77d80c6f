/**
 * Keys are data: a run may pack `constructor`, `toString`, `hasOwnProperty`, `valueOf` or `__proto__`. `runs diff` and
 * `runs blame` (and the Studio, which serves the same reports) must report them like any other key, never read the
 * names every object inherits (a server error, or changes a hostile run could hide).
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { cliJson, tempDir } from './helpers.js';

class Step extends BackpackNode {
  override post(backpack: BackpackHandle): string | undefined {
    const step = (backpack.unpack('step') as number | undefined) ?? 0;
    if (step === 0) for (const key of ['constructor', 'toString', 'hasOwnProperty', '__proto__']) backpack.pack(key, `v0-${key}`);
    if (step === 1) {
      backpack.delete('constructor');
      backpack.delete('toString');
      backpack.pack('valueOf', 'v1-valueOf');
      backpack.pack('hasOwnProperty', 'v1-hasOwnProperty');
    }
    backpack.pack('step', step + 1);
    return step + 1 < 2 ? 'again' : undefined;
  }
}

describe('runs diff and runs blame over keys named like what every object inherits', () => {
  it('report every change of them, as of any key', async () => {
    const dataDir = tempDir();
    const flow = new Flow({ namespace: 'app' });
    const node = flow.addNode(Step, { id: 'step' });
    node.on('again', node);
    await runFlow(flow, { dataDir, runId: 'h1' });
    const d = ['--data-dir', dataDir];
    const diff = await cliJson<{ changes: { key: string; change: string }[] }>(['runs', 'diff', 'h1', '--from', '1', '--to', '2', ...d]);
    expect(diff.changes.map((c) => [c.key, c.change]).sort()).toEqual(
      [
        ['constructor', 'deleted'],
        ['hasOwnProperty', 'modified'],
        ['step', 'modified'],
        ['toString', 'deleted'],
        ['valueOf', 'added'],
      ].sort(),
    );
    const all = await cliJson<{ changes: { key: string; change: string }[] }>(['runs', 'diff', 'h1', '--from', '0', '--to', '2', ...d]);
    expect(all.changes.map((c) => c.key).sort()).toEqual(['__proto__', 'hasOwnProperty', 'step', 'valueOf'].sort());
    for (const key of ['constructor', 'toString', 'valueOf', '__proto__', 'hasOwnProperty']) {
      const blame = await cliJson<{ writes: { summary: string }[] }>(['runs', 'blame', 'h1', key, ...d]);
      expect(blame.writes.length, key).toBeGreaterThan(0);
    }
  });
});
