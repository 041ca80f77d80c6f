import { chmodSync, cpSync, existsSync, lstatSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ContextEngine, loadHashBackend, type NodeRecord } from '../../src/context/index.js';
import { encodeStatIndex } from '../../src/context/stat-index.js';
import { backdate, openSample, tempDir, writeTree } from './helpers.js';
import { trials } from '../support/soak.js';

/** A first scan of a copy of `root` (without `.merkle/`): what any rescan of `root` must find. */
async function freshScan(root: string): Promise<ContextEngine> {
  const copy = tempDir('merkle-copy-');
  cpSync(root, copy, { recursive: true, verbatimSymlinks: true, filter: (src) => !src.endsWith('/.merkle') });
  const engine = await ContextEngine.open(copy);
  await engine.scan();
  return engine;
}

async function freshRoot(root: string): Promise<string> {
  return (await (await freshScan(root)).status()).root!;
}

/** Records without their stat cache (a copy has other inodes and times). */
function shape(records: readonly NodeRecord[]): object[] {
  return records.map(({ path, kind, nodeId, children }) => ({ path, kind, nodeId, children }));
}

async function freshNodes(root: string): Promise<object[]> {
  return shape(await (await freshScan(root)).listNodes());
}

/** A scan by a newly opened engine: it has no tree in memory, so its quick check reads `tree.stat` when it can. */
async function scanFresh(root: string) {
  const engine = await ContextEngine.open(root);
  try {
    return await engine.scan();
  } finally {
    await engine.close();
  }
}

describe('the stat index (.merkle/tree.stat)', () => {
  it('is written with the tree file and answers an unchanged rescan with the root and count of the tree and its journal', async () => {
    const { root, engine } = await openSample();
    expect(existsSync(join(root, '.merkle', 'tree.stat'))).toBe(true);
    writeFileSync(join(root, 'docs/guide.md'), 'a longer guide\n');
    backdate(root, ['docs/guide.md']); // an edit well before the scan: not in its racy window
    const changed = await scanFresh(root);
    expect(changed.changedPaths).toEqual(['', 'docs', 'docs/guide.md']);
    expect(existsSync(join(root, '.merkle', 'tree.journal'))).toBe(true); // the change went to the journal
    rmSync(join(root, 'src/util/numbers.ts'));
    const removed = await scanFresh(root);
    expect(removed.changedPaths).toEqual(['', 'src', 'src/util', 'src/util/numbers.ts']);
    // Nothing changed since: the answer comes from tree.stat with the journal on top, and is the stored tree's.
    const unchanged = await scanFresh(root);
    expect(unchanged).toMatchObject({ changed: false, hashed: 0, root: removed.root, nodes: removed.nodes });
    expect((await engine.status()).root).toBe(removed.root);
    expect(unchanged.root).toBe(await freshRoot(root));
  });

  it('is ignored when damaged or when it belongs to another tree file, and the tree file serves', async () => {
    const { root } = await openSample();
    const file = join(root, '.merkle', 'tree.stat');
    const before = readFileSync(file);
    // Another tree file: a forced scan after a change rewrites the tree file; the old index is put back.
    writeFileSync(join(root, 'README.md'), '# other\n');
    await (await ContextEngine.open(root)).scan({ force: true });
    writeFileSync(file, before);
    writeFileSync(join(root, 'README.md'), '# third\n');
    const afterStale = await scanFresh(root);
    expect(afterStale.changedPaths).toEqual(['', 'README.md']);
    expect(afterStale.root).toBe(await freshRoot(root));
    // Damaged: every byte flipped in turn past the magic would be too slow; a byte in the records and one in the header.
    for (const at of [before.length - 30, 20, 100]) {
      const current = readFileSync(file);
      const damaged = Buffer.from(current);
      damaged[at] ^= 0x01;
      writeFileSync(file, damaged);
      writeFileSync(join(root, 'docs/guide.md'), `guide ${at}\n`);
      const report = await scanFresh(root);
      expect(report.changedPaths).toContain('docs/guide.md');
      expect(report.root).toBe(await freshRoot(root));
      expect((await scanFresh(root)).changed).toBe(false);
      writeFileSync(file, current);
    }
  });

  it('a forged index (checksums recomputed) naming a path outside the workspace never gets it read or stored', async () => {
    const { root } = await openSample();
    const outside = join(root, '..', `outside-${process.pid}.md`);
    writeFileSync(outside, 'secret\n');
    try {
      // The tree file's bytes with README.md (9 bytes) renamed to a path of the same length outside the root.
      const tree = readFileSync(join(root, '.merkle', 'tree'));
      const at = tree.indexOf('README.md');
      const forged = Buffer.from(tree);
      forged.write(`../${`outside-${process.pid}.md`}`.slice(0, 9), at, 'latin1');
      const path = forged.toString('latin1', at, at + 9);
      renameSync(outside, join(root, path));
      const index = encodeStatIndex(forged, await loadHashBackend());
      writeFileSync(join(root, '.merkle', 'tree.stat'), index!);
      const report = await scanFresh(root);
      expect(report.root).toBe(await freshRoot(root));
      const engine = await ContextEngine.open(root);
      expect((await engine.listNodes()).map((n) => n.path).filter((p) => p.startsWith('..'))).toEqual([]);
      rmSync(join(root, path), { force: true });
    } finally {
      rmSync(outside, { force: true });
    }
  });

  it('a rescan finds every change a full scan finds: random edits, same-size racy edits, renames, deletions, kind and mode changes', async () => {
    const backendFiles = ['a.txt', 'b.txt', 'd/c.txt', 'd/e/f.txt', 'g.txt'];
    const op = fc.oneof(
      fc.record({ kind: fc.constant('edit' as const), file: fc.constantFrom(...backendFiles), text: fc.string({ maxLength: 12 }) }),
      fc.record({ kind: fc.constant('sameSize' as const), file: fc.constantFrom(...backendFiles), byte: fc.integer({ min: 97, max: 122 }) }),
      fc.record({ kind: fc.constant('rename' as const), file: fc.constantFrom(...backendFiles), to: fc.constantFrom(...backendFiles, 'h.txt', 'd/i.txt') }),
      fc.record({ kind: fc.constant('delete' as const), file: fc.constantFrom(...backendFiles, 'd/e') }),
      fc.record({ kind: fc.constant('symlink' as const), file: fc.constantFrom(...backendFiles), target: fc.constantFrom('a.txt', 'nowhere') }),
      fc.record({ kind: fc.constant('chmod' as const), file: fc.constantFrom(...backendFiles) }),
    );
    // Racy edits keep one mtime in the future: always at or after the tree's write, so a same-size edit that
    // leaves size and mtime as they were must be re-read (git's racy-entry rule).
    const future = new Date(Date.now() + 3_600_000);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }), fc.boolean(), async (batches, resident) => {
        // A turn of the event loop between cases: a case's awaits settle without one (its file calls are
        // synchronous), and the soak's 300 cases back to back kept vitest's worker from its messages for over a
        // minute (a "Timeout calling onTaskUpdate" error, which fails the run).
        await new Promise((resolve) => setImmediate(resolve));
        const root = tempDir();
        writeTree(root, { 'a.txt': 'alpha\n', 'b.txt': 'beta\n', 'd/c.txt': 'gamma\n', 'd/e/f.txt': 'delta\n', 'g.txt': 'epsilon\n' });
        // Racy from the start: their records in the tree file (not only in the journal) are racy.
        for (const file of ['a.txt', 'd/e/f.txt']) utimesSync(join(root, file), future, future);
        const engine = await ContextEngine.open(root);
        await engine.scan();
        for (const batch of batches) {
          for (const o of batch) {
            const file = join(root, o.file);
            const isFile = existsSync(file) && statSync(file).isFile();
            if (o.kind === 'edit') {
              // (replacing a symlink: writing through one may loop)
              if (lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) rmSync(file);
              if (existsSync(join(file, '..'))) writeFileSync(file, o.text);
            } else if (o.kind === 'sameSize' && isFile) {
              const bytes = readFileSync(file);
              if (bytes.length > 0) bytes[0] = bytes[0] === o.byte ? o.byte + 1 : o.byte;
              writeFileSync(file, bytes);
              utimesSync(file, future, future);
            } else if (o.kind === 'rename' && isFile && existsSync(join(root, o.to, '..'))) {
              renameSync(file, join(root, o.to));
            } else if (o.kind === 'delete') {
              rmSync(file, { recursive: true, force: true });
            } else if (o.kind === 'symlink' && existsSync(join(file, '..'))) {
              rmSync(file, { recursive: true, force: true });
              symlinkSync(o.target, file);
            } else if (o.kind === 'chmod' && isFile) {
              chmodSync(file, statSync(file).mode ^ 0o100);
            }
          }
          const report = resident ? await engine.scan() : await scanFresh(root);
          expect(report.root).toBe(await freshRoot(root));
          // And again with nothing changed: same root, nothing re-read but racy entries.
          const again = resident ? await engine.scan() : await scanFresh(root);
          expect(again.root).toBe(report.root);
          expect(again.changed).toBe(false);
          // The stored tree (tree file and journal, whose directories come without child lists) read by a new
          // engine is the tree in memory, record for record, and verifies.
          const reader = await ContextEngine.open(root);
          expect(shape(await reader.listNodes())).toEqual(await freshNodes(root));
          expect((await reader.validate()).errors).toEqual([]);
        }
        await engine.close();
      }),
      { numRuns: trials(12, 300) },
    );
    // The soak's 300 cases took 18-25 s in CI runs here: beside the 30 s default on a loaded machine.
  }, 120_000);
});
