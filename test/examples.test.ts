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
});
