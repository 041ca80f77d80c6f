import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Encoder, canonicalJson, compareCodePoints, loadHashBackend } from '../../src/context/hash.js';
import { leafNodeId } from '../../src/context/tree.js';

describe('BLAKE3 backends', () => {
  it('native and wasm backends give the same digests, one-shot and incremental', async () => {
    const native = await loadHashBackend('native');
    const wasm = await loadHashBackend('wasm');
    expect(native.name).toBe('native');
    expect(wasm.name).toBe('wasm');
    const inputs = [Buffer.alloc(0), Buffer.from('abc'), randomBytes(1023), randomBytes(1024), randomBytes(70_000)];
    for (const input of inputs) {
      expect(wasm.digest(input).toString('hex')).toBe(native.digest(input).toString('hex'));
      const a = native.hasher();
      const b = wasm.hasher();
      for (let i = 0; i < input.length; i += 4096) {
        a.update(input.subarray(i, i + 4096));
        b.update(input.subarray(i, i + 4096));
      }
      expect(b.digest().toString('hex')).toBe(a.digest().toString('hex'));
      expect(a.digest).toBeDefined();
    }
  });

  it('matches the published BLAKE3 digest of the empty input', async () => {
    for (const prefer of ['native', 'wasm'] as const) {
      const backend = await loadHashBackend(prefer);
      expect(backend.digest(Buffer.alloc(0)).toString('hex')).toBe('af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
    }
  });
});

describe('canonical encoding helpers', () => {
  it('canonicalJson sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[2,{"y":2,"z":1}]},"b":1}');
  });

  it('orders names by code point, not by UTF-16 unit or locale', () => {
    const astral = '\u{1F600}'; // a surrogate pair in UTF-16, U+1F600 as a code point
    const high = '\uFF21'; // U+FF21, above the surrogate range
    expect(compareCodePoints(high, astral)).toBeLessThan(0);
    expect(high < astral).toBe(false); // plain JS comparison would order them the other way
    expect(['b', 'B', 'a', 'ä'].sort(compareCodePoints)).toEqual(['B', 'a', 'b', 'ä']);
  });
});

describe('canonical encoding', () => {
  /** The documented bytes, built without the Encoder: u32 big-endian, str = u32(byte length) + UTF-8, id32 raw. */
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const str = (s: string) => Buffer.concat([u32(Buffer.byteLength(s)), Buffer.from(s, 'utf8')]);

  it('encodes file and directory ids as the documented bytes (multi-byte names, large counts)', async () => {
    const backend = await loadHashBackend();
    const content = backend.digest(Buffer.from('hello')).toString('hex');
    const fileBytes = Buffer.concat([str('merkle.node.file.v1'), str('dir/ñame.txt'), Buffer.from(content, 'hex')]);
    expect(leafNodeId('file', 'dir/ñame.txt', content, backend)).toBe(backend.digest(fileBytes).toString('hex'));

    const child = backend.digest(Buffer.from('child')).toString('hex');
    const dirBytes = Buffer.concat([str('merkle.node.dir.v1'), str('dir'), u32(0x01020304), Buffer.from([3]), str('ñ'), Buffer.from(child, 'hex')]);
    const enc = new Encoder('merkle.node.dir.v1').str('dir').u32(0x01020304).u8(3).str('ñ');
    expect(enc.id(child).hash(backend)).toBe(backend.digest(dirBytes).toString('hex'));
    const copied = new Encoder('merkle.node.dir.v1').str('dir').u32(0x01020304).u8(3).str('ñ').idFrom(Buffer.concat([Buffer.alloc(5), Buffer.from(child, 'hex')]), 5);
    expect(copied.hash(backend)).toBe(backend.digest(dirBytes).toString('hex'));
  });

  it('refuses numbers that do not fit their field', () => {
    expect(() => new Encoder('t').u8(256)).toThrow(RangeError);
    expect(() => new Encoder('t').u8(-1)).toThrow(RangeError);
    expect(() => new Encoder('t').u32(2 ** 32)).toThrow(RangeError);
    expect(() => new Encoder('t').u32(1.5)).toThrow(RangeError);
  });
});
