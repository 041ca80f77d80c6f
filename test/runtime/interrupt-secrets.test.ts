/**
 * Pauses for a person whose answer holds a secret (DESIGN D15, D16). The run's log keeps the answer redacted, so a
 * node that runs again from prep cannot be given it again: it is told so, never handed '[REDACTED]' as the answer
 * (found by the adversarial review of 2026-11-28). A node that asks for the secret last gets the real answer.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, listRuns, resumeRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

const PASSWORD = 'Tr0ub4dor-and-3';

/** Every file under `dir` whose bytes hold `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesHolding(path, needle));
    else if (readFileSync(path).includes(needle)) out.push(path);
  }
  return out;
}

describe('an answer that holds a secret', () => {
  it('is not replayed as "[REDACTED]" to a node that asks again after it: the run fails, saying why and what to do', async () => {
    const dataDir = makeTempDir('interrupt-secret-', 'test');
    const lengths: number[] = [];
    const build = (): Flow => {
      class Ask extends BackpackNode {
        override async post(backpack: BackpackHandle): Promise<undefined> {
          const first = await this.interrupt<{ password: string }>('database password?');
          await this.interrupt<boolean>('really deploy?');
          lengths.push(first.password.length);
          backpack.pack('deployed', true);
          return undefined;
        }
      }
      const flow = new Flow({ namespace: 'ops' });
      flow.addNode(Ask, { id: 'ask' });
      return flow;
    };
    await runFlow(build(), { dataDir, runId: 'two-asks' });
    expect((await resumeRun(build(), { dataDir, runId: 'two-asks', resume: { password: PASSWORD } })).status).toBe('waiting');
    const error = await resumeRun(build(), { dataDir, runId: 'two-asks', resume: true }).then(() => undefined, (e: unknown) => e as Error);
    expect(error?.message).toMatch(/Node 'ask' \(ops\.ask\): the answer to its interrupt 0 held a secret, which the run's log keeps redacted, .*Ask for a secret in a node's last interrupt/);
    expect(lengths).toEqual([]);
    const [run] = await listRuns({ dataDir });
    expect(run).toMatchObject({ runId: 'two-asks', status: 'failed' });
    expect(filesHolding(dataDir, PASSWORD)).toEqual([]);
  });

  it("is given as it was to a node that asks for it last, and never reaches the disk", async () => {
    const dataDir = makeTempDir('interrupt-secret-', 'test');
    const lengths: number[] = [];
    const build = (): Flow => {
      class Ask extends BackpackNode {
        override async post(backpack: BackpackHandle): Promise<undefined> {
          await this.interrupt<boolean>('deploy?');
          const { password } = await this.interrupt<{ password: string }>('database password?');
          lengths.push(password.length);
          backpack.pack('deployed', true);
          return undefined;
        }
      }
      const flow = new Flow({ namespace: 'ops' });
      flow.addNode(Ask, { id: 'ask' });
      return flow;
    };
    await runFlow(build(), { dataDir, runId: 'secret-last' });
    expect((await resumeRun(build(), { dataDir, runId: 'secret-last', resume: true })).status).toBe('waiting');
    const flow = build();
    expect((await resumeRun(flow, { dataDir, runId: 'secret-last', resume: { password: PASSWORD } })).status).toBe('completed');
    expect(lengths).toEqual([PASSWORD.length]);
    expect(flow.backpack.peek('deployed')).toBe(true);
    expect(filesHolding(dataDir, PASSWORD)).toEqual([]);
  });
});
