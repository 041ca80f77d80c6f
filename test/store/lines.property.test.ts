import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EventStore } from '../../src/store/index.js';
import { dataEndOf, endOfData, readLineBatches } from '../../src/store/lines.js';
import { trials } from '../support/soak.js';

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

/** The paths this process holds open (Linux: /proc/self/fd). */
function openPaths(): string[] {
  return readdirSync('/proc/self/fd').map((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return '';
    }
  });
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
      { numRuns: trials(30, 300) },
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
    expect(openPaths()).not.toContain(path);
  });

  it('closes the file of a scan whose iterator was dropped unfinished (a consumer that took a few lines and let go) once the iterator is collected', async () => {
    const path = join(dir, 'dropped.jsonl');
    writeFileSync(path, `${'z'.repeat(100)}\n`.repeat(5000));
    await (async () => {
      for (let i = 0; i < 20; i++) {
        const scan = readLineBatches(path, 0, 505_000, 0);
        expect((await scan.next()).done).toBe(false);
      }
    })();
    expect(openPaths().filter((p) => p === path).length).toBe(20);
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    for (let i = 0; i < 20 && openPaths().includes(path); i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(openPaths()).not.toContain(path);
  });
});

describe('the end of the data', () => {
  it('is found behind a tail of zeros longer than any writer reserves, and the scan lets other work run meanwhile (through the thread pool past its first MiB)', async () => {
    const path = join(dir, 'zero-tail.jsonl');
    writeFileSync(path, '{"a":1}\n{"b":2}\n');
    // 16 MiB of zeros, sparse: what a copy or a damaged disk can leave.
    truncateSync(path, 16 + 16 * 1024 * 1024);
    let ranMeanwhile = false;
    setImmediate(() => (ranMeanwhile = true));
    expect(await dataEndOf(path)).toBe(16);
    expect(ranMeanwhile).toBe(true);
    const fd = openSync(path, 'r');
    try {
      // Short tails are found in place.
      expect(await endOfData(fd, 16 + 1000)).toBe(16);
    } finally {
      closeSync(fd);
    }
  });
});

describe('a FIFO where a log should be', () => {
  it('is refused at once with an error naming it, not waited on (a reader reads the log in place)', async () => {
    const store = new EventStore({ dataDir: join(dir, 'fifo'), sessionKey: 's', runId: 'r' });
    execFileSync('mkdir', ['-p', store.paths.dir]);
    execFileSync('mkfifo', [store.paths.events]);
    await expect(store.readAll()).rejects.toThrow(`${store.paths.events} is a FIFO (named pipe), not a regular file`);
    await expect(store.readPage(10, 0)).rejects.toThrow(/FIFO \(named pipe\), not a regular file/);
  });
});
