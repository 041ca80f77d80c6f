import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundledScript } from './support/bundle.js';
import { plainEnv } from './support/env.js';

const root = join(import.meta.dirname, '..');

/**
 * Runs an example as `npm run example:*` does (tsx), bundled by esbuild as tsx would transform it: node starts the
 * bundle in a third of `--import tsx`'s time, with the same output.
 */
async function runExample(...path: string[]): Promise<string> {
  return execFileSync(process.execPath, [await bundledScript(join(root, 'examples', ...path))], { cwd: root, encoding: 'utf8', env: plainEnv() });
}

describe('examples run as documented', () => {
  it('examples/hello.ts (npm run example:hello) prints provenance, the snapshot before a node, and the diff', async () => {
    const out = await runExample('hello.ts');
    expect(out.trim().split('\n')).toEqual([
      'loud = "HELLO, WORLD!", written by shouter in hello.shouter',
      "keys before shouter ran: [ 'name', 'greeting' ]",
      'diff: ["loud"]',
    ]);
  });

  it('examples/approval (npm run example:approval) pauses for a person, refuses a bad answer, and completes with a good one', async () => {
    const out = await runExample('approval', 'main.ts');
    expect(out.trim().split('\n')).toEqual([
      'status: waiting; approve asks {"question":"Publish this post?","draft":"Tides: the moon pulls the sea. A post about tides."}',
      'listed as: waiting',
      'refused: InterruptAnswerError',
      'status: completed; published: {"text":"Tides: the moon pulls the sea. A post about tides.","at":"the blog"}',
    ]);
  });
});
