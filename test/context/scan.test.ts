import { cpSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { STAT_FAILED, STAT_FIELDS, statOne, verifiedBindingLstat } from '../../src/context/stat-pool.js';
import { SAMPLE, afterTick, backdate, openSample, snapshotStore, tempDir, writeTree } from './helpers.js';

async function idsByPath(engine: ContextEngine, paths: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const path of paths) out[path] = (await engine.resolveNode(path)).nodeId;
  return out;
}

const ALL = ['', 'README.md', 'src', 'src/main.ts', 'src/util', 'src/util/strings.ts', 'src/util/numbers.ts', 'docs', 'docs/guide.md', 'empty'];

describe('scan: the Merkle tree', () => {
  it('gives the same root and ids for the same tree in any location, and after the workspace is moved', async () => {
    const { root: a, engine: ea } = await openSample();
    const b = tempDir();
    writeTree(b, SAMPLE);
    const eb = await ContextEngine.open(b);
    const scanB = await eb.scan();
    expect(scanB.root).toBe((await ea.status()).root);
    expect(await idsByPath(eb, ALL)).toEqual(await idsByPath(ea, ALL));

    const frameId = await ea.putFrame('src/main.ts', { type: 'note', content: 'entry point' }, 'w');
    const moved = join(tempDir(), 'moved-workspace');
    renameSync(a, moved);
    const em = await ContextEngine.open(moved);
    const movedScan = await em.scan();
    expect(movedScan.changed).toBe(false); // nothing absolute is stored: the stat cache still matches
    expect(movedScan.hashed).toBe(0);
    expect(await idsByPath(em, ALL)).toEqual(await idsByPath(eb, ALL));
    expect(await em.getHead('src/main.ts', 'note')).toBe(frameId);
    expect((await em.validate()).ok).toBe(true);
    rmSync(moved, { recursive: true, force: true });
  });

  it('a workspace reached through a symlink is the directory it points to: same tree and store by either path', async () => {
    const { root: real, engine: direct } = await openSample();
    const link = join(tempDir(), 'linked-workspace');
    symlinkSync(real, link);
    const linked = await ContextEngine.open(link);
    expect(linked.workspaceRoot).toBe(realpathSync(real));
    // Before, the root itself was lstat'ed, found to be a symlink, and the scan failed ("not a directory").
    const scan = await linked.scan();
    expect(scan).toMatchObject({ changed: false, hashed: 0, root: (await direct.status()).root });
    expect(await idsByPath(linked, ALL)).toEqual(await idsByPath(direct, ALL));
    // Absolute paths are taken under either spelling of the root; a path outside both is still refused.
    writeFileSync(join(real, 'src', 'main.ts'), 'export const changed = true;\n');
    const rescan = await linked.scan({ paths: [join(link, 'src', 'main.ts')] });
    expect(rescan.changedPaths).toEqual(['', 'src', 'src/main.ts']);
    expect((await linked.resolveNode(join(link, 'src', 'main.ts'))).nodeId).toBe((await direct.resolveNode(join(real, 'src', 'main.ts'))).nodeId);
    await expect(linked.resolveNode(join(tempDir(), 'elsewhere.txt'))).rejects.toThrow(/is outside the workspace/);
    // A frame put through one spelling is the other's head.
    const frame = await linked.putFrame(join(link, 'README.md'), { type: 'note', content: 'via the link' }, 'w');
    expect(await direct.getHead('README.md', 'note')).toBe(frame);
  });

  it('a workspace that does not exist, is a file or is a loop of symlinks is refused at open, naming it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'file.txt'), 'x');
    symlinkSync(join(dir, 'loop-b'), join(dir, 'loop-a'));
    symlinkSync(join(dir, 'loop-a'), join(dir, 'loop-b'));
    symlinkSync(join(dir, 'gone'), join(dir, 'dangling'));
    const refused = async (root: string): Promise<{ code: unknown; message: string }> => {
      const error = (await ContextEngine.open(root).then(() => undefined, (e: unknown) => e)) as { code: unknown; message: string };
      expect(error, root).toBeDefined();
      return { code: error.code, message: error.message };
    };
    expect(await refused(join(dir, 'missing'))).toEqual({ code: 'INVALID_ARGUMENT', message: `workspace ${join(dir, 'missing')} does not exist` });
    expect(await refused(join(dir, 'dangling'))).toEqual({ code: 'INVALID_ARGUMENT', message: `workspace ${join(dir, 'dangling')} does not exist` });
    expect(await refused(join(dir, 'file.txt'))).toEqual({ code: 'INVALID_ARGUMENT', message: `workspace ${join(dir, 'file.txt')} is not a directory` });
    expect(await refused(join(dir, 'loop-a'))).toEqual({ code: 'INVALID_ARGUMENT', message: `workspace ${join(dir, 'loop-a')} is a loop of symbolic links` });
    // Nothing was written anywhere.
    expect(readdirSync(dir).sort()).toEqual(['dangling', 'file.txt', 'loop-a', 'loop-b']);
  });

  it('changing one byte of one file changes exactly that file id and its ancestors', async () => {
    const { root, engine } = await openSample();
    const before = await idsByPath(engine, ALL);
    writeFileSync(join(root, 'src/util/strings.ts'), 'export const s = "y";\n');
    const report = await engine.scan();
    const after = await idsByPath(engine, ALL);
    const changed = ALL.filter((p) => before[p] !== after[p]).sort();
    expect(changed).toEqual(['', 'src', 'src/util', 'src/util/strings.ts']);
    expect(report.changedPaths).toEqual(['', 'src', 'src/util', 'src/util/strings.ts']);
  });

  it('directory ids depend on sorted children, not on creation order', async () => {
    const a = tempDir();
    writeTree(a, { 'd/z.txt': 'z', 'd/a.txt': 'a', 'd/m/': '' });
    const b = tempDir();
    writeTree(b, { 'd/m/': '', 'd/a.txt': 'a', 'd/z.txt': 'z' });
    const ea = await ContextEngine.open(a);
    const eb = await ContextEngine.open(b);
    expect((await ea.scan()).root).toBe((await eb.scan()).root);
    expect((await ea.resolveNode('d')).children).toEqual(['d/a.txt', 'd/m', 'd/z.txt']);
  });

  it('a rescan re-reads only files whose size, mtime or inode changed', async () => {
    const { root, engine } = await openSample();
    expect((await engine.scan()).hashed).toBe(0);

    writeFileSync(join(root, 'docs/guide.md'), 'guide, longer\n');
    backdate(root, ['docs/guide.md']); // an edit well before the scan: not in its racy window, so trusted after it
    await afterTick();
    expect((await engine.scan()).hashed).toBe(1);

    // Same size and same mtime, new inode: the cache must notice the replacement.
    const file = join(root, 'README.md');
    const { mtime } = statSync(file);
    writeFileSync(join(root, 'README.tmp'), '# SAMPLE\n');
    utimesSync(join(root, 'README.tmp'), mtime, mtime);
    renameSync(join(root, 'README.tmp'), file);
    await afterTick();
    const report = await engine.scan();
    expect(report.hashed).toBe(1);
    expect(report.changedPaths).toContain('README.md');

    expect((await engine.scan({ force: true })).hashed).toBe(5);
  });

  it('an unchanged rescan leaves the store byte-identical', async () => {
    const { root, engine } = await openSample();
    const before = snapshotStore(root);
    const report = await engine.scan();
    expect(report.changed).toBe(false);
    expect(snapshotStore(root)).toEqual(before);
  });

  it('follows .gitignore by whole path components, nested files and negation; .merkle is always ignored', async () => {
    const root = tempDir();
    writeTree(root, {
      '.gitignore': 'build\n*.log\n!keep.log\n!.env.example\n',
      'build/out.js': 'x',
      'rebuild.txt': 'not ignored: build is a component, not a substring',
      'src/build': 'ignored: a file named build matches at any depth',
      'src/build.ts': 'not ignored: build.ts is another name',
      'src/app.log': 'ignored',
      'src/keep.log': 'kept by negation',
      'src/.gitignore': 'secret.txt\n',
      'src/secret.txt': 'ignored by the nested file',
      'docs/secret.txt': 'not ignored: the nested rule is relative to src/',
      'node_modules/pkg/index.js': 'ignored by default',
      // Secret files are ignored by default; the workspace's own .gitignore can re-include one.
      '.env': 'OPENAI_API_KEY=x\n',
      '.env.local': 'A=1\n',
      '.env.example': 'OPENAI_API_KEY=\n',
      'deploy/id_rsa': 'key',
      'deploy/id_ed25519': 'key',
      'certs/server.pem': 'pem',
      'certs/server.key': 'key',
    });
    const engine = await ContextEngine.open(root);
    await engine.scan();
    const paths = (await engine.listNodes()).map((n) => n.path).sort();
    expect(paths).toEqual([
      '',
      '.env.example',
      '.gitignore',
      'certs',
      'deploy',
      'docs',
      'docs/secret.txt',
      'rebuild.txt',
      'src',
      'src/.gitignore',
      'src/build.ts',
      'src/keep.log',
    ]);
    // .merkle/ exists now and is not part of the tree even without default ignores.
    const bare = await ContextEngine.open(root, { defaultIgnores: false });
    await bare.scan();
    const bareTree = (await bare.listNodes()).map((n) => n.path);
    expect(bareTree).toContain('node_modules/pkg/index.js');
    expect(bareTree).toEqual(expect.arrayContaining(['.env', 'deploy/id_rsa', 'certs/server.key']));
    expect(bareTree.some((p) => p.startsWith('.merkle'))).toBe(false);
  });

  it('leaves the credential stores of git, AWS, Docker and direnv out of the tree, at any depth', async () => {
    const root = tempDir();
    writeTree(root, {
      '.envrc': 'export OPENAI_API_KEY=x\n',
      '.git-credentials': 'https://u:p@example.com\n',
      '.aws/credentials': '[default]\naws_secret_access_key = x\n',
      '.aws/config': '[default]\nregion = eu-west-1\n',
      'home/.aws/credentials': '[default]\n',
      'home/.docker/config.json': '{"auths":{}}',
      'home/.docker/daemon.json': '{}',
    });
    const engine = await ContextEngine.open(root);
    await engine.scan();
    expect((await engine.listNodes()).map((n) => n.path).sort()).toEqual(['', '.aws', '.aws/config', 'home', 'home/.aws', 'home/.docker', 'home/.docker/daemon.json']);
  });

  it('extra ignore patterns apply from the workspace root', async () => {
    const root = tempDir();
    writeTree(root, { 'a/tmp/x': '1', 'a/y': '2' });
    const engine = await ContextEngine.open(root, { ignore: ['tmp/'] });
    await engine.scan();
    expect((await engine.listNodes()).map((n) => n.path).sort()).toEqual(['', 'a', 'a/y']);
  });

  it('stores paths as NFC and hashes symlinks by their target', async () => {
    const root = tempDir();
    const nfd = 'cafe\u0301.txt';
    writeTree(root, { [nfd]: 'coffee', 'target.txt': 't' });
    symlinkSync('target.txt', join(root, 'link'));
    const engine = await ContextEngine.open(root);
    await engine.scan();
    const nfc = (await engine.resolveNode('caf\u00e9.txt')).path;
    expect(nfc).toBe('caf\u00e9.txt');
    const link = await engine.resolveNode('link');
    expect(link.kind).toBe('symlink');
    const other = tempDir();
    writeTree(other, { 'caf\u00e9.txt': 'coffee', 'target.txt': 't' });
    symlinkSync('target.txt', join(other, 'link'));
    const engine2 = await ContextEngine.open(other);
    expect((await engine2.scan()).root).toBe((await engine.status()).root);
  });

  it('an empty workspace and empty directories have stable ids', async () => {
    const a = tempDir();
    const b = tempDir();
    writeTree(a, { 'e/': '' });
    writeTree(b, { 'e/': '' });
    const ra = (await (await ContextEngine.open(a)).scan()).root;
    const rb = (await (await ContextEngine.open(b)).scan()).root;
    expect(ra).toBe(rb);
    expect(ra).toMatch(/^[0-9a-f]{64}$/);
  });

  it('verifies the stored tree on read and rebuilds it with a forced scan', async () => {
    const { root, engine } = await openSample();
    const file = join(root, '.merkle', 'tree');
    const bytes = readFileSync(file);
    bytes[bytes.length - 40] ^= 0xff;
    writeFileSync(file, bytes);
    const fresh = await ContextEngine.open(root);
    await expect(fresh.status()).rejects.toThrow(/corrupt tree file .*tree: checksum mismatch/);
    // With nothing changed, a scan answers from the stat index (tree.stat) and reads no tree body, as git status
    // reads its index and no object; a scan that finds a change reads the tree and reports the damage.
    expect((await fresh.scan()).changed).toBe(false);
    writeFileSync(join(root, 'new.txt'), 'new\n');
    await expect(fresh.scan()).rejects.toThrow(/corrupt tree file .*tree: checksum mismatch/);
    rmSync(join(root, 'new.txt'));
    const report = await fresh.scan({ force: true });
    expect(report.root).toBe((await engine.status()).root);
    expect((await fresh.validate()).ok).toBe(true);
  });

  it('a copied workspace (new inodes) re-reads files but keeps every id', async () => {
    const { root, engine } = await openSample();
    const copy = join(tempDir(), 'copy');
    cpSync(root, copy, { recursive: true });
    const copied = await ContextEngine.open(copy);
    const report = await copied.scan();
    expect(report.hashed).toBe(5);
    expect(report.root).toBe((await engine.status()).root);
    expect(report.changed).toBe(true); // the stat cache changed, the ids did not
    expect(report.changedPaths).toEqual([]);
  });
});

describe('scan: parallel stat', () => {
  it('stat on two threads gives the same tree and cache decisions as one thread', async () => {
    const { root, engine } = await openSample();
    const parallel = await ContextEngine.open(root, { parallelStatThreshold: 0 });
    try {
      expect(await parallel.scan()).toMatchObject({ changed: false, hashed: 0 });
      writeFileSync(join(root, 'src/main.ts'), 'export const main = 2;\n');
      backdate(root, ['src/main.ts']); // edits well before the scans: not in their racy windows
      rmSync(join(root, 'docs/guide.md'));
      await afterTick();
      const report = await parallel.scan();
      expect(report).toMatchObject({ changed: true, hashed: 1 });
      expect(report.changedPaths).toEqual(['', 'docs', 'docs/guide.md', 'src', 'src/main.ts']);
      const serial = await ContextEngine.open(root);
      expect((await serial.scan({ force: true })).root).toBe(report.root);
      expect((await engine.status()).root).toBe(report.root);
      // A name stored as NFC but spelled NFD on disk: the helper misses it, this thread finds it.
      writeTree(root, { 'docs/cafe\u0301.md': 'coffee' });
      backdate(root, ['docs/cafe\u0301.md']);
      await afterTick();
      expect((await parallel.scan()).hashed).toBe(1);
      expect(await parallel.scan()).toMatchObject({ changed: false, hashed: 0 });
      expect((await parallel.resolveNode('docs/caf\u00e9.md')).kind).toBe('file');
    } finally {
      await parallel.close();
    }
  });
});

describe('scan: lstat', () => {
  it("takes each path's kind, size, mtime and inode exactly as fs.lstatSync gives them, through Node's binding here", () => {
    // On Linux without the permission model the binding passes its check: this test compares it, not the fallback.
    expect(process.platform === 'linux' ? typeof verifiedBindingLstat() : 'function').toBe('function');
    const root = tempDir();
    writeTree(root, { 'a.txt': 'abc', 'big.bin': 'x'.repeat(70_000), 'dir/b.txt': '' });
    symlinkSync('a.txt', join(root, 'link'));
    symlinkSync('nowhere', join(root, 'dangling'));
    // Sub-millisecond parts of the mtime: the arithmetic must be Node's to the last bit.
    utimesSync(join(root, 'a.txt'), 1_700_000_000.123_456, 1_700_000_000.987_654);
    utimesSync(join(root, 'dir'), 1, 4_000_000_000.000_001);
    const cases = ['a.txt', 'big.bin', 'dir', 'dir/b.txt', 'link', 'dangling', '', 'missing', 'a.txt/inside', 'dir/missing/deeper'];
    const out = new Float64Array(STAT_FIELDS);
    for (const name of cases) {
      const path = name === '' ? root : join(root, name);
      statOne(path, out, 0);
      let expected: number[];
      try {
        const st = lstatSync(path);
        const kind = st.isFile() ? 1 : st.isSymbolicLink() ? 2 : st.isDirectory() ? 4 : 3;
        expected = [kind, st.size, st.mtimeMs, st.ino];
      } catch (error) {
        expect(['ENOENT', 'ENOTDIR']).toContain((error as NodeJS.ErrnoException).code);
        expected = [0];
      }
      expect([...out.subarray(0, expected.length)], name).toEqual(expected);
      statOne(Buffer.from(path), out, 0); // the path as its bytes, as the quick check passes it
      expect([...out.subarray(0, expected.length)], name).toEqual(expected);
    }
    // Other errors are not taken for a missing entry (a path too long for the kernel): the scan reports them.
    statOne(join(root, 'x'.repeat(5000)), out, 0);
    expect(out[0]).toBe(STAT_FAILED);
  });

  it('a rescan run from the workspace root (paths relative to it) sees same-size edits and racy ones', async () => {
    const { root, engine } = await openSample();
    const cwd = process.cwd();
    try {
      process.chdir(root);
      expect(await engine.scan()).toMatchObject({ changed: false, hashed: 0 });
      const file = join(root, 'src/main.ts');
      // An mtime after the tree's write: the entry stays racy, so the same-size edit below with that mtime restored
      // must be re-read (git's racy-entry rule), whatever the machine's speed.
      const later = new Date(Date.now() + 60_000);
      writeFileSync(file, readFileSync(file, 'utf8').replace(/1/g, '2')); // same size
      utimesSync(file, later, later);
      const report = await engine.scan();
      expect(report.changedPaths).toEqual(['', 'src', 'src/main.ts']);
      writeFileSync(file, readFileSync(file, 'utf8').replace(/2/g, '3'));
      utimesSync(file, later, later);
      expect((await engine.scan()).changedPaths).toEqual(['', 'src', 'src/main.ts']);
      // The working directory renamed away and another put at the root's path: the scan sees the new one.
      const moved = `${root}-moved`;
      renameSync(root, moved);
      mkdirSync(root);
      writeTree(root, { 'only.txt': 'new' });
      cpSync(join(moved, '.merkle'), join(root, '.merkle'), { recursive: true });
      const fresh = await ContextEngine.open(root);
      const after = await fresh.scan();
      expect(after.root).toBe((await (await ContextEngine.open(root)).scan({ force: true })).root);
      expect((await fresh.resolveNode('only.txt')).kind).toBe('file');
      rmSync(moved, { recursive: true, force: true });
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('scan: limited to changed paths', () => {
  it('rescanning only the changed paths gives the same tree as a full scan', async () => {
    const { root, engine } = await openSample();
    writeTree(root, { 'src/new/a.ts': 'a', 'src/new/deeper/b.ts': 'b' });
    rmSync(join(root, 'src/util'), { recursive: true });
    writeFileSync(join(root, 'README.md'), '# changed\n');
    const partial = await engine.scan({ paths: ['src/new/a.ts', 'src/new/deeper/b.ts', 'src/util/strings.ts', 'src/util', 'README.md'] });
    expect(partial.changedPaths).toEqual(['', 'README.md', 'src', 'src/new', 'src/new/a.ts', 'src/new/deeper', 'src/new/deeper/b.ts', 'src/util', 'src/util/numbers.ts', 'src/util/strings.ts']);
    const full = await (await ContextEngine.open(root)).scan({ force: true });
    expect(full.root).toBe(partial.root);
    expect((await engine.listNodes()).map((n) => n.path)).not.toContain('src/util');
    // Paths that are ignored or outside any directory still on disk fall back to safe choices.
    expect((await engine.scan({ paths: ['node_modules/x.js'] })).changed).toBe(false);
  });
});
