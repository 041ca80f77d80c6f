/**
 * A file rewritten (same size) while a scan reads it, within the timestamp tick of its previous write: the scan
 * records the hash of the bytes it read, and the file keeps the size, mtime and inode that scan recorded. The next
 * scan must not trust that stat: entries whose mtime is not older than the instant their scan began are racy.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { loadHashBackend } from '../../src/context/hash.js';
import { bundledScript } from '../support/bundle.js';
import { settle, tempDir, writeTree } from './helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The child bundled with the context sources: `node <bundle>` starts in a third of `--import tsx`'s CPU. */
const rewriteDuringScan = await bundledScript(join(here, 'fixtures', 'rewrite-during-scan.ts'));

describe('scan: a same-size rewrite during a scan, in the tick of the previous write', () => {
  it.each([
    { timestamps: 'coarse' as const, described: '2 s timestamps (FAT): a whole-second mtime' },
    { timestamps: 'fine' as const, described: 'fine timestamps, a clock that ticks in milliseconds' },
  ])('the next scan records the hash of the bytes on disk, not of the version overwritten during the previous scan ($described)', async ({ timestamps }) => {
    const root = tempDir('scan-racy-rewrite-');
    writeTree(root, { 'a.txt': 'AAAA', 'b.txt': 'unchanged' });
    settle(root);
    const first = spawnSync(process.execPath, [rewriteDuringScan, root, timestamps], { encoding: 'utf8', timeout: 20_000 });
    expect(first.stderr).toBe('');
    const backend = await loadHashBackend();
    const hashOf = (text: string): string => backend.digest(Buffer.from(text)).toString('hex');
    // The child's scan recorded the bytes it read, AAAA; the file now holds BBBB with the stat that scan recorded.
    expect(first.stdout.trim()).toBe(JSON.stringify({ hashed: 2, contentHash: hashOf('AAAA'), content: 'BBBB' }));

    const engine = await ContextEngine.open(root, { onWarning: () => undefined });
    const report = await engine.scan();
    expect(((await engine.resolveNode('a.txt')) as { contentHash?: string }).contentHash).toBe(hashOf('BBBB'));
    expect(report.changedPaths).toContain('a.txt');
    // Only the racy file was read again: b.txt, settled long before, kept its cached stat.
    expect(report.hashed).toBe(1);
    await engine.close();
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('BBBB');
  });

  it('a file last changed well before a scan is trusted by the next scans, and a file changed just before it is read once more, then trusted', async () => {
    const root = tempDir('scan-racy-settled-');
    writeTree(root, { 'old.txt': 'settled', 'sub/old.txt': 'settled too' });
    settle(root);
    const engine = await ContextEngine.open(root, { onWarning: () => undefined });
    await engine.scan();
    writeFileSync(join(root, 'fresh.txt'), 'just written');
    const first = await engine.scan();
    expect(first.hashed).toBe(1); // fresh.txt, new
    // fresh.txt changed within the racy window of the scan that recorded it (rounded down to 2 s): read again, and
    // unchanged. A scan whose racy instant has passed its mtime records that, and from then on it is trusted.
    let rescans = 0;
    for (;;) {
      const report = await engine.scan();
      expect(report.changed).toBe(false);
      if (report.hashed === 0) break;
      expect(report.hashed).toBe(1);
      rescans++;
      expect(rescans).toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await engine.scan()).hashed).toBe(0);
    await engine.close();
  });
});
