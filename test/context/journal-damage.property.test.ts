/**
 * Damage to any file of the context store (`.merkle/`: the tree, the frame state, their journals and witnesses, the
 * stat index, agents, frames) is never answered in silence: after a random deletion, truncation or bit flip of one
 * file of a real store, every reader (status, getHead, listFrames) returns what it returned before the damage, or a
 * warning or an error naming the file, and validate fails naming it whenever an answer changed. A scan always ends
 * with the workspace's true root (it rebuilds a damaged tree), and after `repair` every reader answers in silence.
 */
import { cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { openSample, tempDir } from './helpers.js';
import { trials } from '../support/soak.js';
import { damage, damageArb, type Damage } from '../support/file-damage.js';

interface Answers {
  root: string | null;
  frames: number;
  heads: number;
  agents: number;
  readmeHead: string | null;
  mainFrames: string[];
}

/** Each reader's answer (or the message of the error it threw), and every message it reported. */
async function answers(engine: ContextEngine, warnings: string[]): Promise<{ got: Record<keyof Answers, unknown>; messages: string[] }> {
  const thrown: string[] = [];
  const attempt = async <T>(read: () => Promise<T>): Promise<T | { threw: string }> => {
    try {
      return await read();
    } catch (error) {
      thrown.push((error as Error).message);
      return { threw: (error as Error).message };
    }
  };
  const status = await attempt(() => engine.status());
  const counts = 'threw' in status ? { root: status, frames: status, heads: status, agents: status } : { root: status.root, frames: status.frames, heads: status.heads, agents: status.agents };
  const got = {
    ...counts,
    readmeHead: await attempt(() => engine.getHead('README.md', 'summary')),
    mainFrames: await attempt(async () => (await engine.listFrames('src/main.ts')).map((f) => f.frameId)),
  };
  return { got, messages: [...warnings, ...('threw' in status ? [] : status.warnings), ...thrown] };
}

let prepared: string;
let expected: Answers;
/** Every file of the prepared store, relative to `.merkle/`. */
let files: string[];

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
  files = readdirSync(join(root, '.merkle'), { recursive: true, encoding: 'utf8' }).filter((name) => statSync(join(root, '.merkle', name)).isFile() && name !== 'lock');
  for (const name of ['tree', 'tree.journal', 'tree.witness', 'tree.stat', 'state.json', 'state.journal', 'state.witness', 'agents.json']) expect(files).toContain(name);
  const warnings: string[] = [];
  const read = await answers(await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) }), warnings);
  expect(read.messages).toEqual([]);
  expected = read.got as Answers;
});


/**
 * Damage the store does not tell: `agents.json` deleted (no witness records that it was written; the registry reads
 * as empty). A known gap, left to a change of the agents file.
 */
const untold = (name: string, d: Damage): boolean => name === 'agents.json' && d.kind === 'delete';

/** Files `repair` (with the scan it runs) puts right: the tree and the frame state, with their journals and witnesses. */
const repairable = (name: string): boolean => /^(tree|state)(\.json|\.journal|\.witness)?$/.test(name);

/** Each file of the store deleted (but the one the store cannot tell). */
const deletions = (): Array<[{ name: string; d: Damage }]> => files.filter((name) => !untold(name, { kind: 'delete' })).map((name) => [{ name, d: { kind: 'delete' } }]);

/** Where a journal's header ends (src/context/journal.ts) and each entry's length, checksum and payload follow. */
const JOURNAL_HEADER_BYTES = 92;

/**
 * Each journal cut exactly where one of its entries starts, under a commit record that counts that entry: what a
 * reader sees when it reads while an append lands (a random cut rarely falls on a boundary; one that did threw a
 * RangeError naming no file).
 */
const boundaryCuts = (): Array<[{ name: string; d: Damage }]> =>
  ['tree.journal', 'state.journal'].flatMap((name) => {
    const bytes = readFileSync(join(prepared, '.merkle', name));
    const cuts: Array<[{ name: string; d: Damage }]> = [];
    for (let o = JOURNAL_HEADER_BYTES; o + 36 <= bytes.length; o += 36 + bytes.readUInt32BE(o)) cuts.push([{ name, d: { kind: 'truncate', at: (o + 0.5) / bytes.length } }]);
    expect(cuts.length, `${name} holds entries`).toBeGreaterThan(0);
    return cuts;
  });

describe('store damage (property)', () => {
  it('every reader answers as before the damage, or names the damaged file; validate fails whenever an answer changed; repair ends the reports', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...files).chain((name) => damageArb.filter((d) => !untold(name, d)).map((d) => ({ name, d }))),
        async ({ name, d }) => {
          const root = tempDir('merkle-damage-');
          cpSync(prepared, root, { recursive: true, preserveTimestamps: true });
          const file = join(root, '.merkle', name);
          damage(file, d);
          const what = `${JSON.stringify(d)} of ${name}`;
          const warnings: string[] = [];
          const engine = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
          const { got, messages } = await answers(engine, warnings);
          const named = messages.some((m) => m.includes(file));
          if (!named) expect(got, `${what}, with no warning or error naming it: ${JSON.stringify(messages)}`).toEqual(expected);
          const report = await engine.validate();
          const changed = JSON.stringify(got) !== JSON.stringify(expected);
          if (changed || named) {
            expect(report.ok, `validate after ${what}`).toBe(false);
            expect(report.errors.some((e) => e.includes(file)), `validate after ${what}: ${JSON.stringify(report.errors)}`).toBe(true);
          }
          // A scan answers with the workspace as it is, damaged tree or not (a corrupt tree file asks for --force).
          let scan;
          try {
            scan = await engine.scan();
          } catch (error) {
            expect((error as Error).message).toContain(file);
            scan = await engine.scan({ force: true });
          }
          expect(scan.root).toBe(expected.root);
          for (const warning of scan.warnings) expect(warning).toContain(file);
          if (repairable(name)) {
            // Repair accepts what was lost: then every reader answers in silence, the tree is the workspace's.
            await engine.repair();
            const after: string[] = [];
            const again = await answers(await ContextEngine.open(root, { onWarning: (m) => after.push(m) }), after);
            expect(again.messages, `after repair of ${what}`).toEqual([]);
            expect(again.got.root).toBe(expected.root);
            // What validate still reports is frames whose committed state was lost (kept, never called safe to delete).
            for (const error of (await engine.validate()).errors) expect(error).toMatch(/^frame file .* is referenced by no frame set/);
          }
          await engine.close();
          rmSync(root, { recursive: true, force: true });
        },
      ),
      // Every file deleted, each journal cut at each entry's start, and then damage at random (fast-check counts the
      // examples in numRuns).
      { numRuns: deletions().length + boundaryCuts().length + trials(12, 400), examples: [...deletions(), ...boundaryCuts()] },
    );
  });
});
