/**
 * What a run records of its flow file (`flow.json` beside the log, which resume and fork rebuild the flow from): a
 * param its node class marks secret (`.meta({ secret: true })`) is masked, whatever its name, unless it is written as
 * an environment reference, which is resolved at load and never holds the secret.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODULES, cli, tempDir } from './helpers.js';

describe('the flow a run records', () => {
  it('masks the params node classes mark secret, keeps environment references, and the run still uses the values', async () => {
    const dir = tempDir();
    const flowFile = join(dir, 'vault.json');
    writeFileSync(
      flowFile,
      JSON.stringify({
        version: '2.0.0',
        namespace: 'app',
        nodes: [
          { type: 'Vault', id: 'literal', params: { pin: '4921-8812-3391', key: 'a' } },
          { type: 'Vault', id: 'ref', params: { pin: '${BPF_TEST_PIN}', key: 'b' } },
        ],
        edges: [{ from: 'literal', to: 'ref', condition: 'default' }],
      }),
    );
    const run = await cli(['run', flowFile, '--modules', MODULES, '--data-dir', dir, '--run-id', 'v1'], { env: { BPF_TEST_PIN: '1234-5678' } });
    expect(run.code, run.stderr).toBe(0);
    const recorded = readFileSync(join(dir, 'sessions', 'default', 'runs', 'v1', 'flow.json'), 'utf8');
    expect(recorded).not.toContain('4921-8812-3391');
    expect(recorded).not.toContain('1234-5678');
    expect(recorded).toContain('"pin":"***"');
    expect(recorded).toContain('${BPF_TEST_PIN}');
  });
});
