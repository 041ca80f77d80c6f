import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { readLineBatches } from '../../src/store/lines.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The lines of `text` from byte `start` (a line start) to `end`, as a reader must see them: complete lines only. */
function expectedLines(bytes: Buffer, start: number, end: number, firstIndex: number): { text: string; offset: number; index: number }[] {
  const out: { text: string; offset: number; index: number }[] = [];
  let at = start;
  let index = firstIndex;
  for (;;) {
    const nl = bytes.indexOf(0x0a, at);
    if (nl === -1 || nl >= end) return out;
    out.push({ text: bytes.toString('utf8', at, nl), offset: at, index: index++ });
    at = nl + 1;
  }
}

describe('readLineBatches', () => {
  it('yields every complete line of a range exactly once, with its offset and index, whether it reads in place or through the thread pool (ranges past 1 MiB)', async () => {
    // Lines of 0 to 70,000 bytes (multi-byte characters included), so that lines straddle chunk borders (64 KB
    // doubling to 256 KB) and the border where reading goes asynchronous (1 MiB).
    const line = fc.tuple(fc.nat({ max: 70_000 }), fc.constantFrom('x', 'é', '€', '𝄞')).map(([length, char]) => char.repeat(Math.max(0, Math.floor(length / Buffer.byteLength(char)))));
    let file = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 60 }), fc.constantFrom(0, 600, 1100, 1500), fc.nat(), fc.nat(), fc.boolean(), async (random, padding, startPick, endPick, torn) => {
        // Padding lines of 1,000 bytes (before the random ones) take most ranges past the first MiB.
        const lines = [...Array.from({ length: padding }, (_, i) => `${i} `.padEnd(999, 'p')), ...random];
        const bytes = Buffer.from(lines.map((l) => `${l}\n`).join('') + (torn ? '{"torn' : ''));
        const path = join(dir, `log-${file++}.jsonl`);
        writeFileSync(path, bytes);
        // Start at a line start; end anywhere from there to the end of the file.
        const starts = [0];
        for (const l of lines) starts.push(starts[starts.length - 1]! + Buffer.byteLength(l) + 1);
        // A start in the padding and the file's end as often as not, so that the range reaches past its first MiB.
        const first = startPick % 2 === 0 ? startPick % Math.min(starts.length, 50) : startPick % starts.length;
        const start = starts[first]!;
        const end = endPick % 2 === 0 ? bytes.length : start + (endPick % (bytes.length - start + 1));
        const got: { text: string; offset: number; index: number }[] = [];
        for await (const batch of readLineBatches(path, start, end, first)) {
          for (const raw of batch) {
            expect(raw.bytes.toString('utf8')).toBe(raw.text);
            got.push({ text: raw.text, offset: raw.offset, index: raw.index });
          }
        }
        expect(got).toEqual(expectedLines(bytes, start, end, first));
        rmSync(path);
      }),
      { numRuns: 60 },
    );
  });

  it('closes the file when the reader stops early, in place or past the first MiB', async () => {
    const path = join(dir, 'early.jsonl');
    writeFileSync(path, `${'y'.repeat(1000)}\n`.repeat(3000));
    for (const stopAfter of [1, 2_000]) {
      let seen = 0;
      for await (const batch of readLineBatches(path, 0, 3_003_000, 0)) {
        seen += batch.length;
        if (seen >= stopAfter) break;
      }
      expect(seen).toBeGreaterThanOrEqual(stopAfter);
    }
    // An open descriptor would keep the file's data alive; on Linux /proc shows what this process holds open.
    const open = readdirSync('/proc/self/fd').map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    });
    expect(open).not.toContain(path);
  });
});
