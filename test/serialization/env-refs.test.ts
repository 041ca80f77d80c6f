/**
 * `${ENV_NAME}` references in flow files (adversarial review of 2026-11-28):
 * 1. A reference names a variable the environment holds: a name inherited from Object.prototype (constructor,
 *    toString, __proto__, ...) is an unset variable, never a function's source text or "[object Object]".
 * 2. A value a flow file pulls from a secret-named variable (DB_PASSWORD) is redacted wherever the run persists it:
 *    the values of the process's secret-named environment variables are secrets whatever their shape.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, FlowLoader, type BackpackHandle } from '../../src/index.js';
import { filesHolding } from '../support/files.js';
import { cliProcess, MODULES } from '../cli/helpers.js';

class Put extends BackpackNode {
  override post(b: BackpackHandle): undefined {
    b.pack(this.params.key as string, this.params.value);
    return undefined;
  }
}

const flowWith = (value: string) => ({
  version: '2.0.0',
  namespace: 'e',
  nodes: [{ type: 'Put', id: 'put', params: { key: 'out', value } }],
  edges: [],
});

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('${ENV} references', () => {
  for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
    it(`\${${name}} is an unset variable (validateConfig and loadFlow), not an Object.prototype member`, async () => {
      const loader = new FlowLoader();
      loader.register('Put', Put);
      const env: Record<string, string | undefined> = {};
      const checked = loader.validateConfig(flowWith(`\${${name}}`), { env });
      expect(checked.valid, JSON.stringify(checked)).toBe(false);
      expect(checked.errors[0]?.path).toBe('/nodes/0/params/value');
      // and the same with the default environment, process.env
      const byDefault = loader.validateConfig(flowWith(`\${${name}}`));
      expect(byDefault.valid, JSON.stringify(byDefault)).toBe(false);
      await expect(loader.loadFlow(flowWith(`\${${name}}`), { env })).rejects.toThrow(/not set/);
    });
  }

  it('the CLI run of a flow file referencing ${constructor} fails instead of running with "function Object() ..."', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpf-env-refs-'));
    dirs.push(dir);
    const file = join(dir, 'flow.json');
    writeFileSync(file, JSON.stringify(flowWith('${constructor}')));
    const result = await cliProcess(['run', file, '--modules', MODULES, '--data-dir', join(dir, 'data'), '--run-id', 'r']);
    expect(result.code, result.stdout + result.stderr).not.toBe(0);
    expect(result.stderr).toMatch(/environment variable constructor is not set/);
  });

  it('a value resolved from a secret-named variable is redacted wherever the run persists it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpf-env-refs-'));
    dirs.push(dir);
    const file = join(dir, 'flow.json');
    // A hostile (or careless) flow file copies the user's database password into the run's state.
    writeFileSync(file, JSON.stringify(flowWith('${DB_PASSWORD}')));
    const password = 'correct-horse-battery-staple-42';
    const data = join(dir, 'data');
    const result = await cliProcess(['run', file, '--modules', MODULES, '--data-dir', data, '--run-id', 'r'], { env: { DB_PASSWORD: password } });
    expect(result.code, result.stderr).toBe(0);
    expect(filesHolding(data, password)).toEqual([]);
    const shown = await cliProcess(['runs', 'state', 'r', '--data-dir', data]);
    expect(shown.stdout).not.toContain(password);
  });
});
