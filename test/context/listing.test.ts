import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareCodePoints } from '../../src/context/hash.js';
import { ContextEngine, loadHashBackend, type ScanReport } from '../../src/context/index.js';
import { IgnoreRules } from '../../src/context/ignore-rules.js';
import { JournaledFile } from '../../src/context/journal.js';
import { emptyListing, listWorkspace, type Listing } from '../../src/context/listing.js';
import { scanWorkspace } from '../../src/context/scan.js';
import { Tree, coarseRacyInstant } from '../../src/context/tree.js';
import { treeCodec } from '../../src/context/tree-journal.js';
import { SAMPLE, backdate, settle, tempDir, writeTree } from './helpers.js';
import { SOAK, trials } from '../support/soak.js';

const backend = await loadHashBackend();
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
/**
 * Where a journal's commit record (committed length and its check) sits: after the 84-byte header (format 3: magic,
 * version, base checksum, base generation, header BLAKE3; journal.ts does not export it). The record is 8 bytes, so
 * an empty journal is COMMIT_OFFSET + 8 bytes.
 */
const COMMIT_OFFSET = 84;

async function scanTree(root: string, previous?: Tree): Promise<Tree> {
  return (await scanWorkspace({ workspaceRoot: root, rules: new IgnoreRules(root), backend, previous })).tree;
}

function list(root: string, tree: Tree, options: { reuse?: boolean; racyFromMs?: number } = {}): Listing {
  const listing = emptyListing();
  const racyFromMs = options.racyFromMs ?? Infinity;
  listWorkspace(root, '', new IgnoreRules(root), { tree, racyFromMs, coarseFromMs: coarseRacyInstant(racyFromMs), reuse: options.reuse ?? true }, listing);
  return listing;
}

/** A temp workspace with `files`, opened and scanned. */
/** A workspace of `files`, scanned; `settled`: written long before the scan (see settle), not in its racy window. */
async function scanned(files: Record<string, string>, settled = false): Promise<{ root: string; engine: ContextEngine; report: ScanReport }> {
  const root = tempDir();
  writeTree(root, files);
  if (settled) settle(root);
  const engine = await ContextEngine.open(root);
  return { root, engine, report: await engine.scan() };
}

async function paths(engine: ContextEngine): Promise<string[]> {
  return (await engine.listNodes()).map((n) => n.path).sort();
}

describe('listing cache: directories whose stat is unchanged are not re-read', () => {
  it('takes every listing from the cache when nothing changed, and re-reads exactly the directory that changed', async () => {
    const root = tempDir();
    writeTree(root, SAMPLE);
    const tree = await scanTree(root);
    const dirs = [...tree.records()].filter((n) => n.kind === 'dir').length;

    const unchanged = list(root, tree);
    expect(unchanged.reused).toBe(dirs);
    expect([...unchanged.paths].sort()).toEqual(['README.md', 'docs/guide.md', 'src/main.ts', 'src/util/numbers.ts', 'src/util/strings.ts']);
    expect(unchanged.known.every((record) => record !== undefined)).toBe(true);

    writeFileSync(join(root, 'src/util/new.ts'), 'new');
    const added = list(root, tree);
    expect(added.reused).toBe(dirs - 1);
    expect(added.paths).toContain('src/util/new.ts');
    expect(added.known[added.paths.indexOf('src/util/new.ts')]).toBeUndefined();
  });

  it('re-reads every directory when asked to, and directories modified in the racy window', async () => {
    const root = tempDir();
    writeTree(root, SAMPLE);
    const tree = await scanTree(root);
    expect(list(root, tree, { reuse: false }).reused).toBe(0);
    expect(list(root, tree, { racyFromMs: 0 }).reused).toBe(0);
  });

  it('records each directory stat in the tree, and reuses nothing from a tree whose rules differ', async () => {
    const root = tempDir();
    writeTree(root, SAMPLE);
    const tree = await scanTree(root);
    expect(tree.get('src')!.mtimeMs).toBeGreaterThan(0);
    expect(tree.get('src')!.ino).toBeGreaterThan(0);
    expect(tree.basis).toEqual({ rules: new IgnoreRules(root).key, reusable: true });
    const other = emptyListing();
    listWorkspace(root, '', new IgnoreRules(root, { patterns: ['*.md'] }), { tree, racyFromMs: Infinity, coarseFromMs: Infinity, reuse: true }, other);
    expect(other.reused).toBe(0);
    expect(other.paths).not.toContain('README.md');
  });
});

describe('listing cache: rescans stay exact', () => {
  it('sees added, removed and renamed files and directories, and a directory replaced by a file', async () => {
    const { root, engine } = await scanned(SAMPLE);
    writeTree(root, { 'src/util/more/deep.ts': 'deep' });
    rmSync(join(root, 'docs/guide.md'));
    renameSync(join(root, 'src/main.ts'), join(root, 'src/entry.ts'));
    rmSync(join(root, 'empty'), { recursive: true });
    writeFileSync(join(root, 'empty'), 'now a file');
    const report = await engine.scan();
    expect(report.changed).toBe(true);
    expect(await paths(engine)).toEqual([
      '', 'README.md', 'docs', 'empty', 'src', 'src/entry.ts', 'src/util', 'src/util/more', 'src/util/more/deep.ts', 'src/util/numbers.ts', 'src/util/strings.ts',
    ]);
    const fresh = await ContextEngine.open(root);
    expect((await fresh.scan({ force: true })).root).toBe(report.root);
  });

  it('a nested .gitignore edited in place drops the files it now ignores, though its directory looks unchanged', async () => {
    const { root, engine } = await scanned({ 'src/.gitignore': 'a.log\n', 'src/a.log': 'x', 'src/b.log': 'y', 'src/deep/c.log': 'z' });
    expect(await paths(engine)).toContain('src/deep/c.log');
    writeFileSync(join(root, 'src/.gitignore'), '*.log\n'); // same inode: the directory's mtime does not change
    await engine.scan();
    expect(await paths(engine)).toEqual(['', 'src', 'src/.gitignore', 'src/deep']);
  });

  it('a root .gitignore that stops ignoring a pattern brings back files in untouched directories', async () => {
    const { root, engine } = await scanned({ '.gitignore': '*.log\n', 'a/b/c/keep.log': 'x', 'a/b/c/main.ts': 'y' });
    expect(await paths(engine)).not.toContain('a/b/c/keep.log');
    writeFileSync(join(root, '.gitignore'), '# nothing ignored\n');
    await engine.scan();
    expect(await paths(engine)).toContain('a/b/c/keep.log');
  });

  it('a new .gitignore applies to the directories below it', async () => {
    const { root, engine } = await scanned({ 'src/util/x.tmp': 'x', 'src/util/y.ts': 'y' });
    writeFileSync(join(root, 'src/.gitignore'), '*.tmp\n');
    await engine.scan();
    expect(await paths(engine)).toEqual(['', 'src', 'src/.gitignore', 'src/util', 'src/util/y.ts']);
  });

  it('a deleted .gitignore brings back the files it ignored in the directories below it', async () => {
    const { root, engine } = await scanned({ 'src/.gitignore': '*.tmp\n', 'src/util/x.tmp': 'x', 'src/util/y.ts': 'y' });
    expect(await paths(engine)).not.toContain('src/util/x.tmp');
    rmSync(join(root, 'src/.gitignore'));
    await engine.scan();
    expect(await paths(engine)).toEqual(['', 'src', 'src/util', 'src/util/x.tmp', 'src/util/y.ts']);
  });

  it('a new .gitignore that ignores itself applies to the directories below it', async () => {
    const { root, engine } = await scanned({ 'src/util/x.tmp': 'x', 'src/util/y.ts': 'y' });
    writeFileSync(join(root, 'src/.gitignore'), '.gitignore\n*.tmp\n');
    await engine.scan();
    expect(await paths(engine)).toEqual(['', 'src', 'src/util', 'src/util/y.ts']);
  });

  it('a .gitignore that ignores itself is still watched: its tree never reuses listings', async () => {
    const { root, engine } = await scanned({ 'src/.gitignore': '.gitignore\nsecret.txt\n', 'src/secret.txt': 's', 'src/deep/secret.txt': 't', 'src/deep/ok.txt': 'o' });
    expect(await paths(engine)).toEqual(['', 'src', 'src/deep', 'src/deep/ok.txt']);
    const tree = await scanTree(root);
    expect(tree.basis?.reusable).toBe(false);
    writeFileSync(join(root, 'src/.gitignore'), '.gitignore\n');
    await engine.scan();
    expect(await paths(engine)).toEqual(['', 'src', 'src/deep', 'src/deep/ok.txt', 'src/deep/secret.txt', 'src/secret.txt']);
  });

  it('changing the ignore option between opens re-lists the workspace', async () => {
    const root = tempDir();
    writeTree(root, { 'a/x.tmp': 'x', 'a/y.ts': 'y' });
    const first = await ContextEngine.open(root, { ignore: ['*.tmp'] });
    await first.scan();
    expect(await paths(first)).not.toContain('a/x.tmp');
    const second = await ContextEngine.open(root);
    await second.scan();
    expect(await paths(second)).toContain('a/x.tmp');
  });

  it('reads a tree stored in format 1 (no directory stats, no basis) and records both on the next scan', async () => {
    const { root, report: { root: rootId } } = await scanned(SAMPLE, true);
    const file = join(root, '.merkle', 'tree');
    const journal = join(root, '.merkle', 'tree.journal');
    const stored = readFileSync(file);
    // Format 2 ends with u32 length + basis JSON; format 1 is the same file without them.
    const basisAt = stored.lastIndexOf(Buffer.from(`{"rules":`, 'utf8'));
    const json = stored.subarray(basisAt);
    expect(stored.readUInt32BE(basisAt - 4)).toBe(json.length);
    expect(JSON.parse(json.toString('utf8'))).toEqual({ rules: new IgnoreRules(root).key, reusable: true, racyFromMs: expect.any(Number) });
    const body = stored.subarray(44, stored.length - json.length - 4);
    const v1 = Buffer.concat([stored.subarray(0, 8), Buffer.from([0, 0, 0, 1]), backend.digest(body), body]);
    // Written as the store writes a tree file (witness, tree file, empty journal naming it), with the format-1 bytes
    // as its encoding: a bare writeFileSync would be a tree file that is not the base of the last commit, which every
    // reader reports and the scan rebuilds.
    const codec = treeCodec(backend);
    new JournaledFile(file, journal, { ...codec, encode: () => v1 }, backend).write(codec.decode(v1, file));
    expect(readFileSync(file).equals(v1)).toBe(true);

    const warnings: string[] = [];
    const reopened = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
    expect((await reopened.status()).root).toBe(rootId);
    const upgrade = await reopened.scan();
    expect(upgrade).toMatchObject({ root: rootId, hashed: 0, changed: true, changedPaths: [] });
    // The directory stats and the basis went into the journal on top of the format-1 file.
    expect(readFileSync(file).equals(v1)).toBe(true);
    expect(readFileSync(journal).readUInt32BE(COMMIT_OFFSET)).toBeGreaterThan(COMMIT_OFFSET + 8);
    expect(await reopened.scan()).toMatchObject({ changed: false, hashed: 0 });
    expect(await (await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) })).scan()).toMatchObject({ changed: false, hashed: 0 });
    expect(warnings).toEqual([]);
  });
});

describe('incremental update equals a whole build', () => {
  // 'resident': one open engine rescans its tree in memory. 'from disk': each rescan is by a newly opened engine, as
  // one `backpackflow context scan` process does: the stored tree (file and journal) is read in place and the quick
  // check runs first, on two threads for odd seeds. The last two 'from disk' seeds (a few seconds each) run in
  // `npm run test:soak` only, and there every seed runs 25 rounds of changes, 12 in `npm test`.
  it.each([
    [7, 'resident'],
    [11, 'resident'],
    [23, 'resident'],
    [101, 'resident'],
    [5, 'from disk'],
    [13, 'from disk'],
    ...(SOAK ? ([[29, 'from disk'], [103, 'from disk']] as const) : []),
  ] as const)('after random adds, edits, deletes, renames and file/directory swaps, the updated tree has the ids of a fresh scan (seed %i, %s)', async (start, mode) => {
    let seed = start;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const root = tempDir();
    const files = new Set<string>();
    const dirsOf = () => [...new Set([...files].map((f) => f.split('/').slice(0, -1).join('/')).filter((d) => d !== ''))];
    for (let i = 0; i < 40; i++) {
      const path = `d${random(4)}/e${random(3)}/f${i}.txt`;
      files.add(path);
    }
    writeTree(root, Object.fromEntries([...files].map((f) => [f, f])));
    const open = () => ContextEngine.open(root, { parallelStatThreshold: start % 2 === 1 ? 0 : undefined });
    let engine = await open();
    await engine.scan();
    let before = new Map((await engine.listNodes()).map((n) => [n.path, n.nodeId]));
    for (let round = 0; round < trials(12, 25); round++) {
      if (mode === 'from disk') {
        await engine.close();
        engine = await open();
      }
      for (let k = 0; k < 1 + random(4); k++) {
        const list = [...files];
        const op = random(5);
        if (op === 0) {
          const dir = `d${random(5)}`;
          if (files.has(dir)) continue; // a file now
          const path = `${dir}/n${round}_${k}.txt`;
          writeTree(root, { [path]: 'new' });
          files.add(path);
        } else if (op === 1 && list.length > 0) {
          const path = list[random(list.length)];
          writeFileSync(join(root, path), `edit ${round} ${k}`);
        } else if (op === 2 && list.length > 0) {
          const path = list[random(list.length)];
          rmSync(join(root, path));
          files.delete(path);
        } else if (op === 3) {
          const dirs = dirsOf();
          if (dirs.length === 0) continue;
          const dir = dirs[random(dirs.length)];
          rmSync(join(root, dir), { recursive: true });
          for (const f of [...files]) if (f.startsWith(`${dir}/`)) files.delete(f);
          writeFileSync(join(root, dir), 'a file where a directory was');
          files.add(dir);
        } else if (list.length > 0 && !files.has('moved')) {
          const path = list[random(list.length)];
          const target = `moved/r${round}_${k}.txt`;
          writeTree(root, { 'moved/': '' });
          renameSync(join(root, path), join(root, target));
          files.delete(path);
          files.add(target);
        }
      }
      const report = await engine.scan();
      const full = await scanTree(root);
      const incremental = new Map((await engine.listNodes()).map((n) => [n.path, n.nodeId]));
      const whole = new Map([...full.records()].map((n) => [n.path, n.nodeId]));
      expect(incremental, `round ${round}`).toEqual(whole);
      expect(report.root).toBe(full.rootId);
      // The report names exactly the paths whose id changed, appeared or disappeared, in code point order.
      const changed = [...new Set([...before.keys(), ...whole.keys()])].filter((path) => before.get(path) !== whole.get(path));
      expect(report.changedPaths, `round ${round}`).toEqual(changed.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      if (changed.length > 0) expect(report.changed).toBe(true);
      before = whole;
    }
    await engine.close();
  });
});

describe('tree journal', () => {
  const treeFile = (root: string) => join(root, '.merkle', 'tree');
  const journalFile = (root: string) => join(root, '.merkle', 'tree.journal');
  const idsOf = async (engine: ContextEngine) => new Map((await engine.listNodes()).map((n) => [n.path, n.nodeId]));

  it('a small rescan appends to the journal and leaves the tree file as it was; a fresh reader sees the update', async () => {
    const { root, engine } = await scanned(SAMPLE);
    const base = readFileSync(treeFile(root));
    writeFileSync(join(root, 'src/main.ts'), 'export const main = 2;\n');
    const report = await engine.scan();
    expect(report.changedPaths).toEqual(['', 'src', 'src/main.ts']);
    expect(readFileSync(treeFile(root)).equals(base)).toBe(true);
    expect(readFileSync(journalFile(root)).length).toBeGreaterThan(44);
    const fresh = await ContextEngine.open(root);
    expect((await fresh.status()).root).toBe(report.root);
    expect(await idsOf(fresh)).toEqual(await idsOf(engine));
    expect((await fresh.validate()).ok).toBe(true);
  });

  it('a torn last entry (a crash mid-append) is ignored, and the next append replaces it', async () => {
    const { root, engine } = await scanned(SAMPLE, true);
    writeFileSync(join(root, 'README.md'), 'one\n');
    const first = await engine.scan();
    const intact = readFileSync(journalFile(root));
    const witness = join(root, '.merkle', 'tree.witness');
    const intactWitness = readFileSync(witness);
    writeFileSync(join(root, 'README.md'), 'two\n');
    await engine.scan();
    const full = readFileSync(journalFile(root));
    expect(full.length).toBeGreaterThan(intact.length);
    // The crash came mid-append, before the commit record was rewritten: the first entry's journal (its commit
    // record covers the first entry only) followed by the second entry cut short, after the committed length; the
    // witness is still the one of the first entry's commit (it is written after the commit record).
    const torn = Buffer.concat([intact, full.subarray(intact.length, full.length - 5)]);
    expect(torn.readUInt32BE(COMMIT_OFFSET)).toBe(intact.length);
    writeFileSync(journalFile(root), torn);
    expect(readFileSync(witness).equals(intactWitness)).toBe(false);
    writeFileSync(witness, intactWitness);

    const warnings: string[] = [];
    const reader = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
    expect((await reader.status()).root).toBe(first.root);
    expect(warnings).toEqual([]); // an unacknowledged append is no damage
    backdate(root, ['README.md']); // written well before this scan: not in its racy window, so trusted after it
    const rescan = await reader.scan(); // sees README.md changed again, appends after the committed prefix
    expect(rescan.changedPaths).toContain('README.md');
    expect(rescan.warnings).toEqual([]);
    const journal = readFileSync(journalFile(root));
    // The header and the committed entry are kept; the torn bytes are replaced by the new entry, now committed.
    expect(journal.subarray(0, COMMIT_OFFSET).equals(intact.subarray(0, COMMIT_OFFSET))).toBe(true);
    expect(journal.subarray(COMMIT_OFFSET + 8, intact.length).equals(intact.subarray(COMMIT_OFFSET + 8))).toBe(true);
    expect(journal.length).toBeGreaterThan(intact.length);
    expect(journal.readUInt32BE(COMMIT_OFFSET)).toBe(journal.length);
    const after = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
    expect((await after.status()).root).toBe(rescan.root);
    expect(await after.scan()).toMatchObject({ changed: false, hashed: 0 });
    expect(warnings).toEqual([]);
  });

  it('a journal that belongs to another tree file is not applied and is reported as damage (the changes since the tree file are lost); one that breaks the tree is reported as corrupt', async () => {
    const { root, engine, report: { root: original } } = await scanned(SAMPLE);
    writeFileSync(join(root, 'README.md'), 'changed\n');
    await engine.scan();
    const own = readFileSync(journalFile(root));
    // An intact journal with a committed entry, written by another store: its header names that store's tree file.
    const other = await scanned({ ...SAMPLE, 'README.md': 'another workspace\n' });
    writeFileSync(join(other.root, 'src/main.ts'), 'export const main = 3;\n');
    await other.engine.scan();
    const stale = readFileSync(journalFile(other.root));
    expect(stale.readUInt32BE(COMMIT_OFFSET)).toBe(stale.length);
    expect(stale.length).toBeGreaterThan(COMMIT_OFFSET + 8);
    expect(stale.subarray(12, 44).equals(readFileSync(treeFile(root)).subarray(12, 44))).toBe(false);
    writeFileSync(journalFile(root), stale);
    const warnings: string[] = [];
    const ignoring = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
    // The answer is the tree file's alone (the original scan's), not the other store's entry on top of it; the
    // witness records this store's committed README.md change, so the journal put in place is reported as losing it.
    const { root: answered, warnings: listed } = await ignoring.status();
    expect(answered).toBe(original);
    const journalWarning = new RegExp(`^${escape(journalFile(root))} does not extend ${escape(treeFile(root))} as written at generation \\d+ \\(it extends another base\\): .* the 1 changes journaled since .* are lost`);
    expect([...warnings, ...listed].some((w) => journalWarning.test(w)), JSON.stringify([...warnings, ...listed])).toBe(true);
    expect((await ignoring.validate()).errors.some((e) => e.includes(journalFile(root)))).toBe(true);

    // A well-sealed, committed entry that removes a child its directory still lists, appended by the real writer to
    // the store's own journal, put back (a damaged journal is never appended to: the writer would rewrite the tree).
    writeFileSync(journalFile(root), own);
    const tree = new JournaledFile(treeFile(root), journalFile(root), treeCodec(backend), backend);
    tree.append(tree.read()!.value!, { upserts: [], removed: ['src/main.ts'], basis: null });
    const sealed = readFileSync(journalFile(root));
    expect(sealed.subarray(12, 44).equals(readFileSync(treeFile(root)).subarray(12, 44))).toBe(true);
    expect(sealed.readUInt32BE(COMMIT_OFFSET)).toBe(sealed.length);
    const broken = await ContextEngine.open(root);
    await expect(broken.status()).rejects.toThrow(/corrupt tree file .*tree\.journal: directory 'src' lists 'src\/main\.ts'/);
    const repaired = await broken.scan({ force: true });
    expect(repaired.changed).toBe(true);
    expect((await (await ContextEngine.open(root)).validate()).ok).toBe(true);
  });

  it('rewrites the tree file and drops the journal once the journal outgrows an eighth of it', async () => {
    const { root, engine } = await scanned(SAMPLE);
    const base = readFileSync(treeFile(root));
    let rewritten = false;
    for (let i = 0; i < 400 && !rewritten; i++) {
      writeFileSync(join(root, 'README.md'), `version ${i}\n`);
      await engine.scan();
      rewritten = !readFileSync(treeFile(root)).equals(base);
    }
    expect(rewritten).toBe(true);
    // The journal is folded into the new tree file, and an empty one (header and commit record, no entries) naming it
    // is written beside it.
    const journal = readFileSync(journalFile(root));
    expect(journal.length).toBe(COMMIT_OFFSET + 8);
    expect(journal.readUInt32BE(COMMIT_OFFSET)).toBe(COMMIT_OFFSET + 8);
    expect(journal.subarray(12, 44).equals(readFileSync(treeFile(root)).subarray(12, 44))).toBe(true);
    const fresh = await ContextEngine.open(root);
    expect(await idsOf(fresh)).toEqual(await idsOf(engine));
  });
});

describe('state journal', () => {
  const stateFile = (root: string) => join(root, '.merkle', 'state.json');
  const journalFile = (root: string) => join(root, '.merkle', 'state.journal');

  it('a putFrame appends one entry instead of rewriting state.json; a fresh reader sees every frame and head', async () => {
    const { root, engine } = await scanned(SAMPLE);
    await engine.registerAgent({ agentId: 'w', role: 'writer' });
    await engine.putFrame('README.md', { type: 'summary', content: 'first' }, 'w');
    const base = readFileSync(stateFile(root));
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await engine.putFrame('src/main.ts', { type: 'note', content: `note ${i}` }, 'w'));
    expect(readFileSync(stateFile(root)).equals(base)).toBe(true);
    expect(readFileSync(journalFile(root)).length).toBeGreaterThan(44);
    const fresh = await ContextEngine.open(root);
    expect((await fresh.listFrames('src/main.ts')).map((f) => f.frameId)).toEqual(ids);
    expect(await fresh.getHead('src/main.ts', 'note')).toBe(ids[4]);
    expect((await fresh.validate()).ok).toBe(true);
  });

  it('a cut last entry loses that transaction from the state, validate names the frame it committed, and the next one is appended after the intact entries', async () => {
    const { root, engine } = await scanned(SAMPLE);
    await engine.registerAgent({ agentId: 'w', role: 'writer' });
    const first = await engine.putFrame('README.md', { type: 'summary', content: 'base' }, 'w');
    const kept = await engine.putFrame('README.md', { type: 'summary', content: 'kept' }, 'w');
    const torn = await engine.putFrame('README.md', { type: 'summary', content: 'torn' }, 'w');
    const journal = readFileSync(journalFile(root));
    writeFileSync(journalFile(root), journal.subarray(0, journal.length - 3)); // committed bytes cut: damage
    const warnings: string[] = [];
    const reader = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
    expect(await reader.getHead('README.md', 'summary')).toBe(kept);
    expect(warnings).toEqual([expect.stringContaining(`${journalFile(root)} is damaged: committed bytes`)]);
    const orphan = `frame file .*${torn}\\.json is referenced by no frame set: the state journal entry that committed it was lost`;
    const damaged = await reader.validate();
    expect(damaged.errors).toEqual([
      expect.stringContaining(`${journalFile(root)} is damaged`),
      expect.stringMatching(new RegExp(`${orphan} \\(.*state\\.journal is damaged: .*\\); keep the file \\('backpackflow context repair' moves it out of frames/, into a folder of its own\\)$`)),
    ]);
    // The next transaction is refused until the loss is accepted by repair (which keeps the damaged journal aside).
    await expect(reader.putFrame('docs/guide.md', { type: 'summary', content: 'after' }, 'w')).rejects.toMatchObject({
      code: 'CORRUPT_STORE',
      message: expect.stringContaining('state.journal is damaged'),
    });
    expect(readFileSync(journalFile(root)).equals(journal.subarray(0, journal.length - 3))).toBe(true);
    expect((await reader.repair()).repaired).toEqual([expect.stringContaining(`${journalFile(root)} is damaged`), expect.stringMatching(/^1 frame file no frame set references .* kept in .*frames\.lost-/)]);
    expect(readdirSync(join(root, '.merkle')).filter((n) => n.startsWith('state.journal.damaged-'))).toHaveLength(1);
    // The intact entries are now the base; the next transaction is appended to the journal after them.
    const repairedBase = readFileSync(stateFile(root));
    const next = await reader.putFrame('docs/guide.md', { type: 'summary', content: 'after' }, 'w');
    expect(readFileSync(stateFile(root)).equals(repairedBase)).toBe(true);
    expect(readFileSync(journalFile(root)).length).toBeGreaterThan(84);
    const after = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
    expect(await after.getHead('README.md', 'summary')).toBe(kept);
    expect(await after.getHead('docs/guide.md', 'summary')).toBe(next);
    expect((await after.listFrames('README.md')).map((f) => f.frameId)).toEqual([first, kept]);
    expect(warnings).toHaveLength(1); // only the one before repair
    // The frame file of the lost transaction was reported before repair (committed, so never "safe to delete"), and
    // repair kept it out of frames/, byte for byte: validate passes.
    const report = await after.validate();
    expect(report).toMatchObject({ ok: true, errors: [] });
    expect(report.warnings.join('\n')).not.toContain('safe to delete');
    const lost = readdirSync(join(root, '.merkle')).filter((n) => n.startsWith('frames.lost-'));
    expect(JSON.parse(readFileSync(join(root, '.merkle', lost[0]!, torn.slice(0, 2), `${torn}.json`), 'utf8'))).toMatchObject({ content: 'torn' });
  });

  it('a node path named __proto__ keeps its frames through the journal and a rewrite', async () => {
    const { root, engine } = await scanned(Object.fromEntries([['__proto__', 'not special'], ['constructor/x', 'y']]));
    await engine.registerAgent({ agentId: 'w', role: 'writer' });
    const a = await engine.putFrame('__proto__', { type: 'summary', content: 'a' }, 'w');
    const b = await engine.putFrame('__proto__', { type: 'summary', content: 'b' }, 'w');
    const fresh = await ContextEngine.open(root);
    expect((await fresh.listFrames('__proto__')).map((f) => f.frameId)).toEqual([a, b]);
    expect(await fresh.getHead('__proto__', 'summary')).toBe(b);
    expect(({} as Record<string, unknown>).summary).toBeUndefined(); // no prototype was touched
  });
});

describe('tree file structure', () => {
  /** A tree file (format 2) with these records in this order, correctly sealed. */
  function treeFile(records: { kind: 1 | 2; path: string }[]): Buffer {
    const parts: Buffer[] = [Buffer.alloc(4)];
    parts[0]!.writeUInt32BE(records.length, 0);
    for (const record of records) {
      const path = Buffer.from(record.path, 'utf8');
      const head = Buffer.alloc(5);
      head.writeUInt8(record.kind, 0);
      head.writeUInt32BE(path.length, 1);
      parts.push(head, path, Buffer.alloc(24), Buffer.alloc(64, 0xab));
    }
    const basis = Buffer.from('null', 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(basis.length, 0);
    parts.push(length, basis);
    const body = Buffer.concat(parts);
    const format = Buffer.alloc(4);
    format.writeUInt32BE(2, 0);
    return Buffer.concat([Buffer.from('MRKLTREE', 'latin1'), format, backend.digest(body), body]);
  }

  it('reads records depth first and rejects a file whose records are out of that order, even with a valid checksum', () => {
    const good = Tree.decode(treeFile([{ kind: 2, path: '' }, { kind: 2, path: 'a' }, { kind: 1, path: 'a/x' }, { kind: 1, path: 'b' }]), backend, 'tree');
    expect(good.childRecords(good.get('')!).map((r) => r.path)).toEqual(['a', 'b']);
    expect(good.leafCount).toBe(2);
    const bad = (records: { kind: 1 | 2; path: string }[]) => () => Tree.decode(treeFile(records), backend, 'tree');
    expect(bad([{ kind: 1, path: 'a' }])).toThrow(/corrupt tree file tree: the first entry is not the root directory/);
    expect(bad([{ kind: 2, path: '' }, { kind: 1, path: 'a/x' }, { kind: 2, path: 'a' }])).toThrow(/entry 'a\/x' is not under the directory before it/);
    expect(bad([{ kind: 2, path: '' }, { kind: 1, path: 'b' }, { kind: 1, path: 'b' }])).toThrow(/entry 'b' is out of order or appears twice/);
    // Lookups are binary searches over that order, so siblings out of order are refused too ('a-b' sorts after 'a/').
    expect(bad([{ kind: 2, path: '' }, { kind: 1, path: 'b' }, { kind: 1, path: 'a' }])).toThrow(/entry 'a' is out of order/);
    expect(bad([{ kind: 2, path: '' }, { kind: 1, path: 'a-b' }, { kind: 2, path: 'a' }])).toThrow(/entry 'a' is out of order/);
    expect(bad([{ kind: 2, path: '' }, { kind: 2, path: 'a' }, { kind: 1, path: 'a/x' }, { kind: 1, path: 'a/x/y' }])).toThrow(/entry 'a\/x\/y' is not under/);
    expect(bad([{ kind: 2, path: '' }, { kind: 2, path: 'a' }, { kind: 1, path: 'a/' }])).toThrow(/entry 'a\/' is not under/);
    // A NUL would end the path where the kernel reads it, so another file would be stat'ed than the one stored.
    expect(bad([{ kind: 2, path: '' }, { kind: 1, path: 'a\0b' }])).toThrow(/entry 1 has a NUL byte in its path/);
    // Nor '.' or '..': a scan would lstat outside the workspace.
    expect(bad([{ kind: 2, path: '' }, { kind: 1, path: '..' }])).toThrow(/entry '\.\.' names '\.' or '\.\.'/);
    expect(bad([{ kind: 2, path: '' }, { kind: 2, path: 'a' }, { kind: 1, path: 'a/.' }])).toThrow(/entry 'a\/\.' names/);
    expect(Tree.decode(treeFile([{ kind: 2, path: '' }, { kind: 1, path: '...' }, { kind: 1, path: '.a' }]), backend, 'tree').size).toBe(3);
    const nested = Tree.decode(
      treeFile([{ kind: 2, path: '' }, { kind: 2, path: 'a' }, { kind: 1, path: 'a/x' }, { kind: 1, path: 'a-b' }, { kind: 1, path: 'é' }]),
      backend,
      'tree',
    );
    expect(['', 'a', 'a/x', 'a-b', 'é', 'a/y', 'b'].map((p) => nested.get(p)?.path)).toEqual(['', 'a', 'a/x', 'a-b', 'é', undefined, undefined]);
    expect(nested.childRecords(nested.get('')!).map((r) => r.path)).toEqual(['a', 'a-b', 'é']);
  });

  it('reads any set of paths written in canonical order, and finds exactly those paths (ASCII-only files and others)', () => {
    // Names around '/' in byte order ('-', '.', ' ' sort below it, '0', 'a', '~' above), and one non-ASCII name.
    const name = fc.constantFrom('a', 'b', 'a-b', 'a.b', 'a b', 'a0', 'a~', '-', '.x', 'ab', 'é');
    const canonical = (x: string, y: string): number => {
      const xs = x.split('/');
      const ys = y.split('/');
      for (let i = 0; i < Math.min(xs.length, ys.length); i++) {
        const c = compareCodePoints(xs[i]!, ys[i]!);
        if (c !== 0) return c;
      }
      return xs.length - ys.length;
    };
    fc.assert(
      fc.property(fc.uniqueArray(fc.array(name, { minLength: 1, maxLength: 3 }), { maxLength: 25 }), fc.array(fc.array(name, { minLength: 1, maxLength: 3 }), { maxLength: 10 }), (files, probes) => {
        // Files as given, unless one is also the directory of another (then it is that directory).
        const dirs = new Set<string>();
        for (const parts of files) for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
        const leaves = new Set(files.map((parts) => parts.join('/')).filter((path) => !dirs.has(path)));
        const records = [{ kind: 2 as const, path: '' }, ...[...dirs].map((path) => ({ kind: 2 as const, path })), ...[...leaves].map((path) => ({ kind: 1 as const, path }))];
        records.sort((x, y) => canonical(x.path, y.path));
        const tree = Tree.decode(treeFile(records), backend, 'tree');
        expect(tree.size).toBe(records.length);
        for (const record of records) expect(tree.get(record.path)?.kind).toBe(record.kind === 2 ? 'dir' : 'file');
        for (const parts of probes) {
          const path = parts.join('/');
          expect(tree.get(path) !== undefined).toBe(dirs.has(path) || leaves.has(path));
        }
        // Each directory's children, read from the file, are the records right under it, in order.
        for (const dir of ['', ...dirs]) {
          const under = records.filter((r) => r.path !== '' && r.path.slice(0, r.path.lastIndexOf('/') < 0 ? 0 : r.path.lastIndexOf('/')) === dir);
          expect(tree.childRecords(tree.get(dir)!).map((r) => r.path)).toEqual(under.map((r) => r.path));
        }
      }),
      { numRuns: 300 },
    );
  });
});
