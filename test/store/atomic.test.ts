import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic, writeJsonAtomic } from '../../src/store/index.js';
import { tempDir } from './helpers.js';

describe('writeFileAtomic', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => tmp.cleanup());

  it('creates missing directories, replaces the file and leaves no temp file', async () => {
    const path = join(tmp.dir, 'a', 'b', 'c.json');
    await writeJsonAtomic(path, { n: 1 });
    await writeJsonAtomic(path, { n: 2 }, { fsync: false });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ n: 2 });
    expect(readdirSync(join(tmp.dir, 'a', 'b'))).toEqual(['c.json']);
  });

  it('keeps the old file and removes the temp file when the rename fails', async () => {
    const path = join(tmp.dir, 'target');
    mkdirSync(path);
    writeFileSync(join(path, 'inside'), 'x');
    await expect(writeFileAtomic(path, 'new')).rejects.toThrow();
    expect(readdirSync(tmp.dir)).toEqual(['target']);
    expect(readFileSync(join(path, 'inside'), 'utf8')).toBe('x');
  });
});
