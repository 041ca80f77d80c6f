/**
 * An older copy of one of the context store's files (`.merkle/tree`, `tree.journal`, `state.json`, `state.journal`)
 * put in place of the current one is never answered in silence (the audit: an invalidate undone by putting back the
 * previous state.journal, frames lost by putting back a state.json from before a compaction): every reader warns
 * naming the file, and validate fails naming it. A crash between the writes of one commit stays silent. See the
 * generations and the witness in `src/context/journal.ts`.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { loadHashBackend } from '../../src/context/hash.js';
import { JournaledFile } from '../../src/context/journal.js';
import { stateCodec } from '../../src/context/state-journal.js';
import { treeCodec } from '../../src/context/tree-journal.js';
import { openSample, tempDir } from './helpers.js';
import { trials } from '../support/soak.js';

const FILES = ['tree', 'tree.journal', 'state.json', 'state.journal'] as const;
const WITNESSES = ['tree.witness', 'state.witness'] as const;
type Snapshot = Map<string, Buffer | undefined>;

interface Answers {
  status: unknown;
  readmeHead: string | null;
  mainFrames: string[];
}

async function answers(root: string): Promise<{ got: Answers; warnings: string[]; engine: ContextEngine }> {
  const warnings: string[] = [];
  const engine = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
  const { warnings: listed, ...status } = await engine.status();
  warnings.push(...listed);
  const got = { status, readmeHead: await engine.getHead('README.md', 'summary'), mainFrames: (await engine.listFrames('src/main.ts')).map((f) => f.frameId) };
  return { got, warnings, engine };
}

function snapshot(root: string): Snapshot {
  const out: Snapshot = new Map();
  for (const name of [...FILES, ...WITNESSES]) {
    const file = join(root, '.merkle', name);
    out.set(name, existsSync(file) ? readFileSync(file) : undefined);
  }
  return out;
}

/** Puts `names` back as they were in `snap`. */
function restore(root: string, snap: Snapshot, names: readonly string[]): void {
  for (const name of names) {
    const file = join(root, '.merkle', name);
    const data = snap.get(name);
    if (data === undefined) rmSync(file, { force: true });
    else writeFileSync(file, data);
  }
}

let final: string;
/** The store's files after each acknowledged write, oldest first; the last is `final`'s. */
const moments: Snapshot[] = [];
/** Moments just before and after a base rewrite of the frame state and of the tree. */
const rewrites: { name: 'state' | 'tree'; before: number; after: number }[] = [];
let expected: Answers;

beforeAll(async () => {
  const { root, engine } = await openSample();
  const backend = await loadHashBackend();
  const merkle = join(root, '.merkle');
  const rewrite = (name: 'state' | 'tree'): void => {
    const file =
      name === 'state'
        ? new JournaledFile(join(merkle, 'state.json'), join(merkle, 'state.journal'), stateCodec(backend), backend)
        : new JournaledFile(join(merkle, 'tree'), join(merkle, 'tree.journal'), treeCodec(backend), backend);
    rewrites.push({ name, before: moments.length - 1, after: moments.length });
    (file as JournaledFile<unknown, unknown>).write(file.read()!.value);
  };
  const steps: (() => Promise<unknown> | void)[] = [
    () => engine.putFrame('README.md', { type: 'summary', content: 'one' }, 'w'),
    () => engine.putFrame('src/main.ts', { type: 'note', content: 'a' }, 'w'),
    () => rewrite('state'),
    () => engine.putFrame('README.md', { type: 'summary', content: 'two' }, 'w'),
    () => engine.invalidate('README.md'),
    () => writeFileSync(join(root, 'docs/guide.md'), 'guide, edited\n'),
    () => engine.scan(),
    () => rewrite('tree'),
    () => writeFileSync(join(root, 'docs/guide.md'), 'guide, edited again\n'),
    () => engine.scan(),
    () => rewrite('state'),
    () => engine.putFrame('src/main.ts', { type: 'note', content: 'b' }, 'w'),
    () => engine.invalidate('src/main.ts'),
  ];
  moments.push(snapshot(root));
  for (const step of steps) {
    await step();
    const snap = snapshot(root);
    if (FILES.some((n) => !snap.get(n)?.equals(moments.at(-1)!.get(n) ?? Buffer.alloc(0)))) moments.push(snap);
  }
  await engine.close();
  // Kept for the whole file (the helpers' temp directories go after each test).
  final = mkdtempSync(join(tmpdir(), 'merkle-rollback-final-'));
  cpSync(root, final, { recursive: true, preserveTimestamps: true });
  const read = await answers(final);
  expect(read.warnings).toEqual([]);
  expected = read.got;
});

afterAll(() => rmSync(final, { recursive: true, force: true }));

function copyOfFinal(): string {
  const root = tempDir('merkle-rollback-');
  cpSync(final, root, { recursive: true, preserveTimestamps: true });
  return root;
}

describe('an older copy of one file of the store is reported', () => {
  it('by every reader (a warning naming the file) and by validate (an error naming it), for any file and any earlier copy of it', async () => {
    const cases = moments.slice(0, -1).flatMap((snap, at) => FILES.filter((n) => snap.get(n) !== undefined && !snap.get(n)!.equals(moments.at(-1)!.get(n)!)).map((name) => ({ at, name })));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...cases), async ({ at, name }) => {
        const root = copyOfFinal();
        restore(root, moments[at]!, [name]);
        const file = join(root, '.merkle', name);
        const { warnings, engine } = await answers(root);
        expect(warnings.some((w) => w.includes(file)), `${name} as at moment ${at}: ${JSON.stringify(warnings)}`).toBe(true);
        const report = await engine.validate();
        expect(report.ok).toBe(false);
        expect(report.errors.some((e) => e.includes(file)), JSON.stringify(report.errors)).toBe(true);
        await engine.close();
        rmSync(root, { recursive: true, force: true });
      }),
      { numRuns: trials(25, 200) },
    );
  });

  it('the audit repro: the state.journal from before an invalidate', async () => {
    const root = copyOfFinal();
    restore(root, moments.at(-2)!, ['state.journal']);
    const { warnings } = await answers(root);
    expect(warnings.join('\n')).toMatch(/state\.journal is older than the last commit: its entries reach generation \d+ and .*state\.witness records \d+/);
  });
});

describe('a crash between the writes of one commit stays silent', () => {
  async function silent(root: string): Promise<Answers> {
    const { got, warnings, engine } = await answers(root);
    expect(warnings).toEqual([]);
    // The frames directory is the final one: frames written after the moment put back are not that crash's doing.
    const orphan = (e: string): boolean => /^frame file .* is referenced by no frame set/.test(e);
    expect((await engine.validate()).errors.filter((e) => !orphan(e))).toEqual([]);
    await engine.close();
    return got;
  }

  it('after an append was committed, before its witness slot was written (or with that slot torn)', async () => {
    const root = copyOfFinal();
    restore(root, moments.at(-2)!, ['state.witness']);
    expect(await silent(root)).toEqual(expected);
    const witness = join(root, '.merkle', 'state.witness');
    const torn = readFileSync(join(final, '.merkle', 'state.witness'));
    const now = moments.at(-2)!.get('state.witness')!;
    // Tear the newer of the two slots (the one that differs from the moment before).
    const slot = torn.subarray(0, 68).equals(now.subarray(0, 68)) ? 68 : 0;
    torn[slot + 30]! ^= 0xff;
    writeFileSync(witness, torn);
    expect(await silent(root)).toEqual(expected);
  });

  it.each(['state', 'tree'] as const)('a %s base rewrite cut after its witness, or after its base', async (name) => {
    const { before, after } = rewrites.find((r) => r.name === name)!;
    const [base, journal, witness] = name === 'state' ? ['state.json', 'state.journal', 'state.witness'] : ['tree', 'tree.journal', 'tree.witness'];
    for (const done of [[witness], [witness, base]]) {
      const root = tempDir('merkle-rollback-crash-');
      cpSync(final, root, { recursive: true, preserveTimestamps: true });
      restore(root, moments[before]!, [...FILES, ...WITNESSES]);
      restore(root, moments[after]!, done);
      const untouched = [base, journal].filter((n) => !done.includes(n));
      expect(untouched.length).toBeGreaterThan(0);
      await silent(root);
      rmSync(root, { recursive: true, force: true });
    }
  });
});
