/**
 * Pauses for a person whose answer holds a secret (DESIGN D15, D16). The run's log keeps the answer redacted, so a
 * node that runs again from prep cannot be given it again: it is told so, never handed '[REDACTED]' as the answer
 * (found by the adversarial review of 2026-11-28). A node that asks for the secret last gets the real answer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, listRuns, redactorFor, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';
import { filesHolding } from '../support/files.js';

const PASSWORD = 'Tr0ub4dor-and-3';

describe('an answer that holds a secret', () => {
  it('is not replayed as "[REDACTED]" to a node that asks again after it: the run fails, saying why and what to do', async () => {
    const dataDir = makeTempDir('interrupt-secret-', 'test');
    const lengths: number[] = [];
    const build = (): Flow => {
      class Ask extends BackpackNode {
        override async post(backpack: BackpackHandle): Promise<undefined> {
          const first = await this.interrupt<{ password: string }>('database password?');
          await this.interrupt<boolean>('really deploy?');
          lengths.push(first.password.length);
          backpack.pack('deployed', true);
          return undefined;
        }
      }
      const flow = new Flow({ namespace: 'ops' });
      flow.addNode(Ask, { id: 'ask' });
      return flow;
    };
    await runFlow(build(), { dataDir, runId: 'two-asks' });
    expect((await resumeRun(build(), { dataDir, runId: 'two-asks', resume: { password: PASSWORD } })).status).toBe('waiting');
    const error = await resumeRun(build(), { dataDir, runId: 'two-asks', resume: true }).then(() => undefined, (e: unknown) => e as Error);
    expect(error?.message).toMatch(/Node 'ask' \(ops\.ask\): the answer to its interrupt 0 held a secret, which the run's log keeps redacted, .*Ask for a secret in a node's last interrupt/);
    expect(lengths).toEqual([]);
    const [run] = await listRuns({ dataDir });
    expect(run).toMatchObject({ runId: 'two-asks', status: 'failed' });
    expect(filesHolding(dataDir, PASSWORD)).toEqual([]);
  });

  it("is given as it was to a node that asks for it last, and never reaches the disk", async () => {
    const dataDir = makeTempDir('interrupt-secret-', 'test');
    const lengths: number[] = [];
    const build = (): Flow => {
      class Ask extends BackpackNode {
        override async post(backpack: BackpackHandle): Promise<undefined> {
          await this.interrupt<boolean>('deploy?');
          const { password } = await this.interrupt<{ password: string }>('database password?');
          lengths.push(password.length);
          backpack.pack('deployed', true);
          return undefined;
        }
      }
      const flow = new Flow({ namespace: 'ops' });
      flow.addNode(Ask, { id: 'ask' });
      return flow;
    };
    await runFlow(build(), { dataDir, runId: 'secret-last' });
    expect((await resumeRun(build(), { dataDir, runId: 'secret-last', resume: true })).status).toBe('waiting');
    const flow = build();
    expect((await resumeRun(flow, { dataDir, runId: 'secret-last', resume: { password: PASSWORD } })).status).toBe('completed');
    expect(lengths).toEqual([PASSWORD.length]);
    expect(flow.backpack.peek('deployed')).toBe(true);
    expect(filesHolding(dataDir, PASSWORD)).toEqual([]);
  });

  it('can be asked for with a schema naming a secret field: the recorded schema keeps its structure, and the run resumes', async () => {
    const dataDir = makeTempDir('interrupt-secret-', 'test');
    const got: string[] = [];
    const build = (): Flow => {
      class Login extends BackpackNode {
        override async post(backpack: BackpackHandle): Promise<undefined> {
          const answer = await this.interrupt('credentials for the deploy', { schema: z.object({ user: z.string(), password: z.string().min(8) }) });
          got.push(answer.password);
          backpack.pack('user', answer.user);
          return undefined;
        }
      }
      const flow = new Flow({ namespace: 'ops' });
      flow.addNode(Login, { id: 'login' });
      return flow;
    };
    const waiting = await runFlow(build(), { dataDir, runId: 'login' });
    expect(waiting.status).toBe('waiting');
    const log = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'login', 'events.jsonl'), 'utf8');
    expect(log).toContain('"password":{"type":"string","minLength":8}');
    expect(log).not.toContain('"type":"[REDACTED]"');
    // An answer the schema refuses is still refused; a valid one resumes the run.
    await expect(resumeRun(build(), { dataDir, runId: 'login', resume: { user: 'ann', password: 'short' } })).rejects.toThrow(/\/password: .*>=8 characters/);
    expect((await resumeRun(build(), { dataDir, runId: 'login', resume: { user: 'ann', password: PASSWORD } })).status).toBe('completed');
    expect(got).toEqual([PASSWORD]);
    expect(filesHolding(dataDir, PASSWORD)).toEqual([]);
  });
});

describe('a JSON Schema under redaction', () => {
  const redactor = redactorFor();
  const DIALECT = 'https://json-schema.org/draft/2020-12/schema';

  it('keeps the subschemas of secret-named fields and blanks the data they hold (default, const, enum, examples)', () => {
    const schema = {
      $schema: DIALECT,
      type: 'object',
      properties: {
        password: { type: 'string', minLength: 8, default: 'hunter2-hunter2', examples: ['correct-horse'] },
        nested: { type: 'object', properties: { apiKey: { type: 'string', enum: ['k-one', 'k-two'] } }, required: ['apiKey'] },
        tokens: { type: 'array', items: { anyOf: [{ type: 'string' }, { const: 'sk_live_4eC39HqLyjWDarjtT1zdp7dc' }] } },
      },
      required: ['password'],
      $defs: { secret: { type: 'string', const: 'also-hidden' } },
    };
    const { value } = redactor.redact(schema);
    expect(value).toEqual({
      $schema: DIALECT,
      type: 'object',
      properties: {
        password: { type: 'string', minLength: 8, default: '[REDACTED]', examples: ['[REDACTED]'] },
        nested: { type: 'object', properties: { apiKey: { type: 'string', enum: ['[REDACTED]', '[REDACTED]'] } }, required: ['apiKey'] },
        tokens: { type: 'array', items: { anyOf: [{ type: 'string' }, { const: '[REDACTED]' }] } },
      },
      required: ['password'],
      $defs: { secret: { type: 'string', const: '[REDACTED]' } },
    });
  });

  it('is only an object that declares a JSON Schema dialect: the same shape without one is data, and blanked', () => {
    const data = { type: 'object', properties: { password: { type: 'hunter2-hunter2' } } };
    expect(redactor.redact(data).value).toEqual({ type: 'object', properties: { password: { type: '[REDACTED]' } } });
    const notADialect = { $schema: 'https://example.com/mine', properties: { password: { type: 'hunter2-hunter2' } } };
    expect(redactor.redact(notADialect).value).toEqual({ $schema: 'https://example.com/mine', properties: { password: { type: '[REDACTED]' } } });
  });
});
