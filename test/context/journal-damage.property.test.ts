/**
 * Damage to the context store's journals (`.merkle/tree.journal`, `.merkle/state.journal`) is never answered in
 * silence: after a random truncation, bit flip or deletion of a real journal, every reader (status, getHead,
 * listFrames, validate, scan) returns what it returned before the damage, or a warning (an error for validate)
 * naming the journal. A scan always ends with the workspace's true root (it rebuilds a damaged tree).
 */
import { cpSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { openSample, tempDir } from './helpers.js';
import { trials } from '../support/soak.js';

interface Answers {
  root: string | null;
  frames: number;
  heads: number;
  readmeHead: string | null;
  mainFrames: string[];
}

async function answers(engine: ContextEngine): Promise<Answers> {
  const status = await engine.status();
  return {
    root: status.root,
    frames: status.frames,
    heads: status.heads,
    readmeHead: await engine.getHead('README.md', 'summary'),
    mainFrames: (await engine.listFrames('src/main.ts')).map((f) => f.frameId),
  };
}

let prepared: string;
let expected: Answers;

beforeAll(async () => {
  // Both journals hold several committed entries: frames and heads in the state journal, a rescan in the tree journal.
  const { root, engine } = await openSample();
  await engine.putFrame('README.md', { type: 'summary', content: 'one' }, 'w');
  await engine.putFrame('src/main.ts', { type: 'note', content: 'a' }, 'w');
  await engine.putFrame('README.md', { type: 'summary', content: 'two' }, 'w');
  await engine.putFrame('src/main.ts', { type: 'note', content: 'b' }, 'w');
  writeFileSync(join(root, 'docs/guide.md'), 'guide, edited\n');
  await engine.scan();
  await engine.close();
  prepared = root;
  expected = await answers(await ContextEngine.open(root, { onWarning: () => {} }));
});

type Damage = { kind: 'delete' } | { kind: 'truncate'; at: number } | { kind: 'flip'; at: number; bit: number };

const damageArb = fc.oneof(
  fc.constant<Damage>({ kind: 'delete' }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }) }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), bit: fc.integer({ min: 0, max: 7 }) }),
);

function damage(file: string, d: Damage): void {
  if (d.kind === 'delete') return rmSync(file);
  const size = statSync(file).size;
  const at = Math.floor(d.at * size);
  if (d.kind === 'truncate') return truncateSync(file, at);
  const bytes = readFileSync(file);
  bytes[at]! ^= 1 << d.bit;
  writeFileSync(file, bytes);
}

describe('journal damage (property)', () => {
  it('every reader answers as before the damage, or warns naming the damaged journal; validate fails whenever an answer changed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('tree.journal', 'state.journal'), damageArb, async (name, d) => {
        const root = tempDir('merkle-damage-');
        cpSync(prepared, root, { recursive: true, preserveTimestamps: true });
        const journal = join(root, '.merkle', name);
        damage(journal, d);
        const warnings: string[] = [];
        const engine = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
        const got = await answers(engine);
        const named = warnings.some((w) => w.includes(journal));
        for (const key of Object.keys(expected) as (keyof Answers)[]) {
          if (!named) expect(got[key], `${key} after ${JSON.stringify(d)} of ${name}, with no warning naming it`).toEqual(expected[key]);
        }
        const report = await engine.validate();
        const changed = JSON.stringify(got) !== JSON.stringify(expected);
        if (changed) {
          expect(report.ok, `validate after ${JSON.stringify(d)} of ${name} changed the answers`).toBe(false);
          expect(report.errors.some((e) => e.includes(journal))).toBe(true);
        }
        if (named) expect(report.ok).toBe(false);
        // A scan answers with the workspace as it is, damaged tree or not, and leaves a tree that reads clean.
        const scan = await engine.scan();
        expect(scan.root).toBe(expected.root);
        expect(scan.warnings.some((w) => w.includes(journal))).toBe(name === 'tree.journal' && named);
        const after = await ContextEngine.open(root, { onWarning: (m) => warnings.push(`after scan: ${m}`) });
        expect((await after.status()).root).toBe(expected.root);
        await engine.close();
        rmSync(root, { recursive: true, force: true });
      }),
      { numRuns: trials(40, 300) },
    );
  });
});
