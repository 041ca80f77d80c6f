/**
 * An answer the answer's schema marks secret (`writeOnly`, `format: 'password'`: what the Studio's form masks) never
 * reaches the disk, whatever its name or text (redaction alone judges by key names and value patterns: `{ pin }` or a
 * bare passphrase were written as typed). The node gets it in memory; a later resume gets a RedactedAnswer.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, loadRunPoint, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesHolding } from '../support/files.js';

function build(schema: z.ZodType): Flow {
  class Ask extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      const answer = await this.interrupt({ question: 'Unlock the vault' }, { schema });
      backpack.pack('unlocked', answer !== undefined);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'vault' });
  flow.addNode(Ask, { id: 'unlock' });
  return flow;
}

const cases: [string, z.ZodType, unknown, string][] = [
  ['a writeOnly field', z.object({ pin: z.string().meta({ writeOnly: true }) }), { pin: 'pin-7733-quux' }, 'pin-7733-quux'],
  ["a field of format 'password'", z.object({ passcode: z.string().meta({ format: 'password' }) }), { passcode: 'correct horse battery staple' }, 'correct horse battery staple'],
  ["a whole answer of format 'password'", z.string().meta({ format: 'password' }), 'hunter2-vault-xyz', 'hunter2-vault-xyz'],
];

describe('an answer the schema marks secret (the studio masks it)', () => {
  for (const [what, schema, answer, secret] of cases) {
    it(`${what}: never reaches the disk`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'schema-secret-answer-'));
      expect((await runFlow(build(schema), { dataDir, runId: 'vault' })).status).toBe('waiting');
      const resumed = await resumeRun(build(schema), { dataDir, runId: 'vault', resume: answer });
      expect(resumed.status).toBe('completed');
      // The node had the answer itself (in memory).
      expect((await loadRunPoint({ dataDir, runId: 'vault' })).state.items['unlocked']?.value).toBe(true);
      expect(filesHolding(dataDir, secret).map((p) => p.slice(dataDir.length))).toEqual([]);
      // The log says which answer it blanked.
      const lines = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'vault', 'events.jsonl'), 'utf8').split('\n').filter((l) => l.startsWith('{'));
      const answered = lines.map((l) => JSON.parse(l) as { type: string; payload: unknown }).find((e) => e.type === 'interrupt.answered');
      expect(answered?.payload).toMatchObject({ secret: true });
    });
  }
});
