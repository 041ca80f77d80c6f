import { chmodSync, chownSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine, ContextError } from '../../src/context/index.js';
import { settle, tempDir, writeTree } from './helpers.js';

const NOBODY = 65534;

/**
 * Runs `fn` as a user that permissions apply to. The tests run as root, which reads everything: then the workspace
 * is given to `nobody` and the effective uid set to it for the call (the real uid stays root, so it can be set
 * back). A user other than root runs `fn` as it is.
 */
async function unprivileged<T>(root: string, fn: () => Promise<T>): Promise<T> {
  if (process.geteuid?.() !== 0) return fn();
  const give = (path: string): void => {
    chownSync(path, NOBODY, NOBODY);
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      if (entry.isDirectory()) give(join(path, entry.name));
      else chownSync(join(path, entry.name), NOBODY, NOBODY);
    }
  };
  give(root);
  process.seteuid!(NOBODY);
  try {
    return await fn();
  } finally {
    process.seteuid!(0);
  }
}

async function scanError(root: string, force = false): Promise<ContextError> {
  const engine = await ContextEngine.open(root);
  const error = await unprivileged(root, () => engine.scan({ force }).then(() => undefined, (e: unknown) => e));
  expect(error).toBeInstanceOf(ContextError);
  return error as ContextError;
}

describe.skipIf(process.platform === 'win32')('scan: an entry this user cannot read', () => {
  it('a directory that cannot be searched: a ContextError naming the entry and what to do, on the quick check path too', async () => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a', 'lockdir/f': 'x' });
    settle(root);
    await (await ContextEngine.open(root)).scan();
    chmodSync(join(root, 'lockdir'), 0);
    try {
      // The quick check lstats lockdir/f (its directory's stat is unchanged): EACCES.
      const quick = await scanError(root);
      expect(quick.code).toBe('SCAN_FAILED');
      expect(quick.details).toEqual({ path: 'lockdir/f' });
      expect(quick.message).toMatch(/^cannot stat 'lockdir\/f': EACCES: permission denied, lstat '.*'; make the directories on its path searchable by this user, or add it to \.gitignore/);

      const forced = await scanError(root, true);
      expect(forced.details).toEqual({ path: 'lockdir' });
      expect(forced.message).toMatch(/^cannot read directory 'lockdir': EACCES: .*; make it readable by this user, or add it to \.gitignore to leave it out$/);
    } finally {
      chmodSync(join(root, 'lockdir'), 0o755);
    }
  });

  it('a changed file that cannot be read: a ContextError naming it and what to do', async () => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a', 'locked.txt': 's' });
    settle(root);
    await (await ContextEngine.open(root)).scan();
    writeFileSync(join(root, 'locked.txt'), 'changed');
    chmodSync(join(root, 'locked.txt'), 0);
    const error = await scanError(root);
    expect(error.details).toEqual({ path: 'locked.txt' });
    expect(error.message).toMatch(/^cannot read 'locked\.txt': EACCES: .*; make it readable by this user, or add it to \.gitignore to leave it out$/);
  });
});
