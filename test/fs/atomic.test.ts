import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NotRegularFileError, readTextIfExists, readTextIfExistsSync, removeFileIfExists, writeFileAtomic, writeFileAtomicSync, writeJsonAtomic } from '../../src/fs/index.js';
import { tempDir } from './helpers.js';

const variants = [
  { name: 'writeFileAtomic', write: (path: string, data: string, o?: { fsync?: boolean; mode?: number }) => writeFileAtomic(path, data, o) },
  // The temp file created on the thread pool (a keyframe written while its run goes on).
  { name: 'writeFileAtomic, background', write: (path: string, data: string, o?: { fsync?: boolean; mode?: number }) => writeFileAtomic(path, data, { ...o, background: true }) },
  { name: 'writeFileAtomicSync', write: async (path: string, data: string, o?: { fsync?: boolean; mode?: number }) => writeFileAtomicSync(path, data, o) },
];

describe.each(variants)('$name', ({ write }) => {
  it('replaces a symlink in its place (rename), never writes through it: the file it points to is unchanged', async () => {
    const dir = tempDir();
    const outside = tempDir();
    const victim = join(outside, 'precious.txt');
    writeFileSync(victim, 'precious');
    const path = join(dir, 'run.meta.json');
    symlinkSync(victim, path);
    await write(path, 'new');
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(lstatSync(path).isFile()).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('new');
    // A dangling link: nothing is created where it points.
    const dangling = join(dir, 'dangling.json');
    symlinkSync(join(outside, 'made-through-the-link'), dangling);
    await write(dangling, 'x', { fsync: false });
    expect(existsSync(join(outside, 'made-through-the-link'))).toBe(false);
    expect(readdirSync(outside)).toEqual(['precious.txt']);
    expect(lstatSync(dangling).isFile()).toBe(true);
  });

  it('creates missing directories, replaces the file and leaves no temp file', async () => {
    const dir = tempDir();
    const path = join(dir, 'a', 'b', 'c.json');
    await write(path, '1');
    await write(path, '2', { fsync: false });
    expect(readFileSync(path, 'utf8')).toBe('2');
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['c.json']);
  });

  it('keeps the old file and removes the temp file when the rename fails', async () => {
    const dir = tempDir();
    const path = join(dir, 'target');
    mkdirSync(path);
    writeFileSync(join(path, 'inside'), 'x');
    await expect(write(path, 'new')).rejects.toThrow(/EISDIR|directory/);
    expect(readdirSync(dir)).toEqual(['target']);
    expect(readFileSync(join(path, 'inside'), 'utf8')).toBe('x');
  });

  it('rejects with the error when the folder cannot be made (a file is in its place), leaving nothing behind', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'file'), 'x');
    await expect(write(join(dir, 'file', 'sub', 'c.json'), '1')).rejects.toThrow(/ENOTDIR|EEXIST/);
    expect(readdirSync(dir)).toEqual(['file']);
  });

  it('creates the file with the requested mode', async () => {
    const path = join(tempDir(), 'ro');
    await write(path, 'x', { mode: 0o444 });
    expect(statSync(path).mode & 0o777).toBe(0o444);
  });
});

describe('writeJsonAtomic', () => {
  it('writes the JSON of a value', async () => {
    const path = join(tempDir(), 'v.json');
    await writeJsonAtomic(path, { n: [1, 2] });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ n: [1, 2] });
  });
});

describe.each([
  { name: 'readTextIfExists', read: (path: string) => readTextIfExists(path) },
  { name: 'readTextIfExistsSync', read: async (path: string) => readTextIfExistsSync(path) },
])('$name', ({ read }) => {
  it('reads a file, gives undefined for a missing one, and refuses a link, a directory or a FIFO at once, naming it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f'), 'héllo');
    symlinkSync(join(dir, 'f'), join(dir, 'link'));
    symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'));
    await expect(read(join(dir, 'f'))).resolves.toBe('héllo');
    // A link planted in a store's folder is never read through (it could point at any file of the user's).
    await expect(read(join(dir, 'link'))).rejects.toThrow(`${join(dir, 'link')} is a symbolic link, not a regular file`);
    await expect(read(join(dir, 'link'))).rejects.toBeInstanceOf(NotRegularFileError);
    await expect(read(join(dir, 'dangling'))).rejects.toThrow(`${join(dir, 'dangling')} is a symbolic link`);
    await expect(read(join(dir, 'missing'))).resolves.toBeUndefined();
    await expect(read(join(dir, 'missing', 'deeper'))).resolves.toBeUndefined();
    await expect(read(dir)).rejects.toThrow(`${dir} is a directory, not a regular file`);
    // A FIFO planted where a file should be: not waited on (the synchronous read would block the whole process).
    execFileSync('mkfifo', [join(dir, 'planted')]);
    await expect(read(join(dir, 'planted'))).rejects.toThrow(`${join(dir, 'planted')} is a FIFO (named pipe), not a regular file`);
  });
});

describe('removeFileIfExists', () => {
  it('removes a file (true), answers false for a missing one, and throws for a directory, which it leaves', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f'), 'x');
    expect(removeFileIfExists(join(dir, 'f'))).toBe(true);
    expect(existsSync(join(dir, 'f'))).toBe(false);
    expect(removeFileIfExists(join(dir, 'f'))).toBe(false);
    mkdirSync(join(dir, 'd'));
    expect(() => removeFileIfExists(join(dir, 'd'))).toThrow(/EISDIR|EPERM|directory/);
    expect(statSync(join(dir, 'd')).isDirectory()).toBe(true);
  });
});
