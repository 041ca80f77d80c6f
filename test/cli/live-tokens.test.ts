/** The CLI's live trace shows streamed tokens; the stored log folds them unless --keep-model-deltas. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, cli, cliJson, tempDir } from './helpers.js';

const MODULE = `${join(FIXTURES, 'streaming.mjs')}#buildStreamingFlow`;

describe('backpackflow run with a streaming model', () => {
  it('prints the tokens in the live trace, stores one folded model.delta, and every delta with --keep-model-deltas', async () => {
    const dataDir = tempDir();
    const d = ['--data-dir', dataDir];
    const run = await cli(['run', '--flow-module', MODULE, '--input', '{"question":"tides?"}', '--run-id', 'folded', ...d]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('✎ injected:model (chat): Tides rise twice\n');
    const folded = await cliJson<{ events: Array<{ payload: { delta: string; count?: number } }> }>(['runs', 'events', 'folded', '--type', 'model.delta', ...d]);
    expect(folded.events.map((e) => [e.payload.delta, e.payload.count])).toEqual([['Tides rise twice', 3]]);
    const show = await cli(['runs', 'show', 'folded', ...d]);
    expect(show.stdout).toContain('✎ injected:model (chat) 9→3 tokens: "Tides rise twice"');

    const keep = await cli(['run', '--flow-module', MODULE, '--input', '{"question":"tides?"}', '--run-id', 'kept', '--keep-model-deltas', ...d]);
    expect(keep.code).toBe(0);
    const kept = await cliJson<{ events: Array<{ payload: { delta: string } }> }>(['runs', 'events', 'kept', '--type', 'model.delta', ...d]);
    expect(kept.events.map((e) => e.payload.delta)).toEqual(['Tides', ' rise', ' twice']);
  });
});
