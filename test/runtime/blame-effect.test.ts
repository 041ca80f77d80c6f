/**
 * `runs blame` lists the writes that took effect, each in the state at the step it names: a write of a step that
 * failed, or of a node before it paused for an answer, is rolled back (listed apart, with why); a fork's inherited
 * value names the run and step it was forked from. Run through the CLI's `main` from the sources, on real runs.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow } from '../../src/index.js';
import { forkRun, loadRunPoint, resumeRun, runFlow } from '../../src/runtime/index.js';
import { main } from '../../src/cli/backpackflow/program.js';
import type { BlameReport } from '../../src/cli/backpackflow/inspect.js';
import { RunReader } from '../../src/studio/run-reader.js';
import { FileRunStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';

/** `backpackflow <args>` in this process: its exit code and stdout. */
async function cli(args: string[]): Promise<{ code: number; stdout: string }> {
  const out: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return true;
  });
  try {
    const code = await main(['node', 'backpackflow', ...args]);
    return { code, stdout: out.join('') };
  } finally {
    spy.mockRestore();
    process.exitCode = undefined;
  }
}

async function blameOf(dataDir: string, runId: string, key: string): Promise<BlameReport> {
  const { code, stdout } = await cli(['runs', 'blame', runId, key, '--json', '--data-dir', dataDir]);
  expect(code).toBe(0);
  return JSON.parse(stdout) as BlameReport;
}

/** Every listed write is the key's item in the state at the step it names (a quarantine: the key is quarantined). */
async function expectInState(dataDir: string, report: BlameReport): Promise<void> {
  for (const w of report.writes) {
    const { state } = await loadRunPoint({ dataDir, runId: report.runId, step: w.step });
    const item = w.action === 'quarantine' ? state.quarantined[report.key] : state.items[report.key];
    expect(item?.metadata.version, `${report.key} at step ${w.step}`).toBe(w.version);
  }
}

let failOnce = false;
/** n0 → n1 → n2 → n3, each packing `k<i>` and `last`; n2 throws after packing while failOnce is set. */
function chain(): Flow {
  const flow = new Flow({ namespace: 'L' });
  const nodes = [0, 1, 2, 3].map((i) => {
    class N extends BackpackNode {
      override async post(): Promise<undefined> {
        this.backpack.pack(`k${i}`, i);
        this.backpack.pack('last', i);
        if (i === 2 && failOnce) {
          failOnce = false;
          throw new Error('boom after pack');
        }
        return undefined;
      }
    }
    return flow.addNode(N, { id: `n${i}` });
  });
  for (let i = 0; i + 1 < nodes.length; i++) nodes[i]!.next(nodes[i + 1]!);
  return flow;
}

/** pre → ask (packs `before`, then asks) → post. */
function asking(): Flow {
  class Pre extends BackpackNode {
    override async post(): Promise<undefined> {
      this.backpack.pack('pre', 1);
      return undefined;
    }
  }
  class Ask extends BackpackNode {
    override async post(): Promise<undefined> {
      this.backpack.pack('before', 'asked');
      const answer = await this.interrupt({ q: 'ok?' }, { schema: z.object({ ok: z.boolean() }) });
      this.backpack.pack('answer', answer.ok);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'h' });
  flow.addNode(Pre, { id: 'pre' }).next(flow.addNode(Ask, { id: 'ask' }));
  return flow;
}

afterEach(() => {
  failOnce = false;
});

describe('runs blame', () => {
  it("leaves out a failed step's writes as rolled back, and lists the resumed step's once", async () => {
    const dataDir = makeTempDir('bpf-blame-', 'file');
    failOnce = true;
    await expect(runFlow(chain(), { dataDir, runId: 'r' })).rejects.toThrow('boom after pack');
    await resumeRun(chain(), { dataDir, runId: 'r' });
    const k2 = await blameOf(dataDir, 'r', 'k2');
    expect(k2.writes.map((w) => [w.step, w.nodeId, w.version, w.summary])).toEqual([[3, 'n2', 1, '2']]);
    expect(k2.rolledBack?.map((w) => [w.step, w.nodeId, w.why])).toEqual([[3, 'n2', 'its step failed']]);
    expect(k2.rolledBack![0]!.seq).toBeLessThan(k2.writes[0]!.seq!);
    const last = await blameOf(dataDir, 'r', 'last');
    expect(last.writes.map((w) => [w.step, w.version])).toEqual([[1, 1], [2, 2], [3, 3], [4, 4]]);
    await expectInState(dataDir, last);
    await expectInState(dataDir, k2);
    // The studio serves the same report.
    const reader = new RunReader(new FileRunStore(dataDir), { close: async () => {} } as never);
    expect(await reader.blame({ session: 'default', runId: 'r' }, 'k2')).toEqual(k2);
    const human = await cli(['runs', 'blame', 'r', 'k2', '--data-dir', dataDir]);
    expect(human.stdout.split('\n').filter((l) => /^3\s/.test(l))).toHaveLength(1);
    expect(human.stdout).toContain('rolled back');
  });

  it("leaves out what a node packed before it paused; a fork's inherited value names where it came from", async () => {
    const dataDir = makeTempDir('bpf-blame-', 'file');
    expect((await runFlow(asking(), { dataDir, runId: 'w' })).status).toBe('waiting');
    let before = await blameOf(dataDir, 'w', 'before');
    expect(before.writes).toEqual([]);
    expect(before.rolledBack?.map((w) => [w.step, w.nodeId, w.why])).toEqual([[2, 'ask', expect.stringContaining('paused')]]);

    await resumeRun(asking(), { dataDir, runId: 'w', resume: { ok: true } });
    before = await blameOf(dataDir, 'w', 'before');
    expect(before.writes.map((w) => [w.step, w.nodeId])).toEqual([[2, 'ask']]);
    expect(before.rolledBack).toHaveLength(1);
    await expectInState(dataDir, before);

    await forkRun(asking(), { dataDir, runId: 'w', atStep: 1, newRunId: 'f' });
    const pre = await blameOf(dataDir, 'f', 'pre');
    expect(pre.writes.map((w) => [w.step, w.seq, w.nodeId, w.inheritedFrom])).toEqual([[1, null, 'pre', { runId: 'w', step: 1 }]]);
    const human = await cli(['runs', 'blame', 'f', 'pre', '--data-dir', dataDir]);
    expect(human.stdout).toContain('inherited from w step 1');
    // The original run's value at step 1 is its own write, not an inherited one.
    expect((await blameOf(dataDir, 'w', 'pre')).writes.map((w) => [w.step, w.inheritedFrom])).toEqual([[1, undefined]]);
  });
});
