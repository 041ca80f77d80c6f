import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainEnv } from './support/env.js';

const root = join(import.meta.dirname, '..');

describe('examples run as documented', () => {
  it('examples/hello.ts (npm run example:hello) prints provenance, the snapshot before a node, and the diff', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'examples', 'hello.ts')], { cwd: root, encoding: 'utf8', env: plainEnv() });
    expect(out.trim().split('\n')).toEqual([
      'loud = "HELLO, WORLD!", written by shouter in hello.shouter',
      "keys before shouter ran: [ 'name', 'greeting' ]",
      'diff: ["loud"]',
    ]);
  });

  it('examples/approval (npm run example:approval) pauses for a person, refuses a bad answer, and completes with a good one', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'examples', 'approval', 'main.ts')], { cwd: root, encoding: 'utf8', env: plainEnv() });
    expect(out.trim().split('\n')).toEqual([
      'status: waiting; approve asks {"question":"Publish this post?","draft":"Tides: the moon pulls the sea. A post about tides."}',
      'listed as: waiting',
      'refused: InterruptAnswerError',
      'status: completed; published: {"text":"Tides: the moon pulls the sea. A post about tides.","at":"the blog"}',
    ]);
  });
});
