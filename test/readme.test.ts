import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { plainEnv } from './support/env.js';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const scratch = join(root, 'test', '.readme');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The first ```ts block after `heading`. */
function codeAfter(heading: string): string {
  const start = readme.indexOf(heading);
  expect(start, `README has a '${heading}' section`).toBeGreaterThan(-1);
  const match = /```ts\n([\s\S]*?)```/.exec(readme.slice(start));
  expect(match, `'${heading}' has a ts code block`).not.toBeNull();
  return match![1]!;
}

describe('README', () => {
  it('shows the two commands a newcomer types', () => {
    expect(readme).toContain('npm ci && npm test');
    expect(readme).toContain('npm ci && npm run demo');
  });

  it('the quick start runs as written against the built package and prints what it says', () => {
    mkdirSync(scratch, { recursive: true });
    const file = join(scratch, 'quickstart.ts');
    writeFileSync(file, codeAfter('## Quick start'));
    const out = execFileSync(process.execPath, ['--import', 'tsx', file], { cwd: root, encoding: 'utf8', env: plainEnv() });
    expect(out.trim().split('\n')).toEqual(['fact about tides', 'agent.writer', "[ 'question', 'facts' ]"]);
  });
});
