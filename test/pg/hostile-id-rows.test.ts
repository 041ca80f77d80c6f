/**
 * Ids read back from PostgreSQL rows are checked as the file store checks folder names (review s32, finding 4): a row
 * of backpackflow.runs whose run id is not a valid store id (written by another tool, a manual fix, a restore) is
 * left out of the listing with a warning, and the other runs are listed; before, listRuns (so `runs list` and the
 * Studio's list) failed for the whole database with an InvalidIdError.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { listRuns, runFlow } from '../../src/runtime/index.js';
import { databaseForFile } from '../support/pg.js';
import { makeTempDir } from '../support/temp.js';

class Noop extends BackpackNode {
  override post(): string {
    return 'default';
  }
}
function flow(): Flow {
  const f = new Flow({ namespace: 'x' });
  f.addNode(Noop, { id: 'n' });
  return f;
}

const db = databaseForFile();

describe('a run row whose id is not a valid db.store id', () => {
  it('files: a folder named so is skipped, the other runs are listed', async () => {
    const dataDir = makeTempDir('bf-pg-ids-', 'test');
    await runFlow(flow(), { dataDir, runId: 'good' });
    const runs = join(dataDir, 'sessions', 'default', 'runs');
    cpSync(join(runs, 'good'), join(runs, 'x y'), { recursive: true });
    expect((await listRuns({ dataDir })).map((m) => m.runId)).toEqual(['good']);
  });

  it('postgres: the other runs are still listed', async () => {
    await runFlow(flow(), { store: db.store, runId: 'good' });
    await db.sql`insert into backpackflow.runs (session_key, run_id, meta) select session_key, 'x y', meta from backpackflow.runs where run_id = 'good'`;
    await db.sql`insert into backpackflow.event_batches select session_key, 'x y', first_line, last_line, last_seq, body from backpackflow.event_batches where run_id = 'good'`;
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.message);
    process.on('warning', onWarning);
    try {
      const listed = await listRuns({ store: db.store }).then((metas) => metas.map((m) => m.runId), (error: Error) => error.message);
      expect(listed).toEqual(['good']);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.join('\n')).toMatch(/left out 1 row\(s\) of backpackflow.runs whose session key or run id is not a valid id/);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
