/**
 * A `.gitignore` of any kind, in the root or in a subdirectory: only a regular file's rules apply (a symlink is not
 * followed, as git does not since 2.32, so an outside file's rules or a device never apply); a FIFO neither hangs the
 * scan nor leaves the workspace lock behind; a file over the size limit is an error naming it and the limit. Every
 * case runs (the domain is small), in a child process under a timeout, since a hang cannot be interrupted in-process.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_GITIGNORE_BYTES } from '../../src/context/ignore-rules.js';
import { bundledScript } from '../support/bundle.js';
import { runJsonLinesChild, type ChildReport } from '../support/json-lines-child.js';
import { tempDir } from './helpers.js';

const child = await bundledScript(join(import.meta.dirname, 'gitignore-entry-child.ts'));
const LOCATIONS = ['root', 'sub'] as const;
const KINDS = ['regular', 'oversize', 'fifo', 'directory', 'symlink-outside', 'symlink-dev-zero', 'symlink-dir'] as const;

interface Line {
  location: string;
  kind: string;
  step?: string;
  started?: boolean;
  ok?: boolean;
  result?: any;
  error?: string;
  done?: boolean;
}

function runChild(cases: string[]): Promise<ChildReport<Line>> {
  return runJsonLinesChild<Line>([child, tempDir('gitignore-entry-'), String(MAX_GITIGNORE_BYTES), ...cases]);
}

describe('IgnoreRules with a .gitignore of every kind', () => {
  it('applies only a regular file, never hangs or crashes, keeps no lock, and refuses an oversized one by name', async () => {
    const cases = LOCATIONS.flatMap((location) => KINDS.map((kind) => `${location}:${kind}`));
    const { lines, stderr, timedOut } = await runChild(cases);
    const last = lines.at(-1);
    if (last?.done !== true) {
      const where = last?.started === true ? `hung or crashed in '${last.step}' with the ${last.location} .gitignore as ${last.kind}` : `died after ${JSON.stringify(last)}`;
      expect.fail(`${timedOut ? 'timed out: ' : ''}${where}; stderr: ${stderr.slice(-2000)}`);
    }
    const outcome = (c: string, step: string): Line => lines.find((l) => `${l.location}:${l.kind}` === c && l.step === step && l.started !== true)!;
    const problems: string[] = [];
    for (const c of cases) {
      const [location, kind] = c.split(':');
      const path = location === 'root' ? '.gitignore' : 'sub/.gitignore';
      const scan = outcome(c, 'scan');
      if (outcome(c, 'lock left').result !== false) problems.push(`${c}: the workspace lock was left behind`);
      if (kind === 'oversize') {
        if (scan.ok || !scan.error!.includes(`'${path}'`) || !scan.error!.includes(String(MAX_GITIGNORE_BYTES))) problems.push(`${c}: scan did not refuse it naming '${path}' and the limit: ${JSON.stringify(scan)}`);
        const validate = outcome(c, 'validate');
        const said = validate.ok ? (validate.result.errors as string[]).join('\n') : validate.error!;
        if (!said.includes(`'${path}'`)) problems.push(`${c}: validate did not report it: ${said}`);
        continue;
      }
      if (!scan.ok) problems.push(`${c}: scan failed: ${scan.error}`);
      if (!outcome(c, 'validate').ok) problems.push(`${c}: validate failed: ${outcome(c, 'validate').error}`);
      // A regular file's rules (`a.txt`, `b.txt`) apply below its folder; no other kind's do.
      const applies = kind === 'regular';
      const expected = { 'has a.txt': !(applies && location === 'root'), 'has sub/b.txt': !applies };
      for (const [step, present] of Object.entries(expected)) {
        if (outcome(c, step).result !== present) problems.push(`${c}: ${step.slice(4)} is ${present ? 'missing from' : 'in'} the tree`);
      }
    }
    expect(problems).toEqual([]);
  }, 90_000);
});
