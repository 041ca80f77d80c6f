import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadHashBackend } from '../../src/context/hash.js';
import { IgnoreRules } from '../../src/context/ignore-rules.js';
import { quickCheck, treeStats } from '../../src/context/quick-check.js';
import { scanWorkspace } from '../../src/context/scan.js';
import { MerkleStore } from '../../src/context/store.js';
import { ContextEngine } from '../../src/context/index.js';
import type { Tree } from '../../src/context/tree.js';
import { settle, tempDir, writeTree } from './helpers.js';

type Swap = 'symlink' | 'dir' | 'other-file' | 'removed' | 'fifo';

/**
 * The race of audit item 3: a scan's quick check (no lock) finds `target` changed; before the locked scan reads it,
 * it is replaced. Returns the tree that scan builds from the quick check's findings, and the tree a forced scan of
 * the workspace as it is now builds.
 */
async function scanAfterSwap(files: Record<string, string>, target: string, swap: Swap, outside: string): Promise<{ raced: Tree; fresh: Tree }> {
  const root = tempDir('scan-race-');
  writeTree(root, files);
  settle(root);
  const engine = await ContextEngine.open(root);
  await engine.scan();
  const backend = await loadHashBackend();
  const stored = new MerkleStore(root, backend).readTree()!;
  const rules = new IgnoreRules(root, {});
  appendFileSync(join(root, target), 'changed\n');
  const stale = await quickCheck({ root, tree: treeStats(stored.tree!), rulesKey: rules.key, racyFromMs: stored.writtenMs! });
  expect(stale?.map((s) => s.record.path)).toEqual([target]);

  const abs = join(root, target);
  let writer: ReturnType<typeof spawn> | undefined;
  if (swap === 'removed') rmSync(abs);
  if (swap === 'symlink') {
    rmSync(abs);
    symlinkSync(outside, abs);
  }
  if (swap === 'dir') {
    rmSync(abs);
    mkdirSync(abs);
    writeFileSync(join(abs, 'inner.txt'), 'inner');
  }
  if (swap === 'other-file') {
    writeFileSync(`${abs}.new`, 'another file, another inode\n');
    renameSync(`${abs}.new`, abs);
  }
  if (swap === 'fifo') {
    rmSync(abs);
    await run('mkfifo', [abs]);
    // A writer that holds the FIFO open for 2 s and writes nothing, so that a scan that reads it blocks that long
    // (and then reads it as an empty file) instead of forever.
    writer = spawn('sh', ['-c', 'exec 3>"$1"; sleep 2', 'sh', abs], { stdio: 'ignore' });
  }
  try {
    const raced = await scanWorkspace({ workspaceRoot: root, rules, backend, previous: stored.tree, racyFromMs: stored.writtenMs, quick: { stale } });
    const fresh = await scanWorkspace({ workspaceRoot: root, rules, backend, force: true });
    return { raced: raced.tree, fresh: fresh.tree };
  } finally {
    writer?.kill();
  }
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => spawn(command, args, { stdio: 'ignore' }).on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`)))));
}

function leaves(tree: Tree): unknown[] {
  return [...tree.records()].filter((r) => r.kind !== 'dir').map(({ path, kind, nodeId, contentHash, size, mtimeMs, ino }) => ({ path, kind, nodeId, contentHash, size, mtimeMs, ino }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

describe('scan: an entry replaced between the quick check and the locked scan', () => {
  it('a file replaced by a FIFO is left out (as the listing leaves FIFOs out), and is never read', async () => {
    const started = Date.now();
    const { raced, fresh } = await scanAfterSwap({ 'f.txt': 'one\n', 'g.txt': 'other\n' }, 'f.txt', 'fifo', '/dev/null');
    // Opened without blocking and fstat'ed: a read would have waited for the writer (2 s).
    expect(Date.now() - started).toBeLessThan(1500);
    expect(raced.get('f.txt')).toBeUndefined();
    expect(raced.rootId).toBe(fresh.rootId);
  });

  it('a file replaced by a symlink is recorded as a symlink: its target is never read', async () => {
    const outside = join(tempDir('scan-race-outside-'), 'secret.txt');
    writeFileSync(outside, 'a file outside the workspace\n');
    const { raced } = await scanAfterSwap({ 'f.txt': 'one\n' }, 'f.txt', 'symlink', outside);
    const record = raced.get('f.txt')!;
    expect(record.kind).toBe('symlink');
    const backend = await loadHashBackend();
    expect(record.contentHash).toBe(backend.digest(Buffer.from(outside)).toString('hex'));
  });

  it('whatever replaces it, the scan builds the tree a forced scan of the workspace as it is now builds', async () => {
    const outside = join(tempDir('scan-race-outside-'), 'secret.txt');
    writeFileSync(outside, 'a file outside the workspace\n');
    const names = fc.constantFrom('a.txt', 'b.md', 'd/c.txt', 'd/e/f.txt');
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(names, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.constantFrom<Swap>('symlink', 'dir', 'other-file', 'removed'),
        async (paths, pick, swap) => {
          const files = Object.fromEntries(paths.map((p) => [p, `content of ${p}\n`]));
          const { raced, fresh } = await scanAfterSwap(files, paths[pick % paths.length]!, swap, outside);
          expect(raced.rootId).toBe(fresh.rootId);
          expect(leaves(raced)).toEqual(leaves(fresh));
        },
      ),
      { numRuns: 25 },
    );
  });
});
