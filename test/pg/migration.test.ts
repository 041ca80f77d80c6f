/**
 * A database of schema version 4 (one row per log line) migrates to version 5 (one row per step) with its runs intact:
 * the same lines and chain, keyframes, projections; a run stopped midway resumes; damage is still reported.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRunPoint, resumeRun, runFlow } from '../../src/index.js';
import type { StreamEvent } from '../../src/events/types.js';
import { chainOf } from '../../src/store/chain.js';
import { FileRunStore, PostgresRunStore, type RunStore } from '../../src/store/index.js';
import { runPaths } from '../../src/store/paths.js';
import { MIGRATIONS, migrate } from '../../src/store/postgres/migrations.js';
import { buildJournalFlow } from '../runtime/fixtures/journal-flow.js';
import { freshDatabase } from '../support/pg.js';

/** An event without what differs between two runs of the same flow (ids, times, spans). */
function shape(event: StreamEvent): unknown {
  const { id: _id, timestamp: _t, spanId: _s, parentSpanId: _p, ...rest } = event;
  return JSON.parse(JSON.stringify(rest, (key, value: unknown) => (['durationMs', 'startedAt', 'endedAt', 'at', 'ts', 'createdAt', 'updatedAt', 'timestamp'].includes(key) ? 0 : value)));
}

async function events(store: RunStore, runId: string): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const { event } of store.readVerified({ sessionKey: 'default', runId })) out.push(event);
  return out;
}

describe('migration 5 of a version-4 database', () => {
  let url: string;
  let drop: () => Promise<void>;
  let dataDir: string;
  let files: FileRunStore;
  let admin: postgres.Sql;

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    admin = postgres(url, { max: 1, onnotice: () => undefined });
    dataDir = mkdtempSync(join(tmpdir(), 'bpf-pg-migration-'));
    files = new FileRunStore(dataDir);
  });
  afterAll(async () => {
    await admin.end();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps every run: its lines, chain, keyframes and projection; a run stopped midway resumes; a missing line is still reported', async () => {
    // Runs recorded in files; version 4 stored a run's lines exactly as the file store writes them, one row each.
    await runFlow(buildJournalFlow({ rounds: 5 }), { store: files, runId: 'done', keyframeInterval: 2, input: { topic: 'tides' } });
    await runFlow(buildJournalFlow({ rounds: 3 }), { store: files, runId: 'damaged' });
    const controller = new AbortController();
    const stopping = buildJournalFlow({ rounds: 6, delayMs: 10 });
    let steps = 0;
    stopping.eventStreamer.on('checkpoint.saved', () => {
      if (++steps === 3) controller.abort();
    });
    await expect(runFlow(stopping, { store: files, runId: 'stopped', signal: controller.signal })).rejects.toThrow();

    expect(await migrate(admin, MIGRATIONS.filter((m) => m.version <= 4))).toEqual([1, 2, 3, 4]);
    for (const runId of ['done', 'damaged', 'stopped']) {
      const paths = runPaths(dataDir, 'default', runId);
      await admin`insert into backpackflow.runs (session_key, run_id, meta) values ('default', ${runId}, ${JSON.stringify(await files.loadRunMeta({ sessionKey: 'default', runId }))})`;
      const lines = readFileSync(paths.events, 'utf8').split('\n').slice(0, -1);
      for (const [line, body] of lines.entries()) {
        const seq = (JSON.parse(body) as { seq: number }).seq;
        await admin`insert into backpackflow.events (session_key, run_id, seq, line, sealed, body)
          values ('default', ${runId}, ${seq}, ${line}, ${chainOf(Buffer.from(body)) !== undefined}, ${body})`;
      }
      const keyframes = existsSync(paths.checkpointDir) ? readdirSync(paths.checkpointDir).filter((n) => /^\d+\.json$/.test(n)) : [];
      for (const name of keyframes) {
        await admin`insert into backpackflow.keyframes (session_key, run_id, step, body)
          values ('default', ${runId}, ${Number(name.slice(0, -5))}, ${readFileSync(join(paths.checkpointDir, name), 'utf8')})`;
      }
    }
    await admin`delete from backpackflow.events where run_id = 'damaged' and line = 4`;

    const pg = new PostgresRunStore({ url });
    try {
      // First use migrates.
      expect((await pg.listRuns()).map((r) => r.runId)).toEqual(['damaged', 'done', 'stopped']);
      const versions = await admin<{ version: number }[]>`select version from backpackflow.migrations order by version`;
      expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((m) => m.version));
      expect((await admin`select to_regclass('backpackflow.events') as t`)[0]!['t']).toBeNull();

      // The completed run: the same lines, in rows that each end with a sealed line, the same chain head, the same
      // keyframes and states.
      const done = { sessionKey: 'default', runId: 'done' };
      expect(await events(pg, 'done')).toEqual(await events(files, 'done'));
      const rows = await admin<{ body: string; first_line: number; last_line: number }[]>`
        select body, first_line, last_line from backpackflow.event_batches where run_id = 'done' order by first_line`;
      expect(rows.map((r) => r.body).join('\n') + '\n').toBe(readFileSync(runPaths(dataDir, 'default', 'done').events, 'utf8'));
      for (const row of rows) {
        expect(chainOf(Buffer.from(row.body.slice(row.body.lastIndexOf('\n') + 1)))).toBeDefined();
        expect(row.body.split('\n').length).toBe(row.last_line - row.first_line + 1);
      }
      const [verifiedPg, verifiedFiles] = [await pg.verifyLog(done), await files.verifyLog(done)];
      expect(verifiedPg).toMatchObject({ ok: true, chain: 'verified', lines: verifiedFiles.lines, chainHead: verifiedFiles.chainHead });
      expect(await pg.keyframeSteps(done)).toEqual(await files.keyframeSteps(done));
      expect(await pg.loadRunMeta(done)).toEqual(await files.loadRunMeta(done));
      for (let step = 0; step <= 5; step++) {
        const [a, b] = await Promise.all([loadRunPoint({ store: pg, runId: 'done', step }), loadRunPoint({ store: files, runId: 'done', step })]);
        expect(a.state).toEqual(b.state);
      }

      // The stopped run resumes on the migrated database as it does in files.
      const [onPg, inFiles] = [await resumeRun(buildJournalFlow({ rounds: 6 }), { store: pg, runId: 'stopped' }), await resumeRun(buildJournalFlow({ rounds: 6 }), { store: files, runId: 'stopped' })];
      expect(onPg.status).toBe('completed');
      expect(onPg.steps).toBe(inFiles.steps);
      expect((await events(pg, 'stopped')).map(shape)).toEqual((await events(files, 'stopped')).map(shape));
      expect((await pg.verifyLog({ sessionKey: 'default', runId: 'stopped' })).ok).toBe(true);

      // The row deleted under version 4 is still missing, and said so.
      const damaged = await pg.verifyLog({ sessionKey: 'default', runId: 'damaged' });
      expect(damaged.ok).toBe(false);
      expect(damaged.problem).toMatch(/run default\/damaged.*line 5 is missing/);
    } finally {
      await pg.close();
    }
  });
});
