/**
 * A secret given as it is in a flow file is masked in the flow recorded with the run (flow.json), so a resume or fork
 * that built the flow from that record would hand the node the mask instead of the secret. `run` says so when it
 * records such a flow; resume and fork refuse to build from it (naming where) until the flow is given again with
 * --flow; secrets written as ${ENV_NAME} references are recorded as written and resolved again (README audit M2).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, cliJson, tempDir } from './helpers.js';

const MODULES = join(import.meta.dirname, 'fixtures', 'nodes.mjs');
const KEY = 'sk-live-literalsecret0123456789abcdef';

function flowFile(dir: string, apiKey: string): string {
  const path = join(dir, 'flow.json');
  writeFileSync(path, JSON.stringify({ version: '2.0.0', namespace: 'k', nodes: [{ type: 'UsesKey', id: 'uses', params: { apiKey } }], edges: [] }));
  return path;
}

/** What the node packed: whether the apiKey it was given is the test's key. */
async function keyWasReal(dataDir: string, runId: string): Promise<unknown> {
  const state = await cliJson<{ items: { key: string; value: unknown }[] }>(['runs', 'state', runId, '--data-dir', dataDir]);
  return state.items.find((item) => item.key === 'keyWasReal')?.value;
}

describe('a flow whose secrets are given as they are', () => {
  it('is recorded masked with a warning naming where; resume and fork refuse to build from the record, --flow runs it with the secret', async () => {
    const dataDir = tempDir();
    const flow = flowFile(tempDir(), KEY);
    const d = ['--modules', MODULES, '--data-dir', dataDir];
    const env = { env: { BPF_TEST_KEY: KEY } };
    const failed = await cli(['run', flow, '--run-id', 'lit', ...d], env);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/the flow recorded with run lit masks secrets given as they are \(\/nodes\/0\/params\/apiKey\): 'runs resume' and 'runs fork' of it need the flow again/);
    const recorded = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'lit', 'flow.json'), 'utf8');
    expect(recorded).not.toContain(KEY);

    const fixed = { env: { BPF_TEST_KEY: KEY, BPF_TEST_FIXED: '1' } };
    const refused = await cli(['runs', 'resume', 'lit', ...d], fixed);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/has secrets masked where they were given as they are \(\/nodes\/0\/params\/apiKey\).*--flow <flow\.json>/);
    const fork = await cli(['runs', 'fork', 'lit', '--step', '0', '--new-run-id', 'lit-f', ...d], fixed);
    expect(fork.code).toBe(1);
    expect(fork.stderr).toMatch(/\/nodes\/0\/params\/apiKey/);
    // Refused before anything ran: the run is still resumable, and no fork was recorded.
    expect((await cliJson(['runs', 'list', '--data-dir', dataDir])).map((r: { runId: string }) => r.runId)).toEqual(['lit']);

    expect(await cliJson(['runs', 'resume', 'lit', '--flow', flow, ...d], fixed)).toMatchObject({ status: 'completed' });
    expect(await keyWasReal(dataDir, 'lit')).toBe(true);
  });

  it('is not needed for a secret written as an ${ENV_NAME} reference: recorded as written, resolved again on resume', async () => {
    const dataDir = tempDir();
    const flow = flowFile(tempDir(), '${BPF_TEST_KEY}');
    const d = ['--modules', MODULES, '--data-dir', dataDir];
    const failed = await cli(['run', flow, '--run-id', 'ref', ...d], { env: { BPF_TEST_KEY: KEY } });
    expect(failed.code).toBe(1);
    expect(failed.stderr).not.toMatch(/masks secrets/);
    expect(await cliJson(['runs', 'resume', 'ref', ...d], { env: { BPF_TEST_KEY: KEY, BPF_TEST_FIXED: '1' } })).toMatchObject({ status: 'completed' });
    expect(await keyWasReal(dataDir, 'ref')).toBe(true);
    expect(readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'ref', 'flow.json'), 'utf8')).toContain('"apiKey":"${BPF_TEST_KEY}"');
  });
});
