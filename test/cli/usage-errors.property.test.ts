/**
 * Commander's own usage errors (an unknown command or option, an argument too many, an option value its parser
 * refuses) quote what was typed. They reach stderr through terminalText like every other error line of both command
 * lines: a script that passes hostile text as an argument cannot make the terminal act on it, nor add a line at the
 * first column.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ACTS_BUT_NEWLINE, hostileText, twin } from '../support/hostile-text.js';
import { trials } from '../support/soak.js';
import { plainEnv } from '../support/env.js';
import { cli, tempDir, type Result } from './helpers.js';
import { runMerkleInProcess } from './in-process.js';

const root = join(import.meta.dirname, '..', '..');

/** The context command line in this process (as `backpackflow context`: the same bundle), in `cwd`. */
function merkle(args: string[], cwd: string): Promise<Result> {
  return runMerkleInProcess(root, args, cwd, plainEnv());
}

/** Hostile text that can be an argument (an argument cannot hold NUL). */
const argText = hostileText().map((text) => text.replace(/\0/g, '?'));

/** The lines of `text` that start at the first column. */
function outdented(text: string): number {
  return text.split('\n').filter((line) => !/^\s/.test(line)).length;
}

/** Each usage error of both command lines, quoting `text`. */
async function usageErrors(text: string, dir: string): Promise<Record<string, Result>> {
  const d = ['-d', dir];
  return {
    'unknown command': await cli([`zz${text}`]),
    'unknown option': await cli(['runs', 'list', `--x${text}`, ...d]),
    'excess argument': await cli(['runs', 'list', `extra${text}`, ...d]),
    'invalid option value': await cli(['runs', 'events', 'r1', '--page-size', `x${text}`, ...d]),
    'context unknown command': await merkle([`zz${text}`], dir),
    'context unknown option': await merkle(['status', `--x${text}`], dir),
    'context excess argument': await merkle(['status', `extra${text}`], dir),
  };
}

describe("commander's usage errors go through terminalText", () => {
  it('every usage error of both command lines quotes hostile text without a character a terminal acts on', async () => {
    const dir = tempDir();
    await fc.assert(
      fc.asyncProperty(argText, async (text) => {
        const hostile = await usageErrors(text, dir);
        const harmless = await usageErrors(twin(text), dir);
        for (const [name, result] of Object.entries(hostile)) {
          expect(result.code, `${name}: ${result.stderr}`).toBe(2);
          expect(result.stderr, name).not.toMatch(ACTS_BUT_NEWLINE);
          expect(outdented(result.stderr), `${name}: ${result.stderr}`).toBe(outdented(harmless[name]!.stderr));
        }
      }),
      { numRuns: trials(3, 30) },
    );
  }, 120_000);

  it('the message and the hint after it keep their order and wording', async () => {
    const result = await cli(['runs', 'list', '--x\u001b[2Kdone']);
    expect(result.stderr).toBe("error: unknown option '--x\\u001b[2Kdone'\n(add --help for usage)\n");
    const context = await cli(['context', 'status', '--x\u001b[2Kdone']);
    expect(context.code).toBe(2);
    expect(context.stderr).toMatch(/^error: unknown option '--x\\u001b\[2Kdone'\n/);
  });
});
