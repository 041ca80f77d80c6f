import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { forkRun, runFlow } from '../../src/index.js';
import { EventStore, InvalidIdError, LockError, RunExistsError } from '../../src/store/index.js';
import { buildJournalFlow } from './fixtures/journal-flow.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bpf-run-ids-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

const eventsFile = (runId: string) => join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl');
const runStarts = async (runId: string) => (await new EventStore({ dataDir, sessionKey: 'default', runId }).readAll()).filter((e) => e.type === 'run.started').length;

describe('run ids', () => {
  it('runFlow with the id of a recorded run is a RunExistsError that leaves the run untouched', async () => {
    await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'taken' });
    const before = readFileSync(eventsFile('taken'));
    const error = await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'taken' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunExistsError);
    expect((error as Error).message).toMatch(/run default\/taken already exists \(.*events\.jsonl\); resume it to continue it/);
    expect(readFileSync(eventsFile('taken'))).toEqual(before);
  });

  it('forkRun into the id of a recorded run is a RunExistsError that leaves both runs untouched', async () => {
    await runFlow(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'source' });
    await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'target' });
    const source = readFileSync(eventsFile('source'));
    const target = readFileSync(eventsFile('target'));
    await expect(forkRun(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'source', atStep: 1, newRunId: 'target' })).rejects.toBeInstanceOf(RunExistsError);
    expect(readFileSync(eventsFile('source'))).toEqual(source);
    expect(readFileSync(eventsFile('target'))).toEqual(target);
  });

  it('two starts of one id at once: one run is recorded, the other start fails', async () => {
    const results = await Promise.allSettled([
      runFlow(buildJournalFlow({ rounds: 3, delayMs: 20 }), { dataDir, runId: 'race' }),
      runFlow(buildJournalFlow({ rounds: 3, delayMs: 20 }), { dataDir, runId: 'race' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const failure = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(failure.reason instanceof LockError || failure.reason instanceof RunExistsError, String(failure.reason)).toBe(true);
    expect(await runStarts('race')).toBe(1);
  });

  it("refuses run ids starting with '-' (they would read as command-line options)", async () => {
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, runId: '-rf' })).rejects.toThrow(InvalidIdError);
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, runId: '-rf' })).rejects.toThrow(/invalid runId "-rf": starts with '-'/);
    await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'ok' });
    await expect(forkRun(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'ok', atStep: 1, newRunId: '--help' })).rejects.toThrow(InvalidIdError);
  });
});
