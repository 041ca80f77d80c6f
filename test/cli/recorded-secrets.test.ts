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

describe('what `run` and `memory add` print', () => {
  const TOKEN = `ghp_${'A1b2C3d4E5'.repeat(4).slice(0, 36)}`;
  const DSN = 'postgres://alice:Pgs3cretW0rd@db.internal/app';

  it("redacts a waiting node's question, a node's error and the final error line, in the trace, --json and stderr", async () => {
    const dir = tempDir();
    const file = join(dir, 'leaky.mjs');
    writeFileSync(
      file,
      `import { BackpackNode, Flow } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)};
class Ask extends BackpackNode {
  async post() { await this.interrupt({ password: 'hunter2-Correct-Horse', dsn: ${JSON.stringify(DSN)} }); }
}
class Fail extends BackpackNode {
  exec() { throw new Error('upstream refused ${TOKEN} for ${DSN}'); }
}
export function askFlow() { const f = new Flow({ namespace: 'q' }); f.addNode(Ask, { id: 'ask' }); return f; }
export function failFlow() { const f = new Flow({ namespace: 'f' }); f.addNode(Fail, { id: 'fail' }); return f; }
`,
    );
    const outputs: string[] = [];
    for (const [name, runId] of [['askFlow', 'q1'], ['failFlow', 'f1']] as const) {
      for (const json of [[], ['--json']]) {
        const run = await cli(['run', '--flow-module', `${file}#${name}`, '--run-id', `${runId}${json.length}`, '--data-dir', dir, ...json]);
        outputs.push(run.stdout, run.stderr);
      }
    }
    const all = outputs.join('\n');
    expect(all).toContain('[REDACTED');
    for (const secret of ['hunter2-Correct-Horse', 'Pgs3cretW0rd', TOKEN]) expect(all).not.toContain(secret);
    // The run's outcome still reads as before.
    expect(all).toMatch(/is waiting for an answer to node 'ask'/);
    expect(all).toMatch(/failed/);
  });

  it('memory add prints the item as stored, redacted', async () => {
    const dir = tempDir();
    for (const json of [[], ['--json']]) {
      const added = await cli(['memory', 'add', `deploy key ${TOKEN}`, '--data-dir', dir, ...json]);
      expect(added.code, added.stderr).toBe(0);
      expect(added.stdout).not.toContain(TOKEN);
    }
  });
});
