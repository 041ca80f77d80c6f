/**
 * Audit s38: an answer is handed to a question the person never saw.
 *
 * Answers are matched to interrupt calls only by position (namespace + the call's index in the execution). When the
 * node runs again from prep on resume, whatever it asks at index 0 gets the recorded answer, even when the question
 * it asks now is not the one the person answered: the payload is never compared with the recorded pause's. A node
 * that follows the README's rule ("read before you ask, write after") and reads a value that changed meanwhile (the
 * amount of a transfer, from an API or a file) asks "Transfer $10000?", and gets the `approved: true` the person gave
 * to "Transfer $100?". The same happens to a node that asks about several items whose calls' order depends on I/O
 * timing (answers swap between items).
 *
 * Promise (brief 1): a paused run resumes with exactly the person's answer, to the question they answered; an
 * answer to the wrong interrupt is refused (the run should wait again, with the new question).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';

it('an approval given to "Transfer $100?" is not handed to "Transfer $10000?" when the node asks again', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'audit-s38-'));
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

  // Promised: the person approved $100; nothing of $10000 is transferred on that answer, and the run asks again.
  expect(transferred).toEqual([]);
  expect(result).toMatchObject({ status: 'waiting', interrupt: { payload: { question: 'Transfer $10000?' } } });
});
