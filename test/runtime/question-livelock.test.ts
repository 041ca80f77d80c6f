/**
 * An answer schema with a function default (`.default(() => new Date().toISOString())`, `randomUUID()`) is the same
 * question each time: zod writes the default's value into the JSON Schema each time it converts it, and comparing
 * that made every resume "the question changed", for ever. Questions are compared without `default` and `examples`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

function build(schema: () => z.ZodType): Flow {
  class Ask extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      backpack.pack('answer', await this.interrupt({ question: 'Schedule the maintenance window?' }, { schema: schema() }));
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'ops' });
  flow.addNode(Ask, { id: 'ask' });
  return flow;
}

const cases: [string, () => z.ZodType][] = [
  ['a default of the time', () => z.object({ approve: z.boolean(), requestedAt: z.string().default(() => new Date().toISOString()) })],
  ['a default of a random id', () => z.object({ approve: z.boolean(), ticket: z.string().default(() => randomUUID()) })],
];

describe('an answer to the same question is taken (no livelock)', () => {
  for (const [what, schema] of cases) {
    it(`${what} in the answer schema: the third answer at the latest is taken`, async () => {
      const dataDir = makeTempDir('question-livelock-', 'test');
      let result = await runFlow(build(schema), { dataDir, runId: 'window' });
      const outcomes: string[] = [];
      for (let attempt = 0; attempt < 3 && result.status === 'waiting'; attempt++) {
        await new Promise((r) => setTimeout(r, 5));
        const next = await resumeRun(build(schema), { dataDir, runId: 'window', resume: { approve: true }, answering: result.interrupt!.pause }).then(
          (r) => r,
          (e: Error) => e,
        );
        if (next instanceof Error) {
          outcomes.push(next.message);
          const { listedRun } = await import('../../src/index.js');
          const meta = await listedRun({ dataDir, runId: 'window' });
          result = { ...result, status: meta!.status as 'waiting', interrupt: meta!.interrupt };
        } else result = next;
      }
      expect({ status: result.status, refusals: outcomes.filter((m) => m.includes('the question changed')).length }).toEqual({ status: 'completed', refusals: 0 });
    });
  }
});
