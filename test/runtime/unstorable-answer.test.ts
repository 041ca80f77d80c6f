/**
 * An answer is recorded (`interrupt.answered`) before the node runs again (README "Human in the loop"). So an answer
 * the run's log cannot hold (a BigInt given through the API, a cycle, nesting deeper than redaction checks) is refused
 * by resumeRun before anything is written, and the run keeps waiting; and the batch that records an answer is
 * committed before the node runs, its failure failing the run, never swallowed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, FileRunStore, Flow, InterruptAnswerError, listRuns, resumeRun, runFlow, type BackpackHandle, type RunStore, type RunWriter, type StreamEvent } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

const logOf = (dataDir: string, runId: string): string => readFileSync(join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl'), 'utf8');

/** A node that asks two questions; `seen` gets each first answer it was given. */
function twoQuestions(seen: unknown[]): Flow {
  class Ask extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      const amount = await this.interrupt('How much?');
      seen.push(amount);
      const ok = await this.interrupt('Sure?');
      backpack.pack('decision', { amount: String(amount), ok });
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'pay' });
  flow.addNode(Ask, { id: 'ask' });
  return flow;
}

/** A node with one question whose answer it acts on: `effects.count` is how often it did. */
function oneQuestion(effects: { count: number }): Flow {
  class Approve extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      const answer = await this.interrupt('Approve?', { schema: z.object({ ok: z.boolean(), note: z.unknown() }) });
      effects.count++; // e.g. the post is published
      backpack.pack('approved', answer.ok);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'pub' });
  flow.addNode(Approve, { id: 'approve' });
  return flow;
}

function deep(levels: number): unknown {
  let value: unknown = 'x';
  for (let i = 0; i < levels; i++) value = { n: value };
  return value;
}

const cyclic = (): unknown => {
  const value: Record<string, unknown> = { ok: true };
  value.self = value;
  return value;
};

describe('an answer the run log cannot hold', () => {
  it.each([
    ['a BigInt', 10n, /BigInt/],
    // Redaction walks the answer: a cycle overflows the stack or its depth limit first. Nesting past the bound of
    // everything from outside (MAX_JSON_NESTING) is refused at its JSON pointer before that.
    ['a cyclic object', cyclic(), /nested deeper than|circular|call stack/],
    ['JSON nested 100,000 deep', deep(100_000), /is nested too deeply: \/\w+\/.*nested more than 512 levels deep/],
  ])('%s is refused before anything is written or the node runs; the run keeps waiting for a good one', async (_name, answer, why) => {
    const seen: unknown[] = [];
    const dataDir = makeTempDir('unstorable-answer-', 'test');
    await runFlow(twoQuestions(seen), { dataDir, runId: 'pay-1' });
    const before = logOf(dataDir, 'pay-1');

    const error = await resumeRun(twoQuestions(seen), { dataDir, runId: 'pay-1', resume: answer }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InterruptAnswerError);
    expect((error as Error).message).toMatch(/^The answer to node 'ask' \(pay\.ask\), interrupt 0, (cannot be stored in the run's log: \(the answer\)|is nested too deeply): /);
    expect((error as Error).message).toMatch(why);
    expect((error as Error).message).toMatch(/the run is still waiting$/);
    expect(seen).toEqual([]);
    expect(logOf(dataDir, 'pay-1')).toBe(before);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'waiting', interrupt: { nodeId: 'ask', index: 0 } });

    // A storable answer is then recorded, and given again to the node when its second question is answered.
    await expect(resumeRun(twoQuestions(seen), { dataDir, runId: 'pay-1', resume: 10 })).resolves.toMatchObject({ status: 'waiting', interrupt: { index: 1 } });
    expect(logOf(dataDir, 'pay-1')).toMatch(/"type":"interrupt.answered".*"index":0,"answer":10/);
    await expect(resumeRun(twoQuestions(seen), { dataDir, runId: 'pay-1', resume: true })).resolves.toMatchObject({ status: 'completed' });
    expect(seen).toEqual([10, 10]);
  });

  it("is refused when the node's schema takes it, so the node never acts on an answer its run did not record", async () => {
    const effects = { count: 0 };
    const dataDir = makeTempDir('unstorable-answer-', 'test');
    await runFlow(oneQuestion(effects), { dataDir, runId: 'pub-1' });
    await expect(resumeRun(oneQuestion(effects), { dataDir, runId: 'pub-1', resume: { ok: true, note: deep(100_000) } })).rejects.toBeInstanceOf(InterruptAnswerError);
    expect(effects.count).toBe(0);
    expect((await listRuns({ dataDir }))[0]!.status).toBe('waiting');
    await expect(resumeRun(oneQuestion(effects), { dataDir, runId: 'pub-1', resume: { ok: true, note: deep(100) } })).resolves.toMatchObject({ status: 'completed' });
    expect(effects.count).toBe(1);
  });
});

/**
 * The files of `dataDir`, whose writers take a moment to commit (as a database does) and fail the batch that records an
 * answer: the disk filled up just then.
 */
function failingAnswerStore(dataDir: string): RunStore {
  const store = new FileRunStore(dataDir);
  const slow = (writer: RunWriter): RunWriter =>
    new Proxy(writer, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown;
        if (property === 'commit') {
          return async (events: StreamEvent[]) => {
            await new Promise((resolve) => setTimeout(resolve, 20));
            if (events.some((event) => event.type === 'interrupt.answered')) throw new Error('ENOSPC: no space left on device');
            return target.commit(events);
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (property === 'openWriter') return async (...args: Parameters<RunStore['openWriter']>) => slow(await target.openWriter(...args));
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('the batch that records an answer', () => {
  it('is committed before the node runs again; when it fails, the run fails with that error and the node never ran', async () => {
    const effects = { count: 0 };
    const dataDir = makeTempDir('unstorable-answer-', 'test');
    await runFlow(oneQuestion(effects), { dataDir, runId: 'pub-2' });
    const store = failingAnswerStore(dataDir);
    await expect(resumeRun(oneQuestion(effects), { store, runId: 'pub-2', resume: { ok: true, note: 'ship it' } })).rejects.toThrow(/ENOSPC/);
    expect(effects.count).toBe(0);
    expect(logOf(dataDir, 'pub-2')).not.toContain('"type":"interrupt.answered"');
    const [meta] = await listRuns({ dataDir });
    expect(meta).toMatchObject({ status: 'failed', error: expect.stringMatching(/ENOSPC/) });

    // Nothing was recorded of the answer: resumed without one, the node asks again.
    await expect(resumeRun(oneQuestion(effects), { dataDir, runId: 'pub-2' })).resolves.toMatchObject({ status: 'waiting', interrupt: { nodeId: 'approve', index: 0 } });
    expect(effects.count).toBe(0);
  });
});
