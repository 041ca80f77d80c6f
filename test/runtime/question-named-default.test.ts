/**
 * Comparing questions leaves out the schema's `default` and `examples` keywords, never a property named `default`:
 * `{ default: boolean }` about staging and about production are different questions (review s40: the approval for
 * staging made production the default).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { questionText } from '../../src/runtime/interrupts.js';

it('questions differing in a property named "default" are different questions (unit)', () => {
  const a = z.toJSONSchema(z.object({ default: z.boolean().describe('Make staging the default branch?') }), { io: 'input' });
  const b = z.toJSONSchema(z.object({ default: z.boolean().describe('Make production the default branch?') }), { io: 'input' });
  expect(questionText({ payload: 'confirm', schema: a })).not.toBe(questionText({ payload: 'confirm', schema: b }));
  const c = z.toJSONSchema(z.object({ examples: z.enum(['keep']) }), { io: 'input' });
  const d = z.toJSONSchema(z.object({ examples: z.enum(['delete-all']) }), { io: 'input' });
  expect(questionText({ payload: 'confirm', schema: c })).not.toBe(questionText({ payload: 'confirm', schema: d }));
});

it('an approval to make staging the default branch is not handed to the question about production', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'question-named-default-'));
  const config = join(dataDir, 'branch.json');
  writeFileSync(config, JSON.stringify({ branch: 'staging' }));
  const made: string[] = [];
  const build = (): Flow => {
    class SetDefault extends BackpackNode {
      override async prep(): Promise<string> {
        return (JSON.parse(readFileSync(config, 'utf8')) as { branch: string }).branch;
      }
      override async post(backpack: BackpackHandle, branch: string): Promise<undefined> {
        const schema = z.object({ default: z.boolean().describe(`Make ${branch} the default branch?`) });
        const answer = await this.interrupt('Please confirm', { schema });
        if (answer.default) made.push(branch);
        backpack.pack('made', answer.default);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'repo' });
    flow.addNode(SetDefault, { id: 'set-default' });
    return flow;
  };
  const paused = await runFlow(build(), { dataDir, runId: 'b1' });
  expect(paused.status).toBe('waiting');
  writeFileSync(config, JSON.stringify({ branch: 'production' })); // changed while the run waited
  const result = await resumeRun(build(), { dataDir, runId: 'b1', resume: { default: true }, answering: paused.interrupt!.pause }).catch((e: Error) => e);
  expect(made).toEqual([]);
  // Refused as "the question changed" (what a field named otherwise gets: the run keeps waiting, asked again).
  expect(result instanceof Error ? result.message : `resumed: ${JSON.stringify(result)}`).toMatch(/question changed/);
});
