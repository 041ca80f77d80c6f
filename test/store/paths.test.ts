import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CheckpointStore,
  EventStore,
  InvalidIdError,
  MemoryStore,
  ProjectionStore,
  assertValidId,
  isValidId,
  runPaths,
} from '../../src/store/index.js';
import { generateId, newRunId } from '../../src/events/index.js';
import { tempDir } from './helpers.js';

const bad: Array<[string, RegExp]> = [
  ['a/b', /path separator/],
  ['a\\b', /path separator/],
  ['..', /'\.\.'/],
  ['x..y', /'\.\.'/],
  ['a\0b', /NUL/],
  ['x'.repeat(129), /129 characters long, the limit is 128/],
  ['', /empty/],
  ['.', /is '\.'/],
  ['a b', /contains " "/],
];

describe('id validation (D15)', () => {
  let tmp: ReturnType<typeof tempDir>;
  afterEach(() => tmp?.cleanup());

  it.each(bad)('rejects %j with a reason', (id, reason) => {
    expect(isValidId(id)).toBe(false);
    expect(() => assertValidId(id, 'runId')).toThrow(InvalidIdError);
    expect(() => assertValidId(id, 'runId')).toThrow(reason);
  });

  it('accepts letters, digits, _, - and single dots up to 128 characters', () => {
    for (const id of ['run_1', 'a-b.c', 'x'.repeat(128), 'v1.2.3']) expect(isValidId(id)).toBe(true);
  });

  it('names the kind of id in the error', () => {
    expect(() => runPaths('/data', 'ok', '../escape')).toThrow(/invalid runId "\.\.\/escape"/);
    expect(() => runPaths('/data', 'a/b', 'ok')).toThrow(/invalid sessionKey/);
  });

  it('rejects bad ids in every store before any file is touched', async () => {
    tmp = tempDir();
    const dataDir = join(tmp.dir, 'data');
    for (const id of bad.map(([id]) => id)) {
      expect(() => new EventStore({ dataDir, sessionKey: 's', runId: id })).toThrow(InvalidIdError);
      expect(() => new EventStore({ dataDir, sessionKey: id, runId: 'r' })).toThrow(InvalidIdError);
      expect(() => new CheckpointStore({ dataDir, sessionKey: 's', runId: id })).toThrow(InvalidIdError);
      expect(() => new ProjectionStore({ dataDir, sessionKey: id })).toThrow(InvalidIdError);
      const checkpoints = new CheckpointStore({ dataDir, sessionKey: 's', runId: 'r' });
      await expect(checkpoints.loadHistorical(id)).rejects.toThrow(InvalidIdError);
      const memory = new MemoryStore({ dataDir });
      await expect(memory.get(id)).rejects.toThrow(InvalidIdError);
      await expect(memory.write({ id, content: 'x', createdAt: 1 })).rejects.toThrow(/invalid memory/);
      await expect(memory.delete(id)).rejects.toThrow(InvalidIdError);
    }
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('id generation', () => {
  it('generates valid, unique ids that sort by creation time', async () => {
    const first = Array.from({ length: 500 }, () => newRunId());
    await new Promise((r) => setTimeout(r, 5));
    const later = newRunId();
    expect(new Set(first).size).toBe(first.length);
    for (const id of [...first, later]) expect(isValidId(id)).toBe(true);
    expect([...first].sort()).toEqual(first);
    expect(first.every((id) => id < later)).toBe(true);
    expect(first[0]).toMatch(/^run_[0-9a-z]{11}_[0-9a-z]{10}$/);
  });

  it('rejects a prefix that would make an unsafe id', () => {
    expect(() => generateId('a/b')).toThrow(/id prefix/);
  });
});

describe('durability option', () => {
  it('is rejected by every store when it is not always, batch or never', () => {
    const durability = 'sometimes' as unknown as 'never';
    expect(() => new EventStore({ dataDir: '/x', sessionKey: 's', runId: 'r', durability })).toThrow(/EventStore: durability must be/);
    expect(() => new CheckpointStore({ dataDir: '/x', sessionKey: 's', runId: 'r', durability })).toThrow(/CheckpointStore: durability/);
    expect(() => new MemoryStore({ dataDir: '/x', durability })).toThrow(/MemoryStore: durability/);
    expect(() => new ProjectionStore({ dataDir: '/x', sessionKey: 's', durability })).toThrow(/ProjectionStore: durability/);
  });
});
