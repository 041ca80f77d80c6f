import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { tempDir, writeTree } from './helpers.js';

/** `root` joined with a relative path given as raw bytes (so that it can hold bytes that are not UTF-8). */
function rawPath(root: string, ...parts: (string | number[])[]): Buffer {
  return Buffer.concat([Buffer.from(root), ...parts.map((p) => Buffer.concat([Buffer.from('/'), typeof p === 'string' ? Buffer.from(p) : Buffer.from(p)]))]);
}

const DIR_FF = [0x64, 0x69, 0x72, 0xff]; // 'dir\xff'
const BAD_FE = [0x62, 0x61, 0x64, 0xfe, 0x2e, 0x74, 0x78, 0x74]; // 'bad\xfe.txt'

async function open(root: string): Promise<{ engine: ContextEngine; told: string[] }> {
  const told: string[] = [];
  return { engine: await ContextEngine.open(root, { onWarning: (m) => told.push(m) }), told };
}

describe('names that are not valid UTF-8', () => {
  it('are left out with a warning naming the directory and the escaped name, at every scan and in validate', async () => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a', 'sub/ok\uFFFD.txt': 'a valid name holding U+FFFD is kept' });
    mkdirSync(rawPath(root, DIR_FF));
    for (let i = 0; i < 3; i++) writeFileSync(rawPath(root, DIR_FF, `f${i}.txt`), 'x');
    writeFileSync(rawPath(root, 'sub', BAD_FE), 'file with an invalid UTF-8 name\n');

    const { engine, told } = await open(root);
    const first = await engine.scan();
    const expected = [
      expect.stringMatching(/^left out 'dir\\xff' \(a directory, with everything in it\) in '\.': its name is not valid UTF-8/),
      expect.stringMatching(/^left out 'bad\\xfe\.txt' in 'sub': its name is not valid UTF-8/),
    ];
    expect(first.warnings).toEqual(expected);
    expect(told).toEqual(expected);
    expect((await engine.listNodes()).map((n) => n.path).sort()).toEqual(['', 'a.txt', 'sub', 'sub/ok\uFFFD.txt']);

    // Nothing changed: the warnings come again (the quick check does not trust those directories), from any process.
    const again = await (await open(root)).engine.scan();
    expect(again.changed).toBe(false);
    expect(again.warnings).toEqual(expected);

    const report = await engine.validate();
    expect(report.ok).toBe(true);
    expect(report.warnings).toEqual(expect.arrayContaining(expected));
  });

  it('two of them in one directory are both named, not reported as one NFC name', async () => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a' });
    writeFileSync(rawPath(root, [0x78, 0xff, 0x2e, 0x74, 0x78, 0x74]), '1');
    writeFileSync(rawPath(root, [0x78, 0xfe, 0x2e, 0x74, 0x78, 0x74]), '2');
    const { engine } = await open(root);
    const report = await engine.scan();
    expect(report.nodes).toBe(2);
    expect(report.warnings.map((w) => w.slice(0, w.indexOf(' in ')))).toEqual(["left out 'x\\xfe.txt'", "left out 'x\\xff.txt'"]);
  });

  it('one that .gitignore matches (as decoded with U+FFFD) is left out silently', async () => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a', '.gitignore': 'x?.txt\n' });
    writeFileSync(rawPath(root, [0x78, 0xff, 0x2e, 0x74, 0x78, 0x74]), '1');
    const { engine, told } = await open(root);
    expect((await engine.scan()).warnings).toEqual([]);
    expect(told).toEqual([]);
  });
});
