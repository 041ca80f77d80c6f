/**
 * A resume reads where the run stands (its status, its last step, the answers given) before it holds the run's
 * writer. When another resume gets the run in between and moves it on, the first must not continue from the point
 * the log has left behind (running its nodes again, writing a second history into the same log): it is refused,
 * nothing written.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, EventStore, FileRunStore, Flow, listRuns, resumeRun, runFlow, RunGoneError, StoreError, type RunStore } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

type Handle = Parameters<BackpackNode['post']>[0];

/** A counter flow of `steps` steps whose node counts its executions, and stops the run after step `stopAt`. */
function counter(steps: number, runs: { count: number }, stopAt?: { step: number; controller: AbortController }): Flow {
  class Count extends BackpackNode<number, number> {
    override prep(backpack: Handle): number {
      return (backpack.unpack('n') as number | undefined) ?? 0;
    }
    override exec(n: number): number {
      runs.count++;
      return n + 1;
    }
    override post(backpack: Handle, _prev: number, n: number): string | undefined {
      backpack.pack('n', n);
      if (stopAt && n === stopAt.step) stopAt.controller.abort();
      return n < steps ? 'again' : undefined;
    }
  }
  const flow = new Flow({ namespace: 'race' });
  const node = flow.addNode(Count, { id: 'count' });
  node.on('again', node);
  return flow;
}

/**
 * `store`, whose openWriter waits until `open` is called (a process descheduled between its checks and its lock);
 * `reached` resolves once a caller waits there.
 */
function gated(store: RunStore): { store: RunStore; reached: Promise<void>; open: () => void } {
  let open!: () => void;
  let reach!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const proxy = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (property === 'openWriter') return async (...args: unknown[]) => (reach(), await gate, (value as (...a: unknown[]) => unknown).apply(target, args));
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as RunStore;
  return { store: proxy, reached, open };
}

describe('resumeRun and a concurrent resume', () => {
  it('a resume whose run moved on after its checks is refused, nothing written; the run ran each step once', async () => {
    const dataDir = makeTempDir('bpf-resume-race-', 'test');
    const runs = { count: 0 };
    const controller = new AbortController();
    await runFlow(counter(5, runs, { step: 2, controller }), { dataDir, runId: 'r', signal: controller.signal }).catch(() => undefined);
    expect((await listRuns({ dataDir }))[0]?.status).not.toBe('completed');
    const gate = gated(new FileRunStore(dataDir));
    const late = resumeRun(counter(5, runs), { store: gate.store, runId: 'r' }).then(
      () => 'resumed',
      (error: unknown) => error,
    );
    // The late resume has read the run and waits for its writer; another resume takes the run and completes it.
    await gate.reached;
    await expect(resumeRun(counter(5, runs), { dataDir, runId: 'r' })).resolves.toMatchObject({ status: 'completed', steps: 5 });
    const log = (): string => readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'r', 'events.jsonl'), 'utf8');
    const before = log();
    gate.open();
    const refused = await late;
    expect(refused).toBeInstanceOf(StoreError);
    expect((refused as Error).message).toMatch(/^run default\/r moved on while this resume was starting: .* Nothing was written/);
    expect(log()).toBe(before);
    expect(runs.count).toBe(5);
    expect(before.split('\n').filter((line) => line.includes('"type":"run.completed"'))).toHaveLength(1);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'completed' });
  });

  it('a resume whose run did not move meanwhile goes on as before', async () => {
    const dataDir = makeTempDir('bpf-resume-race-', 'test');
    const runs = { count: 0 };
    const controller = new AbortController();
    await runFlow(counter(4, runs, { step: 1, controller }), { dataDir, runId: 'r', signal: controller.signal }).catch(() => undefined);
    const gate = gated(new FileRunStore(dataDir));
    const resumed = resumeRun(counter(4, runs), { store: gate.store, runId: 'r' });
    await gate.reached;
    gate.open();
    await expect(resumed).resolves.toMatchObject({ status: 'completed', steps: 4 });
    expect(runs.count).toBe(4);
  });

  it('a resume whose run was deleted after its checks says so, writes nothing and does not recreate the run (audit-crash F3)', async () => {
    const dataDir = makeTempDir('bpf-resume-race-', 'test');
    const runs = { count: 0 };
    const controller = new AbortController();
    await runFlow(counter(4, runs, { step: 1, controller }), { dataDir, runId: 'r', signal: controller.signal }).catch(() => undefined);
    const files = new FileRunStore(dataDir);
    const gate = gated(files);
    const late = resumeRun(counter(4, runs), { store: gate.store, runId: 'r' }).then(
      () => 'resumed',
      (error: unknown) => error,
    );
    // The resume has read the run and waits for its writer; 'runs delete' removes the run meanwhile.
    await gate.reached;
    await expect(files.deleteRun({ sessionKey: 'default', runId: 'r' })).resolves.toBe(true);
    gate.open();
    const refused = await late;
    expect(refused).toBeInstanceOf(RunGoneError);
    expect((refused as Error).message).toMatch(/^run default\/r was deleted while this command was starting \(.*runs[/\\]r is gone: 'runs delete' or 'runs prune' in another process\?\); nothing was written$/);
    expect(existsSync(join(dataDir, 'sessions', 'default', 'runs', 'r'))).toBe(false);
    expect(await listRuns({ dataDir })).toEqual([]);
    expect(runs.count).toBe(1);
  });

  it('an event log opened as existing is not created: a missing run is a RunGoneError, with nothing left behind', async () => {
    const dataDir = makeTempDir('bpf-resume-race-', 'test');
    const store = new EventStore({ dataDir, sessionKey: 's', runId: 'never-recorded' });
    await expect(store.open({ existing: true })).rejects.toBeInstanceOf(RunGoneError);
    expect(existsSync(join(dataDir, 'sessions', 's'))).toBe(false);
  });
});
