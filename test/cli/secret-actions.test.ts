/**
 * What `backpackflow run` prints of an action and of a flow's route names is redacted as the run's log is (README
 * "Secrets on your terminal"): the closing line, the --json result and the warning on stderr for an action with no
 * route (review s32, finding 2: the log and the live trace redacted them, those three did not). An action is data: a
 * node's return value, a DecisionNode's is the model's text.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/temp.js';
import { filesHolding } from '../support/files.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'dist', 'cli', 'backpackflow.js');
const MODULES = join(root, 'test', 'cli', 'fixtures', 'nodes.mjs');
const TOKEN = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

function run(flow: unknown, input: unknown, extra: string[] = []): { dir: string; stdout: string; stderr: string; status: number | null } {
  const dir = makeTempDir('bf-cli-route-', 'test');
  writeFileSync(join(dir, 'flow.json'), JSON.stringify(flow));
  const r = spawnSync(process.execPath, [BIN, 'run', join(dir, 'flow.json'), '--modules', MODULES, '--data-dir', join(dir, 'data'), '--run-id', 'r1', '--input', JSON.stringify(input), ...extra], { encoding: 'utf8' });
  return { dir, stdout: r.stdout, stderr: r.stderr, status: r.status };
}

describe('what backpackflow run prints of an action or a route name', () => {
  const flow = { version: '2.0.0', namespace: 'w', nodes: [{ type: 'Echo', id: 'echo' }], edges: [] };
  it("the closing line 'run id: … (last step 1, action …)' does not print an action that holds a token", () => {
    const r = run(flow, { route: `failed: auth ${TOKEN}` });
    expect(r.status).toBe(0);
    expect(filesHolding(join(r.dir, 'data'), TOKEN)).toEqual([]);
    expect(r.stdout).toContain('failed: auth [REDACTED]');
    expect(r.stdout).not.toContain(TOKEN);
  });

  it('the --json result does not print an action that holds a token', () => {
    const r = run(flow, { route: `failed: auth ${TOKEN}` }, ['--json']);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain(TOKEN);
  });

  it("the route-missing warning on stderr does not print an action that holds a token", () => {
    const withRoute = { ...flow, edges: [{ from: 'echo', to: 'echo', condition: 'again' }] };
    const r = run(withRoute, { route: `failed: auth ${TOKEN}` });
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain(TOKEN);
    expect(r.stderr).toContain("no route for action 'failed: auth [REDACTED]'");
  });

  it("does not print a route name (an edge's condition) that holds a token", () => {
    const flow = { version: '2.0.0', namespace: 'w', nodes: [{ type: 'Echo', id: 'echo' }], edges: [{ from: 'echo', to: 'echo', condition: TOKEN }] };
    const r = run(flow, { route: 'done' });
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain(TOKEN);
    expect(r.stderr).not.toContain(TOKEN);
  });
});
