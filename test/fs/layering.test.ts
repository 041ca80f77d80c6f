import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('src/fs', () => {
  it('is the ground floor: imports nothing else of ours', () => {
    const dir = join(import.meta.dirname, '..', '..', 'src', 'fs');
    for (const name of readdirSync(dir)) expect(readFileSync(join(dir, name), 'utf8'), name).not.toMatch(/from '\.\.\//);
  });
});
