/**
 * A Flow holds the state of its runs (its Backpack). Two top-level runs of one Flow at once would share that state,
 * and a durable run records its whole start: so a second run of a Flow while one is under way is refused, and so is a
 * `runFlow` of a Flow that has run (its record would start from another run's state: another user's data in a server
 * that built its flow once). `flow.run` goes on from what the last run left (a conversation in memory); `resumeRun`
 * and `forkRun` replace the whole state, so they take a Flow that ran. Also: `runFlow`'s input must be an object,
 * `forkRun` needs `atStep`, and the events of packing a run's input carry the run's id.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, FlowError, StreamEventType, forkRun, loadRunPoint, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** Answers its `question` after `gate` opens (so that a test can hold a run in its step), saying what else it saw. */
function answering(gate?: Promise<void>): Flow {
  class Answer extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      await gate;
      const seen = backpack.keys().filter((k) => k !== 'question' && k !== 'answer');
      backpack.pack('answer', `answer to ${String(backpack.unpack('question'))}; also saw [${seen.join(',')}]`);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'qa' });
  flow.addNode(Answer, { id: 'answer' });
  return flow;
}

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

const runFolder = (dataDir: string, runId: string): string => join(dataDir, 'sessions', 'default', 'runs', runId);

describe('one Flow, several runs', () => {
  it('a second flow.run while one is under way is refused before its input touches the first run', async () => {
    const g = gate();
    const flow = answering(g.opened);
    const first = flow.run({ question: 'alice', userSecret: 'alice-pin' }, { runId: 'alice' });
    const second = await flow.run({ question: 'bob' }, { runId: 'bob' }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(FlowError);
    expect((second as Error).message).toContain(`Flow 'qa' is running run "alice" (flow.run)`);
    expect((second as Error).message).toContain('build a Flow for each run');
    g.open();
    await first;
    expect(flow.backpack.peek('answer')).toBe('answer to alice; also saw [userSecret]');
    expect(flow.eventStreamer.getHistory().some((e) => e.runId === 'bob')).toBe(false);
  });

  it('flow.run goes on from what the last run left once it ended (a conversation in memory)', async () => {
    const flow = answering();
    await flow.run({ question: 'one', note: 'kept' });
    await flow.run({ question: 'two' });
    expect(flow.backpack.peek('answer')).toBe('answer to two; also saw [note]');
  });

  it('runFlow refuses a Flow that has run, in memory or durably, and writes nothing of the new run', async () => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    const inMemory = answering();
    await inMemory.run({ question: 'alice', userSecret: 'alice-pin' });
    const durable = answering();
    await runFlow(durable, { dataDir, runId: 'first', input: { question: 'alice', userSecret: 'alice-pin' } });
    for (const [flow, by] of [[inMemory, 'flow.run'], [durable, 'runFlow']] as const) {
      const runId = `again-${by.replace('.', '-')}`;
      const error = await runFlow(flow, { dataDir, runId, input: { question: 'bob' } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FlowError);
      expect((error as Error).message).toMatch(new RegExp(`^runFlow: Flow 'qa' has run \\(run "[^"]+" \\(${by.replace('.', '\\.')}\\)\\): its Backpack holds what that run left`));
      expect((error as Error).message).toContain('runFlow takes a Flow that has not run');
      expect(existsSync(runFolder(dataDir, runId)), runId).toBe(false);
      // Bob's input never reached the state Alice's run left.
      expect(flow.backpack.peek('question')).toBe('alice');
    }
  });

  it('two runFlow calls on one Flow at once: the second is refused, and the first records only its own input', async () => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    const g = gate();
    const flow = answering(g.opened);
    const c1 = runFlow(flow, { dataDir, runId: 'c1', input: { question: 'c1' } });
    const c2 = await runFlow(flow, { dataDir, runId: 'c2', input: { question: 'c2' } }).catch((e: unknown) => e);
    expect(c2).toBeInstanceOf(FlowError);
    expect((c2 as Error).message).toMatch(/^runFlow: Flow 'qa' is (running|being started for) run "c1" \(runFlow\): two runs of one Flow at once would share one state/);
    g.open();
    expect(await c1).toMatchObject({ status: 'completed' });
    const start = await loadRunPoint({ dataDir, runId: 'c1', step: 0 });
    expect(Object.keys(start.state.items)).toEqual(['question']);
    expect(flow.backpack.peek('answer')).toBe('answer to c1; also saw []');
    expect(existsSync(runFolder(dataDir, 'c2'))).toBe(false);
  });

  it('a flow.run is refused while a durable run of the Flow is under way, and the other way round', async () => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    const g = gate();
    const flow = answering(g.opened);
    const durable = runFlow(flow, { dataDir, runId: 'd1', input: { question: 'd1' } });
    await expect(flow.run({ question: 'mem' })).rejects.toThrow(/^run: Flow 'qa' is (running|being started for) run "d1" \(runFlow\)/);
    g.open();
    await durable;

    const h = gate();
    const other = answering(h.opened);
    const inMemory = other.run({ question: 'mem' }, { runId: 'mem' });
    await expect(runFlow(other, { dataDir, runId: 'd2' })).rejects.toThrow(`runFlow: Flow 'qa' is running run "mem" (flow.run)`);
    await expect(forkRun(other, { dataDir, runId: 'd1', atStep: 0, newRunId: 'f1' })).rejects.toThrow(`forkRun: Flow 'qa' is running run "mem" (flow.run)`);
    h.open();
    await inMemory;
    expect(existsSync(runFolder(dataDir, 'd2'))).toBe(false);
    expect(existsSync(runFolder(dataDir, 'f1'))).toBe(false);
  });

  it('resumeRun and forkRun take a Flow that ran: they replace its whole state', async () => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    class Ask extends BackpackNode {
      override async post(backpack: BackpackHandle): Promise<undefined> {
        backpack.pack('approved', await this.interrupt('Publish?', { schema: z.boolean() }));
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'doc' });
    flow.addNode(Ask, { id: 'ask' });
    expect(await runFlow(flow, { dataDir, runId: 'w', input: { draft: 'v1' } })).toMatchObject({ status: 'waiting' });
    flow.backpack.pack('stray', 'left by the caller');
    expect(await resumeRun(flow, { dataDir, runId: 'w', resume: true })).toMatchObject({ status: 'completed' });
    expect(flow.backpack.keys().sort()).toEqual(['approved', 'draft']);
    expect(await forkRun(flow, { dataDir, runId: 'w', atStep: 0, newRunId: 'w-fork' })).toMatchObject({ status: 'waiting' });
    expect(flow.backpack.keys()).toEqual(['draft']);
  });

  it('a runFlow that failed before its run started leaves the Flow to resumeRun and forkRun, not to another runFlow', async () => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    await runFlow(answering(), { dataDir, runId: 'taken', input: { question: 'first' } });
    const flow = answering();
    // The id has a recorded run: refused when the writer opens, after the input was packed.
    await expect(runFlow(flow, { dataDir, runId: 'taken', input: { question: 'second' } })).rejects.toThrow(/taken/);
    const again = await runFlow(flow, { dataDir, runId: 'other' }).catch((e: unknown) => e);
    expect((again as Error).message).toMatch(/^runFlow: Flow 'qa' was given to run "taken" \(runFlow\), which did not start \(see its error\): its Backpack may hold part of that run's input/);
    expect(await forkRun(flow, { dataDir, runId: 'taken', atStep: 0, newRunId: 'forked' })).toMatchObject({ status: 'completed' });
    expect(flow.backpack.peek('answer')).toBe('answer to first; also saw []');
  });
});

describe('runFlow and forkRun options', () => {
  it.each([
    ['a string', 'tides'],
    ['an array', ['tides']],
    ['null', null],
  ])('runFlow refuses %s as its input, naming it, before the run is written', async (kind, input) => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    const flow = answering();
    await expect(runFlow(flow, { dataDir, runId: 'r', input: input as never })).rejects.toThrow(`runFlow: input takes an object of backpack keys to values, got ${kind}`);
    expect(existsSync(runFolder(dataDir, 'r'))).toBe(false);
    expect(flow.backpack.keys()).toEqual([]);
    // Refused before the flow was taken: it still runs.
    await expect(runFlow(flow, { dataDir, runId: 'r', input: { question: 'q' } })).resolves.toMatchObject({ status: 'completed' });
  });

  it.each([
    ['left out', undefined, 'got undefined'],
    ['a string', '1', 'got a string'],
    ['negative', -1, 'got -1'],
    ['not an integer', 1.5, 'got 1.5'],
  ])('forkRun names atStep when it is %s', async (_name, atStep, got) => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    await runFlow(answering(), { dataDir, runId: 'base', input: { question: 'q' } });
    await expect(forkRun(answering(), { dataDir, runId: 'base', atStep: atStep as never, newRunId: 'f' })).rejects.toThrow(
      `forkRun: atStep (the step the fork starts from) must be an integer >= 0, ${got}`,
    );
  });

  it("the events of packing a run's input carry the run's id, in memory and durably", async () => {
    const flow = answering();
    await flow.run({ question: 'q', extra: 1 }, { runId: 'mem-run' });
    const packed = flow.eventStreamer.getHistory({ type: StreamEventType.BACKPACK_PACK }).filter((e) => e.payload.key === 'question' || e.payload.key === 'extra');
    expect(packed.map((e) => e.runId)).toEqual(['mem-run', 'mem-run']);
    const generated = answering();
    await generated.run({ question: 'q' });
    const runIds = new Set(generated.eventStreamer.getHistory().map((e) => e.runId));
    expect(runIds.size).toBe(1);
    const dataDir = makeTempDir('flow-reuse-', 'test');
    const durable = answering();
    await runFlow(durable, { dataDir, runId: 'durable-run', input: { question: 'q' } });
    expect(new Set(durable.eventStreamer.getHistory().map((e) => e.runId))).toEqual(new Set(['durable-run']));
  });
});

describe('a Flow subclass', () => {
  it('whose run awaits before calling super.run still runs durably, and its claim cannot be presented by another call', async () => {
    const dataDir = makeTempDir('flow-reuse-', 'test');
    class Traced extends Flow {
      readonly calls: string[] = [];
      override async run(input?: Record<string, unknown>, options?: Parameters<Flow['run']>[1]): Promise<string | undefined> {
        await new Promise((resolve) => setTimeout(resolve, 5));
        this.calls.push(options?.runId ?? '(none)');
        return super.run(input, options);
      }
    }
    class Step extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('done', true);
        return undefined;
      }
    }
    const flow = new Traced({ namespace: 'sub' });
    flow.addNode(Step, { id: 'step' });
    expect(await runFlow(flow, { dataDir, runId: 'sub-1' })).toMatchObject({ status: 'completed' });
    expect(flow.calls).toEqual(['sub-1']);
    // A plain run started while the durable one is under way (held in its step) is refused, not taken for it.
    const g = gate();
    class Held extends BackpackNode {
      override async post(): Promise<undefined> {
        await g.opened;
        return undefined;
      }
    }
    const other = new Traced({ namespace: 'sub' });
    other.addNode(Held, { id: 'held' });
    const durable = runFlow(other, { dataDir, runId: 'sub-2' });
    await expect(other.run(undefined, { runId: 'sub-2' })).rejects.toThrow(/is (being started for|running) run "sub-2" \(runFlow\)/);
    g.open();
    await expect(durable).resolves.toMatchObject({ status: 'completed' });
  });
});

describe('a second run of a Flow started from node code (review s42)', () => {
  it('is refused while the Flow runs, and its input never reaches that run', async () => {
    const g = gate();
    const shared = answering(g.opened);
    const alice = shared.run({ question: 'alice' }, { runId: 'alice' });

    let outcome: unknown = 'not called';
    class CallsSharedFlow extends BackpackNode {
      override async post(): Promise<undefined> {
        try {
          outcome = await shared.run({ injected: 'from another request' });
        } catch (error) {
          outcome = error;
        }
        return undefined;
      }
    }
    const other = new Flow({ namespace: 'other' });
    other.addNode(CallsSharedFlow, { id: 'caller' });
    const bob = other.run({});
    await new Promise((resolve) => setTimeout(resolve, 20));
    g.open();
    await bob;
    await alice;

    expect(outcome).toBeInstanceOf(FlowError);
    expect(shared.backpack.peek('injected')).toBeUndefined();
    expect(shared.backpack.peek('answer')).toBe('answer to alice; also saw []');
  });
});
