import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { inspectLock, lockHeld, parseStatStartTime, parseStatState, systemProbe, tryLock, waitForLock, type FileLock, type LockBusy, type ProcessProbe } from '../../src/fs/index.js';
import { tempDir } from './helpers.js';

const HOST = hostname();
const DEAD_PID = 2 ** 22 + 12345;

function taken(result: FileLock | LockBusy): FileLock {
  if ('busy' in result) throw new Error(`lock not taken: ${result.reason}`);
  return result;
}

/** Sets the lock file's mtime (its lease) `ms` in the past (negative: in the future). */
function age(file: string, ms: number): void {
  const then = new Date(Date.now() - ms);
  utimesSync(file, then, then);
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** A real, live process other than this one (`sleep`, which starts in a fraction of node's time); resolves once it runs. */
async function liveChild(): Promise<number> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  // 'spawn' comes once the executable is running (an exec that failed is an 'error').
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child.pid!;
}

describe('tryLock and waitForLock', () => {
  it('records pid, host, boot id and process start time, and releases only its own lock file', () => {
    const file = join(tempDir(), 'lock');
    const lock = taken(tryLock(file));
    const record = JSON.parse(readFileSync(file, 'utf8'));
    expect(record).toMatchObject({ pid: process.pid, host: HOST, bootId: systemProbe.bootId(), startTime: systemProbe.startTime(process.pid) });
    expect(record.startTime).toMatch(/^\d+$/);
    expect(tryLock(file)).toMatchObject({ busy: true, reason: 'held', holder: { pid: process.pid } });
    writeFileSync(file, JSON.stringify({ ...record, token: 'someone else' }));
    lock.release();
    expect(existsSync(file)).toBe(true);
    expect(readdirSync(join(file, '..'))).toEqual(['lock']);
  });

  it('serializes holders: a waiter gets the lock once the first releases it', async () => {
    const file = join(tempDir(), 'lock');
    const first = taken(tryLock(file));
    const order: string[] = [];
    const second = waitForLock(file, { timeoutMs: 2000 }).then((r) => {
      order.push('second');
      taken(r).release();
    });
    await new Promise((r) => setTimeout(r, 30));
    order.push('first releases');
    first.release();
    await second;
    expect(order).toEqual(['first releases', 'second']);
    expect(existsSync(file)).toBe(false);
  });

  it('times out on a live holder and reports it; reports a file that is no lock record at once', async () => {
    const file = join(tempDir(), 'lock');
    const lock = taken(tryLock(file));
    const started = Date.now();
    expect(await waitForLock(file, { timeoutMs: 60 })).toMatchObject({ busy: true, reason: 'held', holder: { pid: process.pid, host: HOST } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    lock.release();
    writeFileSync(file, 'garbage');
    expect(await waitForLock(file, { timeoutMs: 5000 })).toEqual({ busy: true, reason: 'unreadable', why: expect.stringMatching(/is not a lock record.*remove it if no writer is running/) });
  });

  it('recovers a lock left by a dead process', () => {
    const file = join(tempDir(), 'lock');
    writeFileSync(file, JSON.stringify({ pid: DEAD_PID, host: HOST, createdAt: 1 }));
    const lock = taken(tryLock(file));
    expect(JSON.parse(readFileSync(file, 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('pid reuse: a lock naming a live process with another start time is stale; with its own start time it is held', async () => {
    const pid = await liveChild();
    const startTime = systemProbe.startTime(pid)!;
    expect(startTime).toMatch(/^\d+$/);
    const file = join(tempDir(), 'lock');
    const record = { pid, host: HOST, createdAt: Date.now(), bootId: systemProbe.bootId(), startTime };
    writeFileSync(file, JSON.stringify(record));
    expect(tryLock(file)).toMatchObject({ busy: true, reason: 'held', holder: { pid, startTime } });
    // The same pid, but the process that took the lock started at another time: it died and the pid was reused.
    writeFileSync(file, JSON.stringify({ ...record, startTime: String(BigInt(startTime) - 1n) }));
    const lock = taken(tryLock(file));
    expect(JSON.parse(readFileSync(file, 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('a lock held by a zombie (killed, not yet reaped by its parent) is stale; its start time still matches', async () => {
    // A background child that exits when the test writes a line, then the shell becomes `sleep`, which never reaps it:
    // it stays a zombie. The line is written only once the shell is `sleep`, so the shell cannot reap the child first.
    const parent = spawn('sh', ['-c', 'exec 3<&0; read line <&3 & echo $!; exec sleep 60'], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(parent);
    const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))));
    const comm = (): string => readFileSync(`/proc/${parent.pid}/comm`, 'utf8').trim();
    for (let i = 0; i < 1000 && comm() !== 'sleep'; i++) await new Promise((r) => setTimeout(r, 10));
    expect(comm()).toBe('sleep');
    parent.stdin!.write('\n');
    const stat = (): string => readFileSync(`/proc/${pid}/stat`, 'utf8');
    for (let i = 0; i < 1000 && parseStatState(stat()) !== 'Z'; i++) await new Promise((r) => setTimeout(r, 10));
    expect(parseStatState(stat())).toBe('Z');
    const startTime = systemProbe.startTime(pid);
    expect(startTime).toMatch(/^\d+$/);
    expect(systemProbe.alive(pid)).toBe(false);
    const file = join(tempDir(), 'lock');
    writeFileSync(file, JSON.stringify({ pid, host: HOST, createdAt: Date.now(), bootId: systemProbe.bootId(), startTime }));
    taken(tryLock(file)).release();
  });

  it('a lock of another boot (of this host name, or another machine of that name) is judged by its lease, never by its pid', async () => {
    const pid = await liveChild();
    const file = join(tempDir(), 'lock');
    for (const extra of [{}, { pidNs: systemProbe.pidNamespace!() }]) {
      writeFileSync(file, JSON.stringify({ pid, host: HOST, createdAt: 1, bootId: 'another-boot', startTime: systemProbe.startTime(pid), ...extra }));
      expect(tryLock(file, { leaseMs: 5000 })).toMatchObject({ busy: true, reason: 'held', why: expect.stringMatching(/another boot of host .*lease was refreshed/) });
      age(file, 6000);
      taken(tryLock(file, { leaseMs: 5000 })).release();
    }
  });

  it('a lock of an older version (no start time, no pid namespace) is held while its pid lives and started before the lock was taken, however old', async () => {
    const pid = await liveChild();
    const file = join(tempDir(), 'lock');
    writeFileSync(file, JSON.stringify({ pid, host: HOST, createdAt: Date.now() }));
    age(file, 3_600_000);
    expect(tryLock(file, { leaseMs: 1000 })).toMatchObject({ busy: true, reason: 'held', holder: { pid }, why: expect.stringMatching(/started before the lock was taken/) });
    // The same, judged by its boot id where it recorded one (the host name changed since).
    writeFileSync(file, JSON.stringify({ pid, host: 'old-name', createdAt: Date.now(), bootId: systemProbe.bootId() }));
    age(file, 3_600_000);
    expect(tryLock(file, { leaseMs: 1000 })).toMatchObject({ busy: true, reason: 'held', holder: { pid } });
  });

  it('a lock of an older version whose pid was reused (its process started after the lock was taken) is stale', async () => {
    const file = join(tempDir(), 'lock');
    // Taken a minute ago by a process that died; the pid now names a process that started since.
    const createdAt = Date.now() - 60_000;
    const pid = await liveChild();
    writeFileSync(file, JSON.stringify({ pid, host: HOST, createdAt }));
    const judged = inspectLock(file);
    expect(judged).toMatchObject({ state: 'stale', why: expect.stringMatching(/started at .* after the lock was taken .*pid was reused/) });
    taken(tryLock(file)).release();
    writeFileSync(file, JSON.stringify({ pid, host: 'renamed', createdAt, bootId: systemProbe.bootId() }));
    taken(tryLock(file)).release();
  });

  it('a lock from another host is judged by its lease: held while it is refreshed, stale once it is not for the lease', () => {
    const file = join(tempDir(), 'lock');
    writeFileSync(file, JSON.stringify({ pid: DEAD_PID, host: 'elsewhere', createdAt: 1 }));
    expect(tryLock(file)).toMatchObject({ busy: true, reason: 'held', holder: { host: 'elsewhere' }, why: expect.stringMatching(/^host elsewhere, not checkable by pid here: its lease was refreshed .* ago \(stale after 30 s without one\)$/) });
    age(file, 29_000);
    expect(lockHeld(file)).toBe(true);
    age(file, 31_000);
    expect(inspectLock(file)).toMatchObject({ state: 'stale', why: expect.stringMatching(/last refreshed 31 s ago/) });
    taken(tryLock(file)).release();
    // A lease time far in the future (no refresh sets one) does not block for as long.
    writeFileSync(file, JSON.stringify({ pid: DEAD_PID, host: 'elsewhere', createdAt: 1 }));
    age(file, -3_600_000);
    expect(inspectLock(file)).toMatchObject({ state: 'stale', why: expect.stringMatching(/in the future/) });
  });

  it('a holder in another pid namespace (same host, same boot) is judged by its lease, never by its pid here', async () => {
    const file = join(tempDir(), 'lock');
    const live = await liveChild();
    const base = { host: HOST, createdAt: Date.now(), bootId: systemProbe.bootId(), pidNs: 'pid:[1]' };
    // Its pid is dead here, or names a live process of this namespace: neither says anything about the holder.
    for (const record of [{ ...base, pid: DEAD_PID }, { ...base, pid: live, startTime: systemProbe.startTime(live) }, { ...base, pid: live, startTime: '1' }]) {
      writeFileSync(file, JSON.stringify(record));
      expect(tryLock(file)).toMatchObject({ busy: true, reason: 'held', why: expect.stringMatching(/pid namespace pid:\[1\] \(another container than this process's\), not checkable by pid here: its lease was refreshed/) });
      age(file, 31_000);
      taken(tryLock(file)).release();
    }
  });

  it('a dead holder of this boot and pid namespace is stale whatever host name it recorded (the host was renamed)', () => {
    const file = join(tempDir(), 'lock');
    writeFileSync(file, JSON.stringify({ pid: DEAD_PID, host: 'old-name', createdAt: Date.now(), bootId: systemProbe.bootId(), pidNs: systemProbe.pidNamespace!(), startTime: '5' }));
    expect(inspectLock(file)).toMatchObject({ state: 'stale', why: `pid ${DEAD_PID} is not running` });
    taken(tryLock(file)).release();
  });

  it('every holder refreshes its lease while it holds the lock, and only while its own record is the file', async () => {
    const file = join(tempDir(), 'lock');
    const lock = taken(tryLock(file, { leaseMs: 300 }));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pidNs: systemProbe.pidNamespace!(), startTime: systemProbe.startTime(process.pid) });
    age(file, 10_000);
    await new Promise((r) => setTimeout(r, 250));
    expect(Date.now() - statSync(file).mtimeMs).toBeLessThan(300);
    // Another record in its place (the file was taken over): left as it is.
    writeFileSync(file, JSON.stringify({ pid: DEAD_PID, host: 'elsewhere', createdAt: 1 }));
    age(file, 10_000);
    await new Promise((r) => setTimeout(r, 250));
    expect(Date.now() - statSync(file).mtimeMs).toBeGreaterThan(9000);
    lock.release();
    expect(existsSync(file)).toBe(true);
  });

  it('without /proc: a holder refreshes its lease, and a live pid whose lease ran out is stale', async () => {
    const noProc: ProcessProbe = { bootId: () => undefined, startTime: () => undefined, alive: systemProbe.alive };
    const file = join(tempDir(), 'lock');
    const lock = taken(tryLock(file, { probe: noProc, leaseMs: 900 }));
    expect(JSON.parse(readFileSync(file, 'utf8'))).not.toHaveProperty('startTime');
    const old = new Date(Date.now() - 10_000);
    utimesSync(file, old, old);
    // Refreshed by the holder (every 300 ms): held again once it has refreshed, which it does within 450 ms.
    const aged = Date.now();
    while (Date.now() - statSync(file).mtimeMs >= 900 && Date.now() - aged < 450) await new Promise((r) => setTimeout(r, 10));
    expect(Date.now() - statSync(file).mtimeMs).toBeLessThan(900);
    expect(tryLock(file, { probe: noProc, leaseMs: 900 })).toMatchObject({ busy: true, reason: 'held' });
    lock.release();

    const pid = await liveChild();
    writeFileSync(file, JSON.stringify({ pid, host: HOST, createdAt: 1 }));
    expect(tryLock(file, { probe: noProc, leaseMs: 5000 })).toMatchObject({ busy: true, reason: 'held', holder: { pid } });
    utimesSync(file, old, old);
    taken(tryLock(file, { probe: noProc, leaseMs: 5000 })).release();
  });

  it('processes racing to recover a stale lock take it one at a time', async () => {
    const dir = tempDir();
    const file = join(dir, 'lock');
    const log = join(dir, 'log');
    writeFileSync(file, JSON.stringify({ pid: DEAD_PID, host: HOST, createdAt: 1 }));
    writeFileSync(log, '');
    const fixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'take-lock.ts'));
    const codes = await Promise.all(
      Array.from({ length: 6 }, () => new Promise<number>((resolve) => {
        execFile(process.execPath, [fixture, file, log], (error) => resolve(error === null ? 0 : 1));
      })),
    );
    expect(codes).toEqual([0, 0, 0, 0, 0, 0]);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(12);
    // Mutual exclusion: every enter is followed by the same process's exit before anyone else enters.
    for (let i = 0; i < lines.length; i += 2) {
      expect(lines[i]).toMatch(/^enter \d+$/);
      expect(lines[i + 1]).toBe(lines[i]!.replace('enter', 'exit'));
    }
    expect(existsSync(file)).toBe(false);
    expect(existsSync(`${file}.recover`)).toBe(false);
  }, 30_000);
});

describe('parseStatState', () => {
  it('reads field 3 after the last parenthesis of the command name', () => {
    expect(parseStatState('42 (a) b (c) Z 1 2')).toBe('Z');
    expect(parseStatState('42 (sleep) S 1')).toBe('S');
    expect(parseStatState('garbage')).toBeUndefined();
  });
});

describe('parseStatStartTime', () => {
  it('reads field 22 even when the command name holds spaces and parentheses', () => {
    const rest = Array.from({ length: 20 }, (_, i) => String(i + 3));
    expect(parseStatStartTime(`42 (a) b (c) ${rest.join(' ')}`)).toBe('22');
    expect(parseStatStartTime('42 (x) S 1')).toBeUndefined();
    expect(parseStatStartTime('garbage')).toBeUndefined();
  });
});

describe('a lock path that is not a regular file', () => {
  it('is refused as unreadable, without reading through a link or blocking on a FIFO', async () => {
    const fixture = await bundledScript(join(import.meta.dirname, 'fixtures', 'try-lock-once.ts'));
    const dir = tempDir();
    // A record of a live process (this one), outside the lock's folder: followed, it would read as a held lock.
    const outside = join(dir, 'outside.json');
    writeFileSync(outside, JSON.stringify({ pid: process.pid, host: HOST, createdAt: Date.now() }));
    const cases: Record<string, (path: string) => void> = {
      'a symlink to a lock record': (path) => symlinkSync(outside, path),
      'a dangling symlink': (path) => symlinkSync(join(dir, 'nowhere'), path),
      'a FIFO': (path) => execFileSync('mkfifo', [path]),
      'a directory': (path) => mkdirSync(path),
    };
    for (const [kind, make] of Object.entries(cases)) {
      const path = join(dir, `${kind.replace(/\W+/g, '-')}.lock`);
      make(path);
      const child = spawnSync(process.execPath, [fixture, path], { encoding: 'utf8', timeout: 10_000 });
      expect(child.signal, `${kind}: the child hung`).toBeNull();
      expect(child.stdout.trim(), `${kind}: ${child.stderr}`).toBe('busy unreadable');
      expect(readFileSync(outside, 'utf8')).toContain(`"pid":${process.pid}`);
    }
  });
});

describe('FileLock.confirm: whether a lock is still its holder\'s before a write', () => {
  it('is true while held, false once another record replaced it after the lease ran out, and false after release', () => {
    const dir = tempDir();
    const path = join(dir, 'x.lock');
    const lock = tryLock(path, { leaseMs: 1_000 });
    if ('busy' in lock) throw new Error('not taken');
    expect(lock.confirm()).toBe(true);
    writeFileSync(path, JSON.stringify({ pid: 1, host: 'elsewhere', createdAt: Date.now(), token: 'feedfeedfeedfeed' }));
    const real = Date.now.bind(Date);
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => real() + 2_000);
    try {
      expect(lock.confirm()).toBe(false);
    } finally {
      clock.mockRestore();
    }
    // Lost for good, and its release leaves the other holder's file alone.
    expect(lock.confirm()).toBe(false);
    lock.release();
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ host: 'elsewhere' });
  });

  it('refreshes a lease that ran out when the file is still its own, and is false once released', () => {
    const dir = tempDir();
    const path = join(dir, 'x.lock');
    const lock = tryLock(path, { leaseMs: 1_000 });
    if ('busy' in lock) throw new Error('not taken');
    const before = statSync(path).mtimeMs;
    const real = Date.now.bind(Date);
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => real() + 5_000);
    try {
      expect(lock.confirm()).toBe(true);
    } finally {
      clock.mockRestore();
    }
    expect(statSync(path).mtimeMs).toBeGreaterThan(before + 4_000);
    lock.release();
    expect(lock.confirm()).toBe(false);
  });
});
