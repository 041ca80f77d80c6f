/**
 * A new run's writer makes the run's folder, then takes its lock in it. A delete of the same id in another process
 * (`runs delete`, a prune) can remove that folder in between: it holds no run yet, so the delete is right to. The
 * writer then made its lock's temp file in a folder that was gone and failed with a raw ENOENT (audit-crash F3a); it
 * makes the folder again, once. The delete's removal is simulated here, deterministically, right after the mkdir:
 * `fs.mkdirSync` is wrapped for the test and the ES module bindings of `node:fs` synced to it (no module mocks: test
 * files share a worker's module cache, see vitest.config.ts).
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventStore } from '../../src/store/index.js';
import { makeEvent, tempDir } from './helpers.js';

const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');

/** Runs `body` with the folder `path` removed right after the first mkdirSync that makes it; how often that happened. */
async function removedAfterMkdir(path: string, body: () => Promise<void>): Promise<number> {
  const real = fs.mkdirSync;
  let removed = 0;
  fs.mkdirSync = ((target: import('node:fs').PathLike, options?: import('node:fs').MakeDirectoryOptions) => {
    const made = real(target, options);
    if (String(target) === path && removed === 0) {
      removed++;
      fs.rmSync(path, { recursive: true });
    }
    return made;
  }) as typeof fs.mkdirSync;
  syncBuiltinESMExports();
  try {
    await body();
  } finally {
    fs.mkdirSync = real;
    syncBuiltinESMExports();
  }
  return removed;
}

describe("a new run's writer whose folder a delete removes before it takes the lock", () => {
  it('makes the folder again and writes the run', async () => {
    const tmp = tempDir();
    try {
      const store = new EventStore({ dataDir: tmp.dir, sessionKey: 's', runId: 'raced', durability: 'never' });
      const folder = join(tmp.dir, 'sessions', 's', 'runs', 'raced');
      const removed = await removedAfterMkdir(folder, async () => {
        await store.appendBatch([makeEvent('raced', 1)]);
        await store.close();
      });
      expect(removed).toBe(1);
      expect(readFileSync(join(folder, 'events.jsonl'), 'utf8')).toContain('"seq":1');
    } finally {
      tmp.cleanup();
    }
  });
});
