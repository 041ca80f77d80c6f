/** The context engine through `backpackflow context ...` (the package ships no `merkle` binary; see the README). */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, tempDir } from './helpers.js';

describe('backpackflow context', () => {
  it('runs the context commands with their own options, exit codes and help', async () => {
    const ws = tempDir();
    writeFileSync(join(ws, 'a.txt'), 'hello\n');
    const scan = await cli(['context', '--workspace', ws, 'scan', '--json']);
    expect(scan.code).toBe(0);
    expect(JSON.parse(scan.stdout)).toMatchObject({ nodes: 2 });
    const status = await cli(['context', '--workspace', ws, 'status', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ nodes: 2, frames: 0 });
    const bad = await cli(['context', '--workspace', ws, 'get-node', 'missing.txt']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^backpackflow context: /);
    const help = await cli(['help', 'context']);
    expect(help.stdout).toContain('Usage: backpackflow context');
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(Object.keys(pkg.bin)).toEqual(['backpackflow']);
  });
});
