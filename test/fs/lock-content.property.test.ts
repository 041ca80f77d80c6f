/**
 * Whatever a lock file holds (damage, a planted file, a record of an older or a future format), it never blocks
 * writers silently: a file that is not a live holder's lock is judged stale once its lease has run out and taken
 * over, or reported as not a lock record (a LockBusy `unreadable` saying so, which the stores turn into an error
 * naming the file). A `held` answer always says why. No process named in these files is alive.
 */
import { writeFileSync, utimesSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inspectLock, lockHeld, systemProbe, tryLock } from '../../src/fs/index.js';
import { trials } from '../support/soak.js';
import { tempDir } from './helpers.js';

const LEASE_MS = 1000;
const DEAD_PID = 2 ** 22 + 12345;
const now = Date.now();

/** Values a lock record's fields may take: ours, others', wrong types, edge numbers. */
const field = {
  pid: fc.constantFrom<unknown>(DEAD_PID, DEAD_PID + 7, 0, -1, 1.5, '12', 2 ** 53, null),
  host: fc.constantFrom<unknown>(hostname(), 'elsewhere', '', 42),
  createdAt: fc.constantFrom<unknown>(0, 1, now, now + 3_600_000, -5, 'yesterday'),
  bootId: fc.constantFrom<unknown>(systemProbe.bootId(), 'another-boot', 7),
  startTime: fc.constantFrom<unknown>('1', '99999999999', 'x', 3),
  pidNs: fc.constantFrom<unknown>(systemProbe.pidNamespace?.(), 'pid:[1]', '', {}),
  token: fc.string(),
};
const record = fc.record(field, { requiredKeys: [] });
const content = fc.oneof(
  record.map((r) => JSON.stringify(r)),
  record.map((r) => JSON.stringify(r).slice(0, -3)), // torn
  fc.json(),
  fc.string({ unit: 'binary' }),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
);

function judge(file: string): 'taken' | 'held' | 'unreadable' | 'contended' {
  const result = tryLock(file, { leaseMs: LEASE_MS });
  if (!('busy' in result)) {
    result.release();
    return 'taken';
  }
  if (result.reason !== 'contended') expect(result.why, `a busy lock says why (${result.reason})`).toBeTruthy();
  return result.reason;
}

describe('any lock file content', () => {
  it('once its lease has run out: taken over, or reported as not a lock record; never held by nobody', () => {
    const dir = tempDir();
    let n = 0;
    fc.assert(
      fc.property(content, fc.integer({ min: LEASE_MS + 100, max: 400 * 86_400_000 }), fc.boolean(), (text, ageMs, future) => {
        const file = join(dir, `lock-${n++}`);
        writeFileSync(file, text);
        const then = new Date(Date.now() + (future ? ageMs : -ageMs));
        utimesSync(file, then, then);
        const seen = inspectLock(file, { leaseMs: LEASE_MS });
        expect(seen.state === 'stale' || seen.state === 'unreadable', `${text}: ${JSON.stringify(seen)}`).toBe(true);
        expect(lockHeld(file, { leaseMs: LEASE_MS })).toBe(seen.state === 'unreadable');
        expect(judge(file)).toBe(seen.state === 'stale' ? 'taken' : 'unreadable');
      }),
      { numRuns: trials(300, 3000) },
    );
  });

  it('with a fresh lease: held (saying why) only while the lease is fresh, and taken over once it has run out', () => {
    const dir = tempDir();
    let n = 0;
    fc.assert(
      fc.property(content, (text) => {
        const file = join(dir, `lock-${n++}`);
        writeFileSync(file, text);
        const fresh = judge(file);
        expect(['taken', 'held', 'unreadable']).toContain(fresh);
        if (fresh !== 'held') return;
        expect(inspectLock(file, { leaseMs: LEASE_MS })).toMatchObject({ state: 'held', why: expect.stringMatching(/lease was refreshed/) });
        const old = new Date(Date.now() - LEASE_MS - 100);
        utimesSync(file, old, old);
        expect(judge(file)).toBe('taken');
      }),
      { numRuns: trials(300, 3000) },
    );
  });
});
