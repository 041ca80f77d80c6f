import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { trials } from '../support/soak.js';
import { systemProbe, tryLock, waitForLock, type FileLock, type LockBusy } from '../../src/fs/index.js';
import { tempDir } from './helpers.js';

/** How long an announced waiter that stopped refreshing its announcement keeps its turn (NEXT_STALE_MS in lock.ts). */
const STALE_MS = 500;

interface LoopResult {
  pid: number;
  done: number;
  maxWaitMs: number;
  failed?: string;
}

function taken(result: FileLock | LockBusy): FileLock {
  if ('busy' in result) throw new Error(`lock not taken: ${result.reason}`);
  return result;
}

function holdFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * Starts `writers` children of `fixtures/lock-fairness-loop.ts` on one lock, lets them go at once and resolves to what
 * each reports, with the log of their turns.
 */
async function contend(writers: number, rounds: number, holdMs: number, timeoutMs: number): Promise<{ results: LoopResult[]; log: string[] }> {
  const dir = tempDir();
  const file = join(dir, 'lock');
  const log = join(dir, 'log');
  writeFileSync(log, '');
  const fixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'lock-fairness-loop.ts'));
  const children = Array.from({ length: writers }, () =>
    spawn(process.execPath, [fixture, file, log, String(rounds), String(holdMs), String(timeoutMs)], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const outputs = children.map((child) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    return new Promise<string>((resolve) => child.on('close', () => resolve(out)));
  });
  await Promise.all(children.map((child) => new Promise((resolve) => child.stdout.once('data', resolve))));
  for (const child of children) child.stdin.end('go\n');
  const results = (await Promise.all(outputs)).map((out) => JSON.parse(out.trim().split('\n').at(-1)!) as LoopResult);
  return { results, log: readFileSync(log, 'utf8').trim().split('\n') };
}

/** Every "enter" is followed by the same process's "exit" before anyone else enters ("ask" lines come any time). */
function expectExclusive(log: string[]): void {
  const turns = log.filter((line) => !line.startsWith('ask '));
  for (let i = 0; i < turns.length; i += 2) {
    expect(turns[i]).toMatch(/^enter \d+$/);
    expect(turns[i + 1]).toBe(turns[i]!.replace('enter', 'exit'));
  }
}

/** The most turns other processes took while one process waited (between its "ask" and its "enter"). */
function mostOvertaken(log: string[]): number {
  const asking = new Map<string, number>();
  let most = 0;
  for (const line of log) {
    const [what, pid] = line.split(' ') as [string, string];
    if (what === 'ask') asking.set(pid, 0);
    if (what !== 'enter') continue;
    most = Math.max(most, asking.get(pid)!);
    asking.delete(pid);
    for (const [other, count] of asking) asking.set(other, count + 1);
  }
  return most;
}

/** Starts `fixtures/lock-fairness-wait.ts` on `file`; resolves once it has announced itself beside the lock. */
async function announcedWaiter(file: string): Promise<{ child: ReturnType<typeof spawn>; output: Promise<string> }> {
  const fixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'lock-fairness-wait.ts'));
  const child = spawn(process.execPath, [fixture, file, '20000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const output = new Promise<string>((resolve) => child.on('close', () => resolve(out.trim())));
  const announcement = (): string => (existsSync(`${file}.next`) ? readFileSync(`${file}.next`, 'utf8') : '');
  for (let i = 0; i < 1000 && !announcement().includes(`"pid":${child.pid}`); i++) await new Promise((r) => setTimeout(r, 10));
  expect(announcement()).toContain(`"pid":${child.pid}`);
  return { child, output };
}

describe('waitForLock is fair between processes', () => {
  // Each writer holds the lock 1 ms and asks again at once, as `merkle put-frame` in a loop does. Polling alone let a
  // holder take the lock back within microseconds of releasing it, so a waiter was overtaken until the others had
  // finished all their rounds, or timed out (measured before the line: 80 to 150 turns, a wait of 0.4 s and more).
  // In line, a waiter is overtaken by the waiters older than it (at most writers - 1) and by the turns taken between
  // two of its polls, 1 ms apart while it waits behind another: here 3 to 15 turns, waits of 10 to 80 ms. The bound
  // leaves room for a loaded machine; the timeout only stops a broken run.
  const MAX_OVERTAKEN = 30;
  for (const writers of [2, 3]) {
    it(`${writers} writers in a tight loop: every one finishes, none is overtaken more than ${MAX_OVERTAKEN} times`, async () => {
      // Enough rounds that a lock without the line fails the bound: it lets a waiter be overtaken by all the turns of
      // the others (50, or 2 × 35, against 30).
      const rounds = trials(writers === 2 ? 50 : 35, 1000);
      const { results, log } = await contend(writers, rounds, 1, 3000);
      expect(results.map((r) => r.failed ?? 'ok')).toEqual(Array(writers).fill('ok'));
      expect(results.map((r) => r.done)).toEqual(Array(writers).fill(rounds));
      expect(log).toHaveLength(3 * writers * rounds);
      expectExclusive(log);
      expect(mostOvertaken(log)).toBeLessThanOrEqual(MAX_OVERTAKEN);
    }, 60_000);
  }

  it('a waiter in the same process as a holder in a tight loop gets the next turn', async () => {
    const file = join(tempDir(), 'lock');
    const first = taken(tryLock(file));
    let turns = 0;
    let waiterTurn: number | undefined;
    const waiter = waitForLock(file, { timeoutMs: 3000 }).then((result) => {
      waiterTurn = turns;
      taken(result).release();
    });
    first.release();
    // Without the line, this loop never yields to the timers: the waiter got the lock after all 200 turns.
    for (let i = 0; i < 200; i++) {
      const lock = taken(await waitForLock(file, { timeoutMs: 3000 }));
      turns++;
      holdFor(1);
      lock.release();
    }
    await waiter;
    expect(waiterTurn).toBe(0);
  });

  it('a waiter killed while announced blocks no one; its announcement is removed', async () => {
    const file = join(tempDir(), 'lock');
    const lock = taken(tryLock(file));
    const { child, output } = await announcedWaiter(file);
    child.kill('SIGKILL');
    await output;
    lock.release();
    const started = performance.now();
    taken(await waitForLock(file, { timeoutMs: 5000 })).release();
    // Its pid is dead: judged at once, without waiting for the announcement to age.
    expect(performance.now() - started).toBeLessThan(STALE_MS / 2);
    expect(existsSync(`${file}.next`)).toBe(false);
  });

  it('a stopped waiter keeps its turn only until its announcement is stale, and is served once it runs again', async () => {
    const file = join(tempDir(), 'lock');
    const lock = taken(tryLock(file));
    const { child, output } = await announcedWaiter(file);
    child.kill('SIGSTOP');
    // How old the announcement is as the waiter stops: on a loaded machine it may not have polled (and refreshed it)
    // for a while, and its turn lapses that much sooner. (A last refresh after this only makes the wait longer.)
    const age = Date.now() - statSync(`${file}.next`).mtimeMs;
    lock.release();
    const started = performance.now();
    const second = taken(await waitForLock(file, { timeoutMs: 5000 }));
    const waited = performance.now() - started;
    child.kill('SIGCONT');
    expect(waited).toBeGreaterThan(STALE_MS - age - 100);
    expect(waited).toBeLessThan(STALE_MS + 1000);
    holdFor(20);
    second.release();
    expect(await output).toMatch(/^taken \d+$/);
  });

  it('an announcement that is a link, a FIFO, a directory or no record is ignored, without hanging or writing through a link', async () => {
    const fixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'lock-fairness-wait.ts'));
    const outside = join(tempDir(), 'record');
    // A fresh announcement of a live waiter (this process): followed, it would hold every free lock for 0.5 s.
    const record = { pid: process.pid, host: hostname(), createdAt: 1, bootId: systemProbe.bootId(), startTime: systemProbe.startTime(process.pid), token: 'planted' };
    writeFileSync(outside, JSON.stringify(record));
    const recordTime = statSync(outside).mtimeMs;
    const cases: Record<string, (path: string) => void> = {
      'a symlink to a fresh record': (path) => symlinkSync(outside, path),
      'a FIFO': (path) => execFileSync('mkfifo', [path]),
      'a directory': (path) => mkdirSync(path),
      'a file that is no record': (path) => writeFileSync(path, '{"pid": "x'),
    };
    const runs: Promise<{ kind: string; held: boolean; answer: string }>[] = [];
    for (const [kind, make] of Object.entries(cases)) {
      for (const held of [false, true]) {
        const file = join(tempDir(), 'lock');
        make(`${file}.next`);
        const lock = held ? taken(tryLock(file)) : undefined;
        runs.push(
          new Promise((resolve) => {
            execFile(process.execPath, [fixture, file, '150'], { timeout: 10_000 }, (error, stdout, stderr) => {
              lock?.release();
              resolve({ kind, held, answer: error === null ? stdout.trim() : `failed: ${error.message} ${stderr}` });
            });
          }),
        );
      }
    }
    for (const { kind, held, answer } of await Promise.all(runs)) {
      if (held) expect(answer, kind).toMatch(/^busy held \d+$/);
      else {
        expect(answer, kind).toMatch(/^taken \d+$/);
        expect(Number(answer.split(' ')[1]), `${kind}: waited`).toBeLessThan(200);
      }
    }
    expect(JSON.parse(readFileSync(outside, 'utf8'))).toEqual(record);
    expect(statSync(outside).mtimeMs).toBe(recordTime);
  });
});
