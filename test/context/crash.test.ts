/**
 * Crash tests: a real child process rescans a workspace, or puts frames, in a loop (journal appends and compactions)
 * and is SIGKILLed at a random moment after a given number of acknowledged writes; the store it leaves must read back
 * whole, hold everything the child acknowledged, and validate without errors.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { ContextEngine } from '../../src/context/index.js';
import { tempDir, writeTree } from './helpers.js';
import { trials } from '../support/soak.js';

/** Kills of a rescanning child, and of a child putting frames. */
const TRIALS = trials(3, 30);
const FRAME_TRIALS = trials(2, 15);
const CONCURRENCY = 5;
/** Acknowledged writes before a kill: 1, 2, 3, 1, ... (the kill lands during a journal append after the first). */
const acksBeforeKill = (trial: number): number => 1 + (trial % 3);
const fixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'crash-rescan.ts'));
const framesFixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'crash-frames.ts'));

/** 7 folders of the 20 files the child edits (creating files is slow on a busy disk: no more than those). */
function workspace(): string {
  const root = tempDir('merkle-crash-');
  const files: Record<string, string> = {};
  for (let d = 0; d < 7; d++) for (let f = 0; f < 20; f++) files[`d${d}/f${f}.txt`] = `file ${d}/${f}\n`;
  writeTree(root, files);
  return root;
}

const running = new Set<ChildProcess>();
// A failing trial must not leave its siblings' children rescanning forever.
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Runs the child until it acknowledged `minAcks` writes, kills it 0-100 ms later (during a later write, however
 * loaded the machine), and returns what it acknowledged.
 */
async function killAtRandom(root: string, script: string, minAcks: number): Promise<string[]> {
  const child = spawn(process.execPath, [script, root], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const lines: string[] = [];
  let stderr = '';
  let buffered = '';
  let acknowledged = 0;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (line.startsWith('ack ') && ++acknowledged >= minAcks) resolve();
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    void exited.then(() => reject(new Error(`child exited before its acknowledgement ${minAcks}: ${stderr}`)));
  });
  await ready;
  await new Promise((r) => setTimeout(r, Math.random() * 100));
  child.kill('SIGKILL');
  await exited;
  return lines.filter((l) => l.startsWith('ack ')).map((l) => l.slice(4));
}

describe('context store crash safety (SIGKILL during rescans)', () => {
  it(`${TRIALS} kills always leave a whole tree (with its journal) no older than the last acknowledged scan`, async () => {
    let next = 0;
    let journaled = 0;
    const run = async () => {
      while (next < TRIALS) {
        const trial = next++;
        const root = workspace();
        const acked = await killAtRandom(root, fixture, acksBeforeKill(trial));
        const engine = await ContextEngine.open(root);
        const stored = (await engine.status()).root!;
        if (acked.includes(stored)) expect(stored, 'the last acknowledged scan is on disk').toBe(acked.at(-1));
        const report = await engine.validate();
        expect(report.errors).toEqual([]);
        const rescan = await engine.scan();
        const fresh = await ContextEngine.open(root);
        expect(rescan.root).toBe((await fresh.scan({ force: true })).root);
        if (acked.length > 1) journaled++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, run));
    // Kills land after the first acknowledged rescan, during later ones (journal appends and compactions).
    expect(journaled, 'trials in which the child completed several rescans').toBeGreaterThan(0);
  }, 120_000);
});

describe('context store crash safety (SIGKILL during putFrame)', () => {
  it(`${FRAME_TRIALS} kills never lose an acknowledged frame and leave no error for validate`, async () => {
    let next = 0;
    let acknowledged = 0;
    const run = async () => {
      while (next < FRAME_TRIALS) {
        const trial = next++;
        const root = tempDir('merkle-crash-frames-');
        writeTree(root, Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`d${i % 3}/f${i % 5}.txt`, `file ${i}\n`])));
        const setup = await ContextEngine.open(root);
        await setup.scan();
        await setup.registerAgent({ agentId: 'w', role: 'writer' });
        const acked = await killAtRandom(root, framesFixture, acksBeforeKill(trial));
        acknowledged += acked.length;
        const engine = await ContextEngine.open(root);
        for (const line of acked) {
          const [path, id] = line.split(' ') as [string, string];
          expect((await engine.getFrame(id)).path).toBe(path);
          expect((await engine.listFrames(path)).map((f) => f.frameId)).toContain(id);
        }
        const report = await engine.validate();
        expect(report.errors).toEqual([]);
        // A later writer goes on from there, and validate still finds nothing wrong.
        await engine.putFrame('d0/f0.txt', { type: 'note', content: 'after the crash' }, 'w');
        expect((await engine.validate()).errors).toEqual([]);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, run));
    // Every kill lands after at least one acknowledged frame (however loaded the machine), so the guarantee is exercised.
    expect(acknowledged).toBeGreaterThanOrEqual(FRAME_TRIALS);
  }, 120_000);
});
