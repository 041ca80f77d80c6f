/**
 * An answer answers the question it was given to: when the node, run again from prep on resume, asks something else
 * (it read a value that changed while the run waited: "Transfer $10000?" where the person approved "Transfer $100?"),
 * the answer is not handed to it. The resume is refused with an InterruptAnswerError saying so, and the run waits
 * again with the new question. Before, answers were matched by position alone.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { filesHolding } from '../support/files.js';
import { BackpackNode, Flow, InterruptAnswerError, listedRun, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';

it('an approval given to "Transfer $100?" is not handed to "Transfer $10000?" when the node asks again', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'question-changed-'));
  const pending = join(dataDir, 'pending-transfer.json'); // stands for an external system the node reads
  writeFileSync(pending, JSON.stringify({ amount: 100 }));
  const transferred: number[] = [];
  const build = (): Flow => {
    class Transfer extends BackpackNode {
      override async prep(): Promise<number> {
        return (JSON.parse(readFileSync(pending, 'utf8')) as { amount: number }).amount; // read before you ask
      }
      override async post(backpack: BackpackHandle, amount: number): Promise<undefined> {
        const { approved } = await this.interrupt({ question: `Transfer $${amount}?` }, { schema: z.object({ approved: z.boolean() }) });
        if (approved) transferred.push(amount); // write after
        backpack.pack('transferred', approved ? amount : 0);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'bank' });
    flow.addNode(Transfer, { id: 'transfer' });
    return flow;
  };
  const paused = await runFlow(build(), { dataDir, runId: 't1' });
  expect(paused.interrupt?.payload).toEqual({ question: 'Transfer $100?' });

  writeFileSync(pending, JSON.stringify({ amount: 10_000 })); // the pending transfer changed while the run waited
  const result = await resumeRun(build(), { dataDir, runId: 't1', resume: { approved: true } }).catch((e: Error) => e);

  // The person approved $100: nothing of $10000 is transferred on that answer, and the run asks again.
  expect(transferred).toEqual([]);
  expect(result).toBeInstanceOf(InterruptAnswerError);
  expect((result as Error).message).toContain('the question changed since this answer was given');
  const waiting = await listedRun({ dataDir, runId: 't1' });
  expect(waiting).toMatchObject({ status: 'waiting', interrupt: { payload: { question: 'Transfer $10000?' } } });

  // The answer to the question it asks now is used; and a question that did not change keeps its answer (a second
  // interrupt after it, answered in turn, sees the first one's answer again when the node runs from prep).
  const done = await resumeRun(build(), { dataDir, runId: 't1', resume: { approved: true }, answering: waiting!.interrupt!.pause });
  expect(done.status).toBe('completed');
  expect(transferred).toEqual([10_000]);
});

it('a question that did not change keeps its answer, also when the log stores it redacted (a secret in the question)', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'question-same-'));
  const seen: unknown[] = [];
  const build = (): Flow => {
    class Rotate extends BackpackNode {
      override async post(backpack: BackpackHandle): Promise<undefined> {
        // The question quotes a credential: the log keeps it redacted, the node asks it in clear.
        const first = await this.interrupt({ question: 'Rotate this key?', key: 'sk_live_4eC39HqLyjWDarjtT1zdp7dc' }, { schema: z.object({ ok: z.boolean() }) });
        const second = await this.interrupt({ question: 'Notify the team?' }, { schema: z.object({ ok: z.boolean() }) });
        seen.push([first, second]);
        backpack.pack('done', first.ok && second.ok);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'keys' });
    flow.addNode(Rotate, { id: 'rotate' });
    return flow;
  };
  const first = await runFlow(build(), { dataDir, runId: 'k1' });
  const second = await resumeRun(build(), { dataDir, runId: 'k1', resume: { ok: true }, answering: first.interrupt!.pause });
  // The node ran again from prep: its first question, unchanged, got its recorded answer back and it asked the second.
  expect(second).toMatchObject({ status: 'waiting', interrupt: { index: 1, payload: { question: 'Notify the team?' } } });
  expect((await resumeRun(build(), { dataDir, runId: 'k1', resume: { ok: true }, answering: second.interrupt!.pause })).status).toBe('completed');
  expect(seen).toEqual([[{ ok: true }, { ok: true }]]);
  expect(filesHolding(dataDir, 'sk_live_4eC39HqLyjWDarjtT1zdp7dc')).toEqual([]);
});
