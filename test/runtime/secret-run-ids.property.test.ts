/**
 * A new run whose run id or session key looks like a secret is refused before anything is written: both name the
 * run's files and are written in every event as they are, never redacted (README audit M3). The error shows the id
 * redacted. Existing ids and ordinary ones are unaffected.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forkRun, openNewRun, runFlow } from '../../src/index.js';
import { InvalidIdError, redactorFor } from '../../src/store/index.js';
import { cli } from '../cli/helpers.js';
import { makeTempDir } from '../support/temp.js';
import { buildJournalFlow } from './fixtures/journal-flow.js';

const redactor = redactorFor();
const ALNUM = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'];
const UPPER = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'];
const chars = (alphabet: string[], n: number) => fc.string({ unit: fc.constantFrom(...alphabet), minLength: n, maxLength: n });

/** Ids the built-in catalogue takes for secrets (GitHub tokens, AWS key ids, OpenAI keys), with text around them. */
const secretId = fc
  .tuple(
    fc.constantFrom('', 'run-', 'user.'),
    fc.oneof(
      chars(ALNUM, 36).map((s) => `ghp_${s}`),
      chars(UPPER, 16).map((s) => `AKIA${s}`),
      chars(ALNUM, 40).map((s) => `sk-proj-${s}`),
    ),
  )
  .map(([prefix, secret]) => ({ id: `${prefix}${secret}`, secret }))
  .filter(({ id }) => redactor.holdsSecret(id));

/** What a refusal must be: an InvalidIdError naming the field, never the secret. */
function expectRefused(error: unknown, kind: string, secret: string): void {
  expect(error).toBeInstanceOf(InvalidIdError);
  expect((error as InvalidIdError).kind).toBe(kind);
  expect((error as Error).message).toMatch(/looks like a secret/);
  expect((error as Error).message).not.toContain(secret);
}

describe('run ids and session keys that look like secrets', () => {
  it('are refused by runFlow, forkRun and openNewRun before anything is written', async () => {
    const dataDir = makeTempDir('bf-secret-ids-', 'test');
    await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'source' });
    await fc.assert(
      fc.asyncProperty(secretId, fc.constantFrom('runId', 'sessionKey'), fc.constantFrom('runFlow', 'forkRun', 'openNewRun'), async ({ id, secret }, kind, entry) => {
        const where = kind === 'runId' ? { runId: id } : { sessionKey: id, runId: 'ordinary' };
        const error = await (entry === 'runFlow'
          ? runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, ...where })
          : entry === 'forkRun'
            ? kind === 'runId'
              ? forkRun(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'source', atStep: 1, newRunId: id })
              : forkRun(buildJournalFlow({ rounds: 2 }), { dataDir, sessionKey: id, runId: 'source', atStep: 1, newRunId: 'ordinary' })
            : openNewRun({ dataDir, ...where })
        ).catch((e: unknown) => e);
        // A fork in a session that looks like a secret finds no source run there first: refused either way, nothing made.
        if (!(entry === 'forkRun' && kind === 'sessionKey')) expectRefused(error, kind, secret);
        else expect(error).toBeInstanceOf(Error);
        expect(readdirSync(join(dataDir, 'sessions')).sort()).toEqual(['default']);
        expect(readdirSync(join(dataDir, 'sessions', 'default', 'runs'))).toEqual(['source']);
      }),
      { numRuns: 12 },
    );
  });

  it('are refused by `backpackflow run` with exit code 2, and the secret is not printed', async () => {
    const dataDir = makeTempDir('bf-secret-ids-', 'test');
    const flow = join(import.meta.dirname, '..', 'cli', 'fixtures', 'flow.json');
    const modules = join(import.meta.dirname, '..', 'cli', 'fixtures', 'nodes.mjs');
    const secret = `ghp_${'a1B2c3D4e5'.repeat(3)}abcdef`;
    expect(redactor.holdsSecret(secret)).toBe(true);
    for (const args of [['--run-id', secret], ['--session', secret]]) {
      const result = await cli(['run', flow, '--modules', modules, '--data-dir', dataDir, ...args]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/looks like a secret/);
      expect(result.stdout + result.stderr).not.toContain(secret);
    }
    expect(existsSync(join(dataDir, 'sessions'))).toBe(false);
  });
});
