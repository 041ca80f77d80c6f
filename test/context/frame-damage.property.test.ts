/**
 * Damage to one frame file (deleted, cut short, a bit flipped anywhere, field names included) is never answered in
 * silence, and never with an error that names nothing: getFrame and getNode answer as before the damage, or with a
 * ContextError or a warning naming the file, and validate fails naming the file whenever either did (audit s21 F4:
 * a flip in a field name still parses as JSON, and used to end in a TypeError naming no file).
 */
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ContextEngine, ContextError } from '../../src/context/index.js';
import { openSample, tempDir } from './helpers.js';
import { trials } from '../support/soak.js';
import { damage, damageArb, type Damage } from '../support/file-damage.js';

/** A frame of the prepared store: its id, its node, and its file relative to the workspace. */
interface StoredFrame {
  id: string;
  node: string;
  file: string;
}

let prepared: string;
let frames: StoredFrame[];
/** What getFrame answers for each frame id, and getNode (every frame) for each annotated node, before any damage. */
let expectedFrames: Map<string, unknown>;
let expectedNodes: Map<string, unknown>;

const relFile = (id: string): string => join('.merkle', 'frames', id.slice(0, 2), `${id}.json`);

beforeAll(async () => {
  // Agent frames (one with metadata) and synthesized frames (with a basis listing child frames).
  const { root, engine } = await openSample();
  const put = async (node: string, type: string, content: string, metadata?: Record<string, unknown>): Promise<StoredFrame> => {
    const id = await engine.putFrame(node, { type, content, metadata }, 'w');
    return { id, node, file: relFile(id) };
  };
  frames = [
    await put('README.md', 'summary', 'the readme', { lines: 1, tags: ['a', 'b'] }),
    await put('README.md', 'note', 'a note: ünïcödé ✓'),
    await put('src/main.ts', 'summary', 'the entry point'),
    await put('src/util/strings.ts', 'summary', 'string helpers'),
  ];
  const synthesized = await engine.synthesizeBranch('src', 'summary', 's');
  const util = (await engine.getHead('src/util', 'summary'))!;
  frames.push({ id: synthesized, node: 'src', file: relFile(synthesized) }, { id: util, node: 'src/util', file: relFile(util) });
  expectedFrames = new Map();
  expectedNodes = new Map();
  for (const f of frames) {
    expectedFrames.set(f.id, await engine.getFrame(f.id));
    expectedNodes.set(f.node, await engine.getNode(f.node, { maxFrames: 100 }));
  }
  expect((await engine.validate()).ok).toBe(true);
  await engine.close();
  prepared = root;
});


/**
 * A flip of the first letter of every field name of every frame file (the audit's case: the file still parses, the
 * field is missing), and of a letter in the middle of each: always tried, before the random damage.
 */
function fieldNameFlips(): Array<[{ frame: StoredFrame; d: Damage }]> {
  const out: Array<[{ frame: StoredFrame; d: Damage }]> = [];
  for (const frame of frames) {
    const bytes = readFileSync(join(prepared, frame.file));
    const text = bytes.toString('latin1');
    for (const match of text.matchAll(/"([A-Za-z]+)":/g)) {
      const start = match.index + 1;
      for (const at of new Set([start, start + (match[1]!.length >> 1)])) {
        out.push([{ frame, d: { kind: 'flip', at: (at + 0.5) / bytes.length, bit: 0 } }]);
      }
    }
  }
  return out;
}

describe('frame file damage (property)', () => {
  it('getFrame and getNode answer as before, or name the damaged file; validate fails naming it whenever they did', async () => {
    const examples = fieldNameFlips();
    expect(examples.length).toBeGreaterThan(frames.length * 9);
    await fc.assert(
      fc.asyncProperty(
        fc.record({ frame: fc.constantFrom(...frames), d: damageArb }),
        async ({ frame, d }) => {
          // A turn of the event loop between cases: a case's awaits settle without one (its file calls are
          // synchronous), and the soak's thousand cases back to back kept vitest's worker from its messages for over a
          // minute (a "Timeout calling onTaskUpdate" error, which fails the run).
          await new Promise((resolve) => setImmediate(resolve));
          const root = tempDir('merkle-frame-damage-');
          cpSync(prepared, root, { recursive: true, preserveTimestamps: true });
          const file = join(root, frame.file);
          damage(file, d);
          const what = `${JSON.stringify(d)} of the frame file of ${frame.node} (${frame.id})`;
          const warnings: string[] = [];
          const engine = await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) });
          try {
            let named = false;
            const check = async (reader: string, read: () => Promise<unknown>, expected: unknown): Promise<void> => {
              const before = warnings.length;
              let got: unknown;
              try {
                got = await read();
              } catch (error) {
                // An error of the store, naming the file: never a TypeError or RangeError naming nothing.
                expect(error, `${reader} after ${what}: ${String(error)}`).toBeInstanceOf(ContextError);
                expect((error as Error).message, `${reader} after ${what}`).toContain(file);
                named = true;
                return;
              }
              const told = warnings.slice(before);
              for (const warning of told) expect(warning, `${reader} after ${what}`).toContain(file);
              if (told.length > 0) named = true;
              else expect(got, `${reader} after ${what}, with no error or warning naming the file`).toEqual(expected);
            };
            await check('getFrame', () => engine.getFrame(frame.id), expectedFrames.get(frame.id));
            await check('getNode', () => engine.getNode(frame.node, { maxFrames: 100 }), expectedNodes.get(frame.node));
            // The other frames are not affected.
            for (const other of frames.filter((f) => f.id !== frame.id)) expect(await engine.getFrame(other.id)).toEqual(expectedFrames.get(other.id));
            const report = await engine.validate();
            if (named) {
              expect(report.ok, `validate after ${what}`).toBe(false);
              expect(report.errors.some((e) => e.includes(file)), `validate after ${what}: ${JSON.stringify(report.errors)}`).toBe(true);
            }
            // What validate reports is the damaged file (or, for a frame it lists, the frame), nothing that names neither.
            for (const error of report.errors) expect(error.includes(file) || error.includes(frame.id), `validate after ${what}: ${error}`).toBe(true);
            if (!report.ok) expect(report.errors.some((e) => e.includes(file)), `validate after ${what}: ${JSON.stringify(report.errors)}`).toBe(true);
          } finally {
            await engine.close();
            rmSync(root, { recursive: true, force: true });
          }
        },
      ),
      // Every field name flipped in every frame file, then damage at random (fast-check counts the examples in numRuns).
      { numRuns: examples.length + trials(20, 1000), examples },
    );
  }, trials(60_000, 600_000));
});
