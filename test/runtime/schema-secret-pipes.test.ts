/**
 * A secret marked on the output side of a pipe (`z.string().trim().pipe(z.string().meta({ writeOnly: true }))`, a
 * codec, a pipe into an object with a secret field) is not in the recorded (input) schema: the whole answer is marked
 * then, so the log blanks it and the Studio masks it (review s40; it reached the run's files).
 */
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { blankSchemaSecrets } from '../../src/redact/index.js';
import { answerJsonSchema } from '../../src/nodes/interrupt.js';

const SECRET = '481-927-305';
const secret = () => z.string().meta({ writeOnly: true });

it.each([
  ['trim().pipe(secret)', z.object({ answer: z.string().trim().pipe(secret()) })],
  ['pipe(object with secret)', z.object({ answer: z.string() }).pipe(z.object({ answer: secret() }))],
  ['codec(string, secret)', z.object({ answer: z.codec(z.string(), secret(), { decode: (s) => s, encode: (s) => s }) })],
])('blankSchemaSecrets blanks a field marked secret on the output side: %s', (_name, schema) => {
  const blanked = blankSchemaSecrets({ answer: SECRET }, answerJsonSchema('n', schema));
  expect(JSON.stringify(blanked.value)).not.toContain(SECRET);
});

function allText(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    out += statSync(p).isDirectory() ? allText(p) : readFileSync(p, 'latin1');
  }
  return out;
}

it('an answer whose schema marks it secret after a trim is not written to disk in clear', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'schema-secret-pipes-'));
  const build = (): Flow => {
    class Ask extends BackpackNode {
      override async post(backpack: BackpackHandle): Promise<undefined> {
        const { answer } = await this.interrupt('Recovery code for the vault?', { schema: z.object({ answer: z.string().trim().pipe(secret()) }) });
        backpack.pack('got', answer.length);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'vault' });
    flow.addNode(Ask, { id: 'ask' });
    return flow;
  };
  const paused = await runFlow(build(), { dataDir, runId: 'v1' });
  expect(paused.status).toBe('waiting');
  await resumeRun(build(), { dataDir, runId: 'v1', resume: { answer: SECRET }, answering: paused.interrupt!.pause });
  expect(allText(dataDir)).not.toContain(SECRET);
});
