/**
 * Property (audit finding 6): damage one to three files of a memory (a random truncation, byte flip or deletion of an
 * item file or keyword.json, or another item's file copied over an item's). Search and get then return the right
 * items, or an error or a warning naming the damaged file; never a different answer in silence, and a damaged item
 * never breaks the answers about the others.
 *
 * The right answer: with keyword.json intact, the original ranking without the damaged items (the next best taking
 * their places); with it damaged, the ranking of an index rebuilt from the undamaged items. What cannot be told: an
 * item file deleted together with the index that listed it is simply gone (nothing is left that knew it).
 *
 * `MEMORY_DAMAGE_RUNS` sets the number of cases (by default 25 in `npm test`, 500 in `npm run test:soak`).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KeywordIndex, MemoryStore, type MemoryItem, type ScoredMemoryItem } from '../../src/store/index.js';
import { tokensOf } from '../../src/store/memory-store.js';
import { trials } from '../support/soak.js';

const RUNS = Number(process.env['MEMORY_DAMAGE_RUNS'] ?? trials(25, 500));
const WORDS = ['tide', 'moon', 'coast', 'wind', 'rain', 'storm', 'harbour'];
const ITEMS: MemoryItem[] = Array.from({ length: 8 }, (_, i) => ({
  id: `item-${i}`,
  content: Array.from({ length: 2 + (i % 4) }, (_, j) => WORDS[(i * 3 + j * (i + 1)) % WORDS.length]).join(' '),
  createdAt: i,
}));
const QUERIES = ['tide', 'moon coast', 'storm rain wind', 'harbour tide moon'];
const TOP_K = 3;
const INDEX = 'index';

let pristine: string;
/** Relative path of each file that may be damaged: the item files by id, and the index. */
let files: Map<string, string>;

beforeAll(async () => {
  pristine = mkdtempSync(join(tmpdir(), 'bpf-memory-damage-'));
  const store = new MemoryStore({ dataDir: pristine, durability: 'never' });
  await store.writeMany(ITEMS);
  await store.close();
  files = new Map(ITEMS.map((item) => [item.id, join('memory', 'shared', 'items', `${item.id}.json`)]));
  files.set(INDEX, join('memory', 'shared', 'index', 'keyword.json'));
});
afterAll(() => rmSync(pristine, { recursive: true, force: true }));

type Damage =
  | { kind: 'truncate'; target: string; at: number }
  | { kind: 'flip'; target: string; at: number; mask: number }
  | { kind: 'delete'; target: string }
  | { kind: 'swap'; target: string; from: string };

const targetArb = fc.constantFrom(INDEX, ...ITEMS.map((i) => i.id));
const itemArb = fc.constantFrom(...ITEMS.map((i) => i.id));
const damageArb: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), target: targetArb, at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }) }),
  fc.record({ kind: fc.constant('flip' as const), target: targetArb, at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('delete' as const), target: targetArb }),
  fc.record({ kind: fc.constant('swap' as const), target: itemArb, from: itemArb }),
);

function damage(dir: string, d: Damage): void {
  const path = join(dir, files.get(d.target)!);
  if (!existsSync(path)) return;
  if (d.kind === 'delete') return unlinkSync(path);
  if (d.kind === 'swap') return writeFileSync(path, readFileSync(join(pristine, files.get(d.from)!)));
  const bytes = readFileSync(path);
  if (d.kind === 'truncate') return truncateSync(path, Math.floor(d.at * bytes.length));
  bytes[Math.floor(d.at * bytes.length)]! ^= d.mask;
  writeFileSync(path, bytes);
}

/** Whether a file still holds what it held (as JSON: a changed trailing newline is no damage). */
function intact(dir: string, target: string): boolean {
  const path = join(dir, files.get(target)!);
  if (!existsSync(path)) return false;
  try {
    return isDeepStrictEqual(JSON.parse(readFileSync(path, 'utf8')), JSON.parse(readFileSync(join(pristine, files.get(target)!), 'utf8')));
  } catch {
    return false;
  }
}

function indexOf(items: MemoryItem[]): KeywordIndex {
  const index = new KeywordIndex();
  for (const item of items) index.set(item.id, tokensOf(item));
  return index;
}

const byId = new Map(ITEMS.map((item) => [item.id, item]));
const answer = (hits: ScoredMemoryItem[]): Array<[string, string]> => hits.map((h) => [h.item.id, h.score.toFixed(9)]);

describe('memory damage', () => {
  it(`property: ${RUNS} random damages: search and get give the right items or warn naming the damaged file`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(damageArb, { minLength: 1, maxLength: 3 }), async (damages) => {
        const dir = mkdtempSync(join(tmpdir(), 'bpf-memory-case-'));
        const warnings: string[] = [];
        const spy = vi.spyOn(process, 'emitWarning').mockImplementation((warning) => void warnings.push(String(warning)));
        try {
          cpSync(pristine, dir, { recursive: true });
          for (const d of damages) damage(dir, d);
          const good = ITEMS.filter((item) => intact(dir, item.id));
          const bad = ITEMS.filter((item) => !good.includes(item)).map((item) => item.id);
          const indexIntact = intact(dir, INDEX);
          const named = (id: string): boolean => warnings.some((w) => w.includes(join(dir, files.get(id)!)));
          /** A deleted item is noticed only while the index that lists it is intact. */
          const noticeable = (id: string): boolean => indexIntact || existsSync(join(dir, files.get(id)!));

          const store = new MemoryStore({ dataDir: dir, durability: 'never' });
          for (const query of QUERIES) {
            const hits = await store.searchScored(query, TOP_K);
            const reference = indexIntact
              ? indexOf(ITEMS).search(query, ITEMS.length).filter((h) => good.some((g) => g.id === h.id)).slice(0, TOP_K)
              : indexOf(good).search(query, TOP_K);
            expect(answer(hits), `${query}: ${JSON.stringify(damages)}`).toEqual(reference.map((h) => [h.id, h.score.toFixed(9)]));
            for (const hit of hits) expect(hit.item).toEqual(byId.get(hit.item.id));
            // Each damaged item that the undamaged memory answered is named.
            for (const hit of indexOf(ITEMS).search(query, TOP_K)) {
              if (bad.includes(hit.id) && noticeable(hit.id)) expect(named(hit.id), `${hit.id} for ${query}: ${JSON.stringify(damages)}\n${warnings.join('\n')}`).toBe(true);
            }
          }
          for (const item of ITEMS) {
            const got = store.get(item.id);
            if (!bad.includes(item.id)) await expect(got).resolves.toEqual(item);
            else if (existsSync(join(dir, files.get(item.id)!))) await expect(got).rejects.toThrow(join(dir, files.get(item.id)!));
            else {
              await expect(got).resolves.toBeNull();
              if (noticeable(item.id)) expect(named(item.id), `${item.id}: ${JSON.stringify(damages)}`).toBe(true);
            }
          }
          await store.close();
        } finally {
          spy.mockRestore();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
