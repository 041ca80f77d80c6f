/**
 * A new run's writer makes the run's folder, then takes its lock in it. A delete of the same id in another process
 * (`runs delete`, a prune) can remove that folder in between: it holds no run yet, so the delete is right to. The
 * writer then made its lock's temp file in a folder that was gone and failed with a raw ENOENT (audit-crash F3a); it
 * makes the folder again, once. The delete's removal is simulated here, deterministically, right after the mkdir.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { EventStore } from '../../src/store/index.js';
import { makeEvent, tempDir } from './helpers.js';

const raced = { path: '', removed: 0 };

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  return {
    ...real,
    mkdirSync: (path: fs.PathLike, options?: fs.MakeDirectoryOptions) => {
      const made = real.mkdirSync(path, options);
      if (String(path) === raced.path && raced.removed === 0) {
        raced.removed++;
        real.rmSync(String(path), { recursive: true });
      }
      return made;
    },
  };
});

describe("a new run's writer whose folder a delete removes before it takes the lock", () => {
  it('makes the folder again and writes the run', async () => {
    const tmp = tempDir();
    try {
      const store = new EventStore({ dataDir: tmp.dir, sessionKey: 's', runId: 'raced', durability: 'never' });
      raced.path = join(tmp.dir, 'sessions', 's', 'runs', 'raced');
      await store.appendBatch([makeEvent('raced', 1)]);
      await store.close();
      expect(raced.removed).toBe(1);
      expect(fs.readFileSync(join(raced.path, 'events.jsonl'), 'utf8')).toContain('"seq":1');
    } finally {
      tmp.cleanup();
    }
  });
});
