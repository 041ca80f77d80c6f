import { mkdirSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventStore, InvalidIdError, listRunIds, listSessions } from '../../src/store/index.js';
import { makeEvent, tempDir } from './helpers.js';

describe('listSessions / listRunIds', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => tmp.cleanup());

  it('lists nothing in an empty or missing data directory', async () => {
    expect(await listSessions(`${tmp.dir}/missing`)).toEqual([]);
    expect(await listRunIds(tmp.dir)).toEqual([]);
    expect(await listRunIds(tmp.dir, 'none')).toEqual([]);
  });

  it('lists sessions and runs in order, ignoring files and unsafe names', async () => {
    for (const [sessionKey, runId] of [['s2', 'r1'], ['s1', 'r2'], ['s1', 'r1']] as const) {
      const store = new EventStore({ dataDir: tmp.dir, sessionKey, runId, durability: 'never' });
      await store.append(makeEvent(runId, 0));
      await store.close();
    }
    writeFileSync(`${tmp.dir}/sessions/s1/runs/notes.txt`, 'x');
    mkdirSync(`${tmp.dir}/sessions/s1/runs/bad name`);
    expect(await listSessions(tmp.dir)).toEqual(['s1', 's2']);
    expect(await listRunIds(tmp.dir, 's1')).toEqual([
      { sessionKey: 's1', runId: 'r1' },
      { sessionKey: 's1', runId: 'r2' },
    ]);
    expect((await listRunIds(tmp.dir)).map((r) => `${r.sessionKey}/${r.runId}`)).toEqual(['s1/r1', 's1/r2', 's2/r1']);
    await expect(listRunIds(tmp.dir, '../x')).rejects.toThrow(InvalidIdError);
  });
});
