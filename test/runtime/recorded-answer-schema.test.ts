/**
 * resumeRun checks an answer against the JSON Schema recorded with the pause before anything is written. That schema
 * is what the node's zod schema accepts (its input), so the check refuses no answer the node would take: extra keys
 * on a plain z.object (which strips them), a field left out that has a default. A strict object stays strict.
 */
import { describe, expect, it } from 'vitest';
import { z, type ZodType } from 'zod';
import { BackpackNode, Flow, InterruptAnswerError, listRuns, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** A flow whose node asks for an answer of `schema` and packs what its interrupt returned. */
function asking(schema: ZodType): Flow {
  class Ask extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      backpack.pack('answer', await this.interrupt('Publish?', { schema }));
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'a' });
  flow.addNode(Ask, { id: 'ask' });
  return flow;
}

describe('the recorded schema of an answer', () => {
  it.each([
    ['extra keys on a plain object', z.object({ approved: z.boolean() }), { approved: true, comment: 'looks good' }, { approved: true }],
    ['a field with a default left out', z.object({ approved: z.boolean(), copies: z.number().default(1) }), { approved: true }, { approved: true, copies: 1 }],
    ['a string the schema transforms', z.string().transform((s) => s.length), 'four', 4],
  ])('refuses no answer the node takes: %s', async (_name, schema, answer, received) => {
    expect((schema as ZodType).safeParse(answer).success).toBe(true);
    const dataDir = makeTempDir('answer-schema-', 'test');
    const flow = asking(schema);
    await runFlow(flow, { dataDir, runId: 's-1' });
    await expect(resumeRun(flow, { dataDir, runId: 's-1', resume: answer })).resolves.toMatchObject({ status: 'completed' });
    expect(flow.backpack.unpack('answer')).toEqual(received);
  });

  it('keeps a strict object strict: an extra key is refused at resume, naming it, and the run keeps waiting', async () => {
    const dataDir = makeTempDir('answer-schema-', 'test');
    const flow = asking(z.strictObject({ approved: z.boolean() }));
    await runFlow(flow, { dataDir, runId: 's-2' });
    const error = await resumeRun(flow, { dataDir, runId: 's-2', resume: { approved: true, comment: 'x' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InterruptAnswerError);
    expect((error as Error).message).toMatch(/does not match its schema: .*comment/);
    expect((await listRuns({ dataDir }))[0]!.status).toBe('waiting');
  });
});
