/**
 * Issue 13: a run writes node ids, class names and namespaces to its event log as they are, and its store refuses
 * an event whose names hold a secret. runFlow and forkRun refuse such a flow before anything of the run is written
 * (the store refused it only once the first step had run), naming the node without quoting the secret.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError, FlowLoader, forkRun, listRuns, openNewRun, resumeRun, runFlow } from '../../src/index.js';
import { checkFlowNames, secretNameTest } from '../../src/runtime/flow-names.js';
import { makeTempDir } from '../support/temp.js';

const TOKEN = `ghp_${'a1B2'.repeat(9)}`;

class Step extends BackpackNode {}
// A class whose name is an AWS access key id: every event of its nodes carries it as nodeName.
class AKIAQWERTYUIOPASDFGH extends BackpackNode {}

/** `first` → `second` in namespace `ns`, `second` of class `Second`. */
function chain(ns: string, second: string, Second: typeof BackpackNode = Step): Flow {
  const flow = new Flow({ namespace: ns });
  flow.addNode(Step, { id: 'first' }).next(flow.addNode(Second, { id: second }));
  return flow;
}

const events = (dataDir: string, runId: string): string => {
  const log = join(dataDir, 'sessions', 'default', 'runs', runId, 'events.jsonl');
  return existsSync(log) ? readFileSync(log, 'utf8') : '';
};

describe('runFlow refuses a flow whose names hold a secret, before anything is written', () => {
  it('a node id: a FlowError naming the node by its namespace, the token replaced; no event, no run', async () => {
    const dataDir = makeTempDir('bpf-flow-names-', 'test');
    const error = await runFlow(chain('team', TOKEN), { dataDir, runId: 'r1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowError);
    expect((error as Error).message).toMatch(/^node 'team\.\[REDACTED\]' has a secret-looking nodeId \(its id, by the run's redaction\): .* rename it$/);
    expect((error as Error).message).not.toContain(TOKEN);
    expect(events(dataDir, 'r1')).toBe('');
    expect(await listRuns({ dataDir })).toEqual([]);
  });

  it('a class name, a namespace, a subflow and a node of a composite internal flow, at any level', async () => {
    const dataDir = makeTempDir('bpf-flow-names-', 'test');
    const refusal = (flow: Flow) => runFlow(flow, { dataDir }).then(() => 'ran', (e: Error) => e.message);
    expect(await refusal(chain('team', 'second', AKIAQWERTYUIOPASDFGH))).toMatch(/^node 'team\.second' has a secret-looking nodeName \(its class name/);
    expect(await refusal(chain(`team.${TOKEN}`, 'second'))).toMatch(/^flow 'team\.\[REDACTED\]' has a secret-looking namespace/);
    const withSubflow = chain('team', 'second');
    const sub = withSubflow.addSubflow({ namespace: TOKEN });
    sub.addNode(Step, { id: 'inside' });
    withSubflow.getNode('second')!.next(sub);
    expect(await refusal(withSubflow)).toMatch(/^subflow 'team\.\[REDACTED\]' has a secret-looking nodeId/);
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Step, { id: 'check' }).next(flow.addNode(Step, { id: TOKEN }));
      }
    }
    expect(await refusal(chain('team', 'review', Composite))).toMatch(/^node 'team\.review\.\[REDACTED\]' has a secret-looking nodeId/);
    expect(await listRuns({ dataDir })).toEqual([]);
  });

  it("judges by the run's own redaction: a name only its patterns match is refused, and runs without them", async () => {
    const dataDir = makeTempDir('bpf-flow-names-', 'test');
    const redaction = { patterns: [/\binternal-[0-9]{6}\b/g] };
    expect(secretNameTest(redaction)('internal-123456')).toBe(true);
    expect(secretNameTest()('internal-123456')).toBe(false);
    await expect(runFlow(chain('team', 'internal-123456'), { dataDir, redaction })).rejects.toThrow(/^node 'team\.\[REDACTED\]' has a secret-looking nodeId/);
    await expect(runFlow(chain('team', 'internal-123456'), { dataDir })).resolves.toMatchObject({ status: 'completed' });
  });

  it('a new run taken over (openNewRun) is given up: its writer closed, its id free for the next start', async () => {
    const dataDir = makeTempDir('bpf-flow-names-', 'test');
    const held = await openNewRun({ dataDir, runId: 'held' });
    await expect(runFlow(chain('team', TOKEN), { newRun: held })).rejects.toBeInstanceOf(FlowError);
    expect(events(dataDir, 'held')).toBe('');
    await expect(runFlow(chain('team', 'fine'), { dataDir, runId: 'held' })).resolves.toMatchObject({ status: 'completed' });
  });

  it('forkRun refuses it too, and leaves the recorded run and the new id alone', async () => {
    const dataDir = makeTempDir('bpf-flow-names-', 'test');
    await runFlow(chain('team', 'second'), { dataDir, runId: 'origin' });
    const before = events(dataDir, 'origin');
    await expect(forkRun(chain('team', TOKEN), { dataDir, runId: 'origin', atStep: 1, newRunId: 'branch' })).rejects.toThrow(/^node 'team\.\[REDACTED\]' has a secret-looking nodeId/);
    expect(events(dataDir, 'origin')).toBe(before);
    expect(events(dataDir, 'branch')).toBe('');
  });

  it('resumeRun refuses it too, and leaves the recorded run alone', async () => {
    const dataDir = makeTempDir('bpf-flow-names-', 'test');
    const origin = chain('team', 'second');
    origin.getNode('second')!.next(origin.addNode(Step, { id: 'third' }));
    await runFlow(origin, { dataDir, runId: 'stopped', signal: AbortSignal.abort() }).catch(() => undefined);
    const before = events(dataDir, 'stopped');
    expect(before).toContain('run.started');
    await expect(resumeRun(chain('team', TOKEN), { dataDir, runId: 'stopped' })).rejects.toThrow(/^node 'team\.\[REDACTED\]' has a secret-looking nodeId/);
    expect(events(dataDir, 'stopped')).toBe(before);
  });

  it("a new run taken over from openNewRun is judged by the NewRun's redaction", async () => {
    const dataDir = makeTempDir('bpf-flow-names-', 'test');
    const held = await openNewRun({ dataDir, runId: 'held-custom', redaction: { patterns: [/\binternal-[0-9]{6}\b/g] } });
    await expect(runFlow(chain('team', 'internal-123456'), { newRun: held })).rejects.toThrow(/^node 'team\.\[REDACTED\]' has a secret-looking nodeId/);
    expect(events(dataDir, 'held-custom')).toBe('');
  });

  it('checks the nodes a run can reach, and builds none of those a loaded flow builds on first use', async () => {
    let creations = 0;
    // A plain class (built on first use); its paramsSchema is read each time a node of it is created.
    class Put extends BackpackNode {
      static override get paramsSchema(): undefined {
        creations++;
        return undefined;
      }
    }
    const loader = new FlowLoader().register('Put', Put);
    const nodes = Array.from({ length: 100 }, (_, i) => ({ type: 'Put', id: i === 50 ? TOKEN : `n${i}`, params: {} }));
    const flow = await loader.loadFlow(JSON.stringify({ version: '2.0.0', namespace: 'big', nodes, edges: [{ from: 'n0', to: 'n1' }] }));
    creations = 0;
    // Node 50 is reached by no route: a run never executes it, so never writes its name.
    checkFlowNames(flow);
    expect(creations).toBe(0);
  });
});
