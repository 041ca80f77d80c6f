import { appendFileSync, readFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { FileRunStore, memoryItemPath, memoryPaths, runPaths } from '../../src/store/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { BIN, FIXTURES, MODULES, cli, cliJson, tempDir } from '../cli/helpers.js';
import { get, openStream, post, startGatedRun, type SseMessage } from './helpers.js';

let dataDir = '';
let runId = '';
let forkId = '';
let studio: StudioServer;

beforeAll(async () => {
  dataDir = tempDir();
  const run = await cli(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--data-dir', dataDir, '--input', '{"question":"what boils?"}']);
  expect(run.stderr).toBe('');
  runId = /run id: (\S+)/.exec(run.stdout)![1]!;
  forkId = `${runId}-fork`;
  const fork = await cli(['runs', 'fork', runId, '--step', '1', '--new-run-id', forkId, '--modules', MODULES, '--data-dir', dataDir]);
  expect(fork.stderr).toBe('');
  const memory = await cli(['memory', 'add', 'water boils at 100 degrees at sea level', '--data-dir', dataDir]);
  expect(memory.code).toBe(0);
  studio = await startStudio({ dataDir, port: 0, tail: { pollMs: 50 } });
}, 60_000);

afterAll(async () => {
  await studio?.close();
});

const api = (path: string, headers: Record<string, string> = {}) => get(studio.port, path, headers);

/** A flow of one node that packs k = 1, 2, 3, 4, a step each. */
function countingFlow(namespace: string): Flow {
  class Step extends BackpackNode {
    override post(backpack: BackpackHandle): string | undefined {
      const n = ((backpack.unpack('k') as number | undefined) ?? 0) + 1;
      backpack.pack('k', n);
      return n < 4 ? 'again' : undefined;
    }
  }
  const flow = new Flow({ namespace });
  const node = flow.addNode(Step, { id: 'step' });
  node.on('again', node);
  return flow;
}

describe('studio API over a recorded run', () => {
  it('prints a loopback URL with the token writes need (reads need none) and answers /api/info', async () => {
    expect(studio.token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(studio.url).toBe(`http://127.0.0.1:${studio.port}/?token=${studio.token}`);
    const info = await api('/api/info');
    expect(info.status).toBe(200);
    expect(info.json).toMatchObject({ store: 'files', location: dataDir, sessions: ['default'], tokenRequired: false, canWrite: false, workspace: null });
    expect((await api('/api/info', { authorization: `Bearer ${studio.token}` })).json.canWrite).toBe(true);
    const viaQuery = await api(`/api/info?token=${studio.token}`);
    expect(viaQuery.json.canWrite).toBe(true);
    // No cookie: browsers send a cookie to every port of 127.0.0.1, i.e. to any other server there.
    expect(viaQuery.headers['set-cookie']).toBeUndefined();
    expect((await api('/api/info', { cookie: `bpf_studio_${studio.port}=${studio.token}` })).json.canWrite).toBe(false);
    expect((await api('/api/info?token=wrong')).json.canWrite).toBe(false);
    expect(info.json.eventTypes).toContain('backpack.packed');
  });

  it('GET /api/runs lists runs with status, steps, errors, tokens and fork origin', async () => {
    const reply = await api('/api/runs');
    expect(reply.status).toBe(200);
    expect(reply.headers['cache-control']).toBe('no-store');
    const byId = new Map<string, any>(reply.json.runs.map((r: any) => [r.runId, r]));
    expect(byId.get(runId)).toMatchObject({ status: 'completed', sessionKey: 'default', errorCount: 0, forkedFrom: null, tokenUsage: { total: 0 } });
    expect(byId.get(runId).stepCount).toBeGreaterThan(0);
    expect(typeof byId.get(runId).durationMs).toBe('number');
    expect(byId.get(forkId)).toMatchObject({ status: 'completed', forkedFrom: { runId, step: 1 } });
    const none = await api('/api/runs?session=nobody');
    expect(none.json.runs).toEqual([]);
  });

  it('GET /api/runs/:id gives the projection, the step range and the recorded flow config', async () => {
    const reply = await api(`/api/runs/${runId}`);
    expect(reply.status).toBe(200);
    expect(reply.json.meta).toMatchObject({ runId, status: 'completed' });
    expect(reply.json.steps).toEqual({ first: 0, last: 3, warnings: [] });
    expect(reply.json.flow).toMatchObject({ namespace: 't', nodes: [{ id: 'fact' }, { id: 'count' }, { id: 'check' }] });
    const fork = await api(`/api/runs/${forkId}`);
    expect(fork.json.steps.first).toBe(1);
    expect(fork.json.forkedFrom).toEqual({ runId, step: 1 });
  });

  it('GET /api/runs/:id/trace gives the span tree with durations, routes, retries and quarantines', async () => {
    const trace = (await api(`/api/runs/${runId}/trace`)).json;
    const nodes = trace.items.filter((i: any) => i.kind === 'node').map((i: any) => i.node);
    expect(nodes.map((n: any) => n.namespace)).toEqual(['t.fact', 't.count', 't.check']);
    expect(nodes.every((n: any) => typeof n.durationMs === 'number')).toBe(true);
    expect(nodes[2].items.map((i: any) => i.kind)).toEqual(['retry', 'quarantine']);
    expect(trace.items.filter((i: any) => i.kind === 'route').map((i: any) => `${i.from}>${i.to}`)).toEqual(['fact>count', 'count>check']);
  });

  it('GET /api/runs/:id/trace is the trace `runs show --json` prints, model calls and their streamed text included', async () => {
    const module = `${join(FIXTURES, 'streaming.mjs')}#buildStreamingFlow`;
    const run = await cli(['run', '--flow-module', module, '--input', '{"question":"tides?"}', '--run-id', 'run_model', '--data-dir', dataDir]);
    expect(run.code, run.stderr).toBe(0);
    const shown = await cliJson(['runs', 'show', 'run_model', '--data-dir', dataDir]);
    const { warnings, ...trace } = (await api('/api/runs/run_model/trace')).json;
    // An intact log: nothing skipped (a damaged one names what, see 'studio API over a damaged log').
    expect(warnings).toEqual([]);
    expect(trace).toEqual(shown);
    expect(JSON.stringify(trace)).toContain('"text":"Tides rise twice"');
  });

  it('GET /api/runs/:id/trace?limit&offset pages its top-level lines; ?head=1 answers from the head of the log, the same lines', async () => {
    // A run whose trace is longer than one check of the head: 400 steps of one node, each a node and a route.
    class Tick extends BackpackNode<number, number> {
      override prep(backpack: BackpackHandle): number {
        return (backpack.unpack('n') as number | undefined) ?? 0;
      }
      override exec(n: number): number {
        return n + 1;
      }
      override post(backpack: BackpackHandle, _prep: number, n: number): string {
        backpack.pack('n', n);
        return n < 400 ? 'again' : 'done';
      }
    }
    const flow = new Flow({ namespace: 'long', maxSteps: 500 });
    const tick = flow.addNode(Tick, { id: 'tick' });
    tick.on('again', tick);
    await runFlow(flow, { dataDir, runId: 'run_long_trace', durability: 'never' });
    const head = (await api('/api/runs/run_long_trace/trace?limit=5&head=1')).json;
    expect(head.complete).toBe(false);
    expect(head.itemCount).toBeLessThan(800);
    const whole = (await api('/api/runs/run_long_trace/trace')).json;
    expect(whole.items).toHaveLength(800);
    // 400 nodes, the 399 routes between them, and no route for the last action.
    expect(whole.items.slice(-2)).toMatchObject([{ kind: 'node', node: { nodeId: 'tick', status: 'completed', action: 'done' } }, { kind: 'route-missing', action: 'done' }]);
    expect(head.items).toEqual(whole.items.slice(0, 5));
    const first = (await api('/api/runs/run_long_trace/trace?limit=5')).json;
    expect(first.warnings).toEqual([]);
    expect(first).toMatchObject({ complete: true, offset: 0, itemCount: 800, status: 'completed', items: whole.items.slice(0, 5) });
    expect(first.longestMs).toBe(Math.max(...whole.items.filter((i: any) => i.kind === 'node').map((i: any) => i.node.durationMs)));
    const later = (await api('/api/runs/run_long_trace/trace?limit=3&offset=797')).json;
    expect(later).toMatchObject({ offset: 797, itemCount: 800, items: whole.items.slice(797) });
    // Once the whole trace is at hand, the head is it.
    expect((await api('/api/runs/run_long_trace/trace?limit=5&head=1')).json).toEqual(first);
    // A short run's head is its whole trace.
    const short = (await api(`/api/runs/${runId}/trace?limit=200&head=1`)).json;
    expect(short).toMatchObject({ complete: true, itemCount: (await api(`/api/runs/${runId}/trace`)).json.items.length });
  });

  it('GET /api/runs/:id/events pages through the log with line numbers and filters by type and namespace', async () => {
    const first = (await api(`/api/runs/${runId}/events?pageSize=5`)).json;
    const second = (await api(`/api/runs/${runId}/events?pageSize=5&page=2`)).json;
    const meta = (await api(`/api/runs/${runId}`)).json.meta;
    expect(first.events.map((e: any) => e.line)).toEqual([0, 1, 2, 3, 4]);
    expect(first.events[0].event.type).toBe('run.started');
    expect(second.events[0].line).toBe(5);
    expect(second.events[0].event.seq).toBe(first.events[4].event.seq + 1);
    expect(first).toMatchObject({ hasMore: true, total: meta.eventCount, corrupt: [] });
    const lastPage = Math.ceil(meta.eventCount / 5);
    const last = (await api(`/api/runs/${runId}/events?pageSize=5&page=${lastPage}`)).json;
    expect(last.hasMore).toBe(false);
    expect(last.events.at(-1).line).toBe(meta.eventCount - 1);
    const packed = (await api(`/api/runs/${runId}/events?type=backpack.packed&namespace=t.*`)).json;
    expect(packed.events.map((e: any) => e.event.payload.key)).toEqual(['fact', 'count', 'checked']);
    expect(packed).toMatchObject({ total: 3, hasMore: false });
    const pagedFilter = (await api(`/api/runs/${runId}/events?type=backpack.packed&pageSize=1&page=2`)).json;
    expect(pagedFilter.events.map((e: any) => e.event.payload.key)).toEqual(['count']);
    expect(pagedFilter).toMatchObject({ hasMore: true, total: null });
  });

  it('GET /api/runs/:id/state gives the state at a step with the writer of each key, and quarantined items', async () => {
    const start = (await api(`/api/runs/${runId}/state?step=0`)).json;
    expect(start.items.map((i: any) => [i.key, i.provenance.nodeId])).toEqual([['question', null]]);
    const end = (await api(`/api/runs/${runId}/state`)).json;
    expect(end.step).toBe(3);
    expect(end.items.find((i: any) => i.key === 'count')).toMatchObject({ summary: '1', provenance: { nodeId: 'count', namespace: 't.count', version: 1 } });
    expect(end.quarantined.map((q: any) => [q.key, q.quarantine.reason])).toEqual([['fact', 'contradicts the sources']]);
  });

  it('GET /api/runs/:id/diff and /blame/:key say what changed and who wrote it', async () => {
    const diff = (await api(`/api/runs/${runId}/diff?from=1&to=3`)).json;
    expect(diff.changes.map((c: any) => [c.key, c.change, c.by.nodeId])).toEqual([
      ['fact', 'quarantined', 'fact'],
      ['count', 'added', 'count'],
      ['checked', 'added', 'check'],
    ]);
    const blame = (await api(`/api/runs/${runId}/blame/fact`)).json;
    expect(blame.writes.map((w: any) => [w.step, w.nodeId, w.action])).toEqual([
      [1, 'fact', 'pack'],
      [3, 'check', 'quarantine'],
    ]);
    const input = (await api(`/api/runs/${runId}/blame/question`)).json;
    expect(input.writes.map((w: any) => [w.step, w.nodeId, w.summary])).toEqual([[0, null, '"what boils?"']]);
  });

  it('GET /api/memory searches long-term memory', async () => {
    const reply = await api('/api/memory?q=boils');
    expect(reply.status).toBe(200);
    expect(reply.json.hits.map((h: any) => h.content)).toEqual(['water boils at 100 degrees at sea level']);
    expect((await api('/api/memory?q=')).json.hits).toEqual([]);
    expect((await api('/api/memory?q=x&k=0')).json).toMatchObject({ parameter: 'k' });
  });

  it('GET /api/memory names a damaged item it skipped in its warnings (it was only on the server\'s stderr)', async () => {
    expect((await cli(['memory', 'add', 'the kettle boils quickly', '--id', 'kettle', '--data-dir', dataDir])).code).toBe(0);
    const path = memoryItemPath(memoryPaths(dataDir), 'kettle');
    writeFileSync(path, readFileSync(path, 'utf8').replace('kettle boils', 'kettle BOILS'));
    const reply = await api('/api/memory?q=boils');
    expect(reply.status).toBe(200);
    expect(reply.json.hits.map((h: any) => h.content)).toEqual(['water boils at 100 degrees at sea level']);
    expect(reply.json.warnings).toEqual([expect.stringContaining(path)]);
    expect((await api('/api/memory?q=sea')).json.warnings).toEqual([]);
  });
});

describe('studio API: bad input is a 400 (or 404) naming the parameter', () => {
  it.each([
    ['/api/runs/..%2F..%2Fetc', 'runId', /contains a path separator/],
    ['/api/runs/a%20b/state', 'runId', /contains " "/],
    ['/api/runs/..', 'runId', /contains '\.\.'/],
    [`/api/runs/RUN?session=..%2Fx`, 'session', /invalid session/],
    ['/api/runs?session=a%2Fb', 'session', /invalid session/],
    [`/api/runs/RUN/state?step=99`, 'step', /invalid step 99 for run '\S+': its recorded steps are 0\.\.3/],
    [`/api/runs/RUN/state?step=-1`, 'step', /must be an integer/],
    [`/api/runs/RUN/state?step=abc`, 'step', /must be an integer/],
    [`/api/runs/RUN/diff?to=2`, 'from', /missing query parameter from/],
    [`/api/runs/RUN/diff?from=0&to=9`, 'to', /invalid to 9/],
    [`/api/runs/RUN/events?type=nope`, 'type', /invalid type "nope": one of run\.started/],
    [`/api/runs/RUN/events?namespace=a..b`, 'namespace', /invalid namespace pattern/],
    [`/api/runs/RUN/events?pageSize=0`, 'pageSize', /between 1 and 500/],
    [`/api/runs/RUN/events?page=0`, 'page', /must be an integer >= 1/],
    [`/api/runs/RUN/trace?limit=0`, 'limit', /between 1 and 5000/],
    [`/api/runs/RUN/trace?limit=5001`, 'limit', /between 1 and 5000/],
    [`/api/runs/RUN/trace?limit=5&offset=-1`, 'offset', /must be an integer >= 0/],
  ])('%s → 400 naming %s', async (path, parameter, message) => {
    const reply = await api(path.replace('RUN', runId));
    expect(reply.status).toBe(400);
    expect(reply.headers['content-type']).toContain('application/json');
    expect(reply.json.parameter).toBe(parameter);
    expect(reply.json.error).toMatch(message);
  });

  it('an unknown run is a 404 naming it; an unknown route a 404; a write method a 405', async () => {
    const missing = await api('/api/runs/run_nope/state');
    expect(missing.status).toBe(404);
    expect(missing.json.error).toContain("no run 'run_nope' in session 'default'");
    expect((await api('/api/nothing')).status).toBe(404);
    expect((await api(`/api/runs/${runId}/nothing`)).status).toBe(404);
    // A write method needs the token first; with it, a route that takes no POST is a 405 naming the methods.
    expect((await get(studio.port, '/api/runs', {}, 'POST')).status).toBe(401);
    const post = await get(studio.port, '/api/runs', { authorization: `Bearer ${studio.token}` }, 'POST');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    const put = await get(studio.port, '/', { authorization: `Bearer ${studio.token}` }, 'PUT');
    expect(put.status).toBe(405);
    const readWrite = await api(`/api/runs/${runId}/resume`);
    expect(readWrite.status).toBe(405);
    expect(readWrite.headers.allow).toBe('POST');
  });
});

/** The number of lines a stream had read when it sent `m` (the head of its `id:`). */
const linesRead = (m: SseMessage): number => Number(m.id!.split(':')[0]);

describe('studio API: live stream of a running run', () => {
  it('streams events as they are appended, and continues from Last-Event-ID', async () => {
    const liveId = 'run_live_stream';
    const { waiting, release, running } = startGatedRun(dataDir, liveId);
    await waiting;
    const stream = await openStream(studio.port, `/api/runs/${liveId}/stream`);
    try {
      expect(stream.status).toBe(200);
      // What was written before the stream opened arrives first: the first step's checkpoint.
      await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'checkpoint.saved' && JSON.parse(m.data).payload.step === 1);
      expect(stream.messages.some((m) => JSON.parse(m.data).type === 'run.completed')).toBe(false);
      // While it runs, the list and the run say so, caught up from the log; the studio writes no projection of its own
      // (the runtime stored one after its first batch: the studio leaves it as it is).
      const metaPath = runPaths(dataDir, 'default', liveId).runMeta;
      const storedBefore = existsSync(metaPath) ? readFileSync(metaPath, 'utf8') : undefined;
      expect((await api('/api/runs')).json.runs.find((r: any) => r.runId === liveId)).toMatchObject({ status: 'running', stepCount: 1 });
      expect((await api(`/api/runs/${liveId}`)).json.meta).toMatchObject({ status: 'running' });
      expect(existsSync(metaPath) ? readFileSync(metaPath, 'utf8') : undefined).toBe(storedBefore);
      // The trace and step range (made by one read of the log, kept while it keeps its size) follow the log as it grows.
      const traceNodes = async (): Promise<string[]> => (await api(`/api/runs/${liveId}/trace`)).json.items.filter((i: any) => i.kind === 'node').map((i: any) => `${i.node.nodeId}:${i.node.status}`);
      expect(await traceNodes()).toEqual(['first:completed']); // wait's events are written with its step's batch
      expect((await api(`/api/runs/${liveId}/steps`)).json).toEqual({ first: 0, last: 1, warnings: [] });
      release();
      await running;
      expect(await traceNodes()).toEqual(['first:completed', 'wait:completed']);
      expect((await api(`/api/runs/${liveId}/steps`)).json).toEqual({ first: 0, last: 2, warnings: [] });
      const end = await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'run.completed');
      expect((await api(`/api/runs/${liveId}`)).json.meta).toMatchObject({ status: 'completed', eventCount: linesRead(end) });
      const denied = (await api(`/api/runs/${liveId}/events?type=access.denied`)).json;
      expect(denied.events.map((e: any) => [e.event.nodeId, e.event.payload.operation, e.event.payload.key])).toEqual([['wait', 'read', 'private']]);
      const seqs = stream.messages.map((m) => JSON.parse(m.data).seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      expect(stream.messages.map(linesRead)).toEqual(seqs);
      expect(linesRead(end)).toBe(seqs.length);
      // and the line and id of the event: a reconnection checks that the log still holds it
      expect(end.id).toBe(`${seqs.length}:${seqs.length - 1}:${encodeURIComponent(JSON.parse(end.data).id)}`);
      // A reconnecting client sends the last id it saw and gets only what came after it.
      const resumed = await openStream(studio.port, `/api/runs/${liveId}/stream`, { 'last-event-id': String(seqs.length - 2) });
      try {
        const tail = await resumed.waitFor((m) => JSON.parse(m.data).type === 'run.completed');
        expect(resumed.messages.map(linesRead)).toEqual([seqs.length - 1, linesRead(tail)]);
      } finally {
        resumed.close();
      }
    } finally {
      release();
      stream.close();
    }
    const from = await openStream(studio.port, `/api/runs/${liveId}/stream?from=2`);
    try {
      const first = await from.waitFor(() => true);
      expect(JSON.parse(first.data).seq).toBe(3);
    } finally {
      from.close();
    }
  });
});

describe('studio API: live stream of a run deleted, or replaced by a new run of the same id (the rule of runs tail)', () => {
  /** A flow of one node that counts to `n`, a step each. */
  function countTo(n: number): Flow {
    class Count extends BackpackNode {
      override post(backpack: BackpackHandle): string | undefined {
        const k = ((backpack.unpack('k') as number | undefined) ?? 0) + 1;
        backpack.pack('k', k);
        return k < n ? 'again' : undefined;
      }
    }
    const flow = new Flow({ namespace: 'count' });
    const node = flow.addNode(Count, { id: 'count' });
    node.on('again', node);
    return flow;
  }

  it('a run replaced while streamed: the stream says so and ends, sends nothing of the new run, and its reconnection is refused', async () => {
    const id = 'run_replaced_live';
    await runFlow(countTo(2), { dataDir, runId: id });
    const store = new FileRunStore(dataDir);
    const ref = { sessionKey: 'default', runId: id };
    const stream = await openStream(studio.port, `/api/runs/${id}/stream`);
    try {
      const last = await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'run.completed');
      const oldIds = stream.messages.map((m) => JSON.parse(m.data).id as string);
      expect(await store.deleteRun(ref)).toBe(true);
      // The new run is longer: a stream that read on from its count of lines would send the new run's later lines.
      await runFlow(countTo(6), { dataDir, runId: id });
      const failure = await stream.waitFor((m) => m.event === 'failure');
      // Seen deleted (a read before the new run's first batch) or replaced (after it): either is said, naming the log.
      const said = `run ${id} was deleted (or replaced by a new run of the same id) while it was followed: `;
      expect(JSON.parse(failure.data).gone).toBe(true);
      expect([
        `${said}line ${linesRead(last)} of ${store.describeLog(ref)} no longer holds event ${JSON.parse(last.data).id}`,
        `${said}${store.describeLog(ref)} is gone or holds fewer than ${linesRead(last)} events`,
      ]).toContain(JSON.parse(failure.data).error);
      // and sends nothing more, the new run's events included (given time to arrive)
      await new Promise((resolve) => setTimeout(resolve, 200));
      const events = stream.messages.filter((m) => m.event === 'event').map((m) => JSON.parse(m.data).id as string);
      expect(events).toEqual(oldIds);
      // The EventSource reconnects with the last id it saw: refused (409), which ends its retries.
      const again = await get(studio.port, `/api/runs/${id}/stream`, { accept: 'text/event-stream', 'last-event-id': last.id! });
      expect(again.status).toBe(409);
      expect(again.json.error).toContain(`run ${id} was deleted (or replaced by a new run of the same id) since this stream sent its event`);
      expect(again.json.error).toContain(store.describeLog(ref));
      // A plain stream of the new run, from its start, is served.
      const fresh = await openStream(studio.port, `/api/runs/${id}/stream`);
      try {
        const end = await fresh.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'run.completed');
        expect(JSON.parse(end.data).id).not.toBe(JSON.parse(last.data).id);
      } finally {
        fresh.close();
      }
    } finally {
      stream.close();
    }
  });

  it('a run deleted while streamed, not started again: the stream says so and ends, not left waiting in silence', async () => {
    const id = 'run_deleted_live';
    await runFlow(countTo(2), { dataDir, runId: id });
    const store = new FileRunStore(dataDir);
    const ref = { sessionKey: 'default', runId: id };
    const stream = await openStream(studio.port, `/api/runs/${id}/stream`);
    try {
      await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'run.completed');
      expect(await store.deleteRun(ref)).toBe(true);
      const failure = await stream.waitFor((m) => m.event === 'failure');
      expect(JSON.parse(failure.data).error).toMatch(new RegExp(`^run ${id} was deleted \\(or replaced by a new run of the same id\\) while it was followed: .*events\\.jsonl is gone or holds fewer than \\d+ events$`));
    } finally {
      stream.close();
    }
  });

  it('a stream the page opens after its events (from its event count) on a run replaced meanwhile by a shorter one says so at once', async () => {
    const id = 'run_replaced_before_stream';
    await runFlow(countTo(3), { dataDir, runId: id });
    const store = new FileRunStore(dataDir);
    const ref = { sessionKey: 'default', runId: id };
    const count = (await store.currentRunMeta(ref)).eventCount;
    expect(await store.deleteRun(ref)).toBe(true);
    await runFlow(countTo(1), { dataDir, runId: id });
    expect((await store.currentRunMeta(ref)).eventCount).toBeLessThan(count);
    const stream = await openStream(studio.port, `/api/runs/${id}/stream?from=${count}`);
    try {
      const failure = await stream.waitFor((m) => m.event === 'failure');
      expect(JSON.parse(failure.data)).toMatchObject({ gone: true, error: expect.stringMatching(new RegExp(`^run ${id} was deleted \\(or replaced by a new run of the same id\\) while it was followed: .*events\\.jsonl no longer holds event ${count}`)) });
    } finally {
      stream.close();
    }
  });
});

describe('studio safety', () => {
  it('serves at most maxStreams live streams at once: one more is a 503 until one closes', async () => {
    const small = await startStudio({ dataDir, port: 0, tail: { pollMs: 50, maxStreams: 2 } });
    const open = async () => openStream(small.port, `/api/runs/${runId}/stream`);
    try {
      // Several at once: the limit holds for streams still being set up too.
      const first = await Promise.all([open(), open(), open()]);
      expect(first.map((s) => s.status).sort()).toEqual([200, 200, 503]);
      const refused = await open();
      expect(refused.status).toBe(503);
      for (const stream of first.filter((s) => s.status === 200)) {
        await stream.waitFor((m) => JSON.parse(m.data).type === 'run.completed');
      }
      first.find((s) => s.status === 200)!.close();
      let again = await open();
      for (let i = 0; again.status === 503 && i < 50; i++) {
        again.close();
        await new Promise((resolve) => setTimeout(resolve, 20));
        again = await open();
      }
      expect(again.status).toBe(200);
      for (const stream of [...first, refused, again]) stream.close();
    } finally {
      await small.close();
    }
  });

  it('refuses a Host that is not this server (DNS rebinding) and cross-origin requests', async () => {
    const rebound = await api('/api/runs', { host: `evil.example:${studio.port}` });
    expect(rebound.status).toBe(421);
    expect(rebound.json.error).toContain('does not name this server');
    expect((await api('/api/runs', { host: `127.0.0.1:${studio.port + 1}` })).status).toBe(421);
    expect((await api('/api/runs', { host: `localhost:${studio.port}` })).status).toBe(200);
    const cross = await api('/api/runs', { origin: 'http://evil.example' });
    expect(cross.status).toBe(403);
    expect(cross.json).toMatchObject({ parameter: 'origin' });
    expect((await api('/api/runs', { origin: `http://localhost:${studio.port + 1}` })).status).toBe(403);
    expect((await api('/api/runs', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await api('/api/runs', { 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await api('/api/runs', { origin: `http://127.0.0.1:${studio.port}`, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
  });

  it('off loopback, every API request needs the random token (query or header, never a cookie); the page files none', async () => {
    const open = await startStudio({ dataDir, host: '0.0.0.0', port: 0 });
    try {
      expect(open.token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(open.url).toBe(`http://127.0.0.1:${open.port}/?token=${open.token}`);
      const missing = await get(open.port, '/api/runs');
      expect(missing.status).toBe(401);
      expect(missing.json).toMatchObject({ parameter: 'token' });
      expect(missing.json.error).toContain('needs its token');
      expect((await get(open.port, '/api/runs?token=wrong')).status).toBe(403);
      expect((await get(open.port, '/api/runs', { authorization: 'Bearer wrong' })).status).toBe(403);
      const viaQuery = await get(open.port, `/api/runs?token=${open.token}`);
      expect(viaQuery.status).toBe(200);
      expect(viaQuery.headers['set-cookie']).toBeUndefined();
      expect((await get(open.port, '/api/runs', { cookie: `bpf_studio_${open.port}=${open.token}` })).status).toBe(401);
      expect((await get(open.port, '/api/runs', { authorization: `Bearer ${open.token}` })).status).toBe(200);
      // The page (the same files for every studio, no data) loads without it; its script then sends the header.
      expect([200, 503]).toContain((await get(open.port, '/')).status);
      expect((await get(open.port, '/', { origin: 'http://evil.example' })).status).toBe(403);
      expect((await get(open.port, '/', { host: `evil.example:${open.port}` })).status).toBe(421);
      // The token does not make a cross-origin request acceptable.
      expect((await get(open.port, `/api/runs?token=${open.token}`, { origin: 'http://evil.example' })).status).toBe(403);
    } finally {
      await open.close();
    }
  });
});

describe('studio page files', () => {
  it('serves the built page and refuses every path that tries to leave its directory', async () => {
    const root = tempDir();
    const pageDir = join(root, 'page');
    mkdirSync(join(pageDir, 'assets'), { recursive: true });
    writeFileSync(join(pageDir, 'index.html'), '<!doctype html><title>studio</title>');
    writeFileSync(join(pageDir, 'assets', 'app-1234.js'), 'console.log(1)');
    writeFileSync(join(root, 'secret.txt'), 'do not serve');
    const page = await startStudio({ dataDir, port: 0, pageDir });
    try {
      const index = await get(page.port, '/');
      expect(index.status).toBe(200);
      expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(index.headers['content-security-policy']).toContain("script-src 'self'");
      expect(index.body).toContain('<title>studio</title>');
      const asset = await get(page.port, '/assets/app-1234.js');
      expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(asset.headers['cache-control']).toContain('immutable');
      expect((await get(page.port, '/assets/missing.js')).status).toBe(404);
      expect((await get(page.port, '/assets')).status).toBe(404);
      for (const path of ['/../secret.txt', '/assets/../../secret.txt', '/%2e%2e/secret.txt', '/assets/..%2F..%2Fsecret.txt', '/..%5csecret.txt', '/assets/%00.js', '//etc/passwd', '/%E0%A4%A']) {
        const reply = await get(page.port, path);
        expect(reply.status, path).toBe(400);
        expect(reply.body).not.toContain('do not serve');
      }
    } finally {
      await page.close();
    }
    const unbuilt = await startStudio({ dataDir, port: 0, pageDir: join(root, 'nothing-here') });
    try {
      const reply = await get(unbuilt.port, '/');
      expect(reply.status).toBe(503);
      expect(reply.json.error).toContain('npm run build');
      expect((await get(unbuilt.port, '/api/runs')).status).toBe(200);
    } finally {
      await unbuilt.close();
    }
  });
});

describe('studio API over a damaged log', () => {
  it('reports what the log does not serve in the events page and the live tail (never silently); odd keys blame fine', async () => {
    class Note extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('notes/a b', 'spaces and a slash');
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'odd' });
    flow.addNode(Note, { id: 'note' });
    const damagedId = 'run_damaged';
    await runFlow(flow, { dataDir, runId: damagedId });
    const blame = await api(`/api/runs/${damagedId}/blame/${encodeURIComponent('notes/a b')}`);
    expect(blame.status).toBe(200);
    expect(blame.json.writes.map((w: any) => [w.nodeId, w.summary])).toEqual([['note', '"spaces and a slash"']]);
    const lines = (await api(`/api/runs/${damagedId}`)).json.meta.eventCount as number;
    appendFileSync(runPaths(dataDir, 'default', damagedId).events, 'this is not an event\n');
    // A line after the log's last chain hash is not served; the page says so, naming the file and the line.
    const page = (await api(`/api/runs/${damagedId}/events?pageSize=500`)).json;
    expect(page.events).toHaveLength(lines);
    expect(page.warnings).toEqual([expect.stringMatching(new RegExp(`events\\.jsonl: lines? ${lines + 1}.* come after its last chain hash`))]);
    // The whole trace (no limit: as `runs show --json`) says so too; it answered 200 with no word of the damage.
    const whole = (await api(`/api/runs/${damagedId}/trace`)).json;
    expect(whole.warnings).toEqual(page.warnings);
    const pageOfTrace = (await api(`/api/runs/${damagedId}/trace?limit=10`)).json;
    expect(pageOfTrace.warnings).toEqual(page.warnings);
    // The live tail serves what the chain vouches for, and says once what it does not serve, naming the file and the
    // line (Studio audit: the stream skipped such lines without a word).
    const stream = await openStream(studio.port, `/api/runs/${damagedId}/stream?from=${lines - 1}`);
    try {
      await stream.waitFor((m) => m.event === 'warning');
      await new Promise((r) => setTimeout(r, 300));
      expect(stream.messages.map((m) => m.event)).toEqual(['event', 'warning']);
      expect(JSON.parse(stream.messages[1]!.data).message).toMatch(new RegExp(`events\\.jsonl: lines? ${lines + 1}.* come after its last chain hash`));
    } finally {
      stream.close();
    }
  });

  it('blame, state and diff name what a damaged log or keyframe keeps from them, in warnings the page shows', async () => {
    const makeFlow = (): Flow => countingFlow('dmg');
    const id = 'run_damaged_blame';
    await runFlow(makeFlow(), { dataDir, runId: id });
    const intact = (await api(`/api/runs/${id}/blame/k`)).json;
    expect(intact.writes.map((w: any) => w.summary)).toEqual(['1', '2', '3', '4']);
    expect(intact.warnings).toEqual([]);
    expect((await api(`/api/runs/${id}/state`)).json.warnings).toEqual([]);
    // Step 3's write is edited in place: still valid JSON, but its batch no longer matches its chain hash.
    const path = runPaths(dataDir, 'default', id).events;
    const text = readFileSync(path, 'utf8');
    const edited = text.replace('"valueSummary":"3"', '"valueSummary":"9"');
    expect(edited).not.toBe(text);
    writeFileSync(path, edited);
    const blame = (await api(`/api/runs/${id}/blame/k`)).json;
    expect(blame.writes.map((w: any) => w.summary)).not.toContain('9');
    expect(blame.warnings.join('\n')).toMatch(/events\.jsonl/);
    // A log with an unsealed tail (a torn last batch): the state and the diff are served from what the chain
    // vouches for, and say what was left out.
    const other = 'run_torn_tail';
    await runFlow(makeFlow(), { dataDir, runId: other });
    // Viewed whole first: the trace kept for the run must not hide the tear written after it.
    expect((await api(`/api/runs/${other}/trace?limit=50`)).json.warnings).toEqual([]);
    appendFileSync(runPaths(dataDir, 'default', other).events, '{"v":1,"torn":\n');
    const state = await api(`/api/runs/${other}/state`);
    expect(state.status).toBe(200);
    expect(state.json.items.find((i: any) => i.key === 'k')?.summary).toBe('4');
    expect(state.json.warnings.join('\n')).toMatch(/events\.jsonl: lines? [\d-]+ come after its last chain hash/);
    const diff = (await api(`/api/runs/${other}/diff?from=1&to=4`)).json;
    expect(diff.changes.map((c: any) => [c.key, c.change])).toEqual([['k', 'modified']]);
    expect(diff.warnings.join('\n')).toMatch(/events\.jsonl/);
    expect((await api(`/api/runs/${other}/blame/k`)).json.warnings.join('\n')).toMatch(/events\.jsonl/);
    // The run view opens on the trace: its pages say so too (the whole trace stays what `runs show --json` prints).
    expect((await api(`/api/runs/${id}/trace?limit=50`)).json.warnings.join('\n')).toMatch(/events\.jsonl/);
    const trace = (await api(`/api/runs/${other}/trace?limit=50`)).json;
    expect(trace.complete).toBe(true);
    expect(trace.warnings.join('\n')).toMatch(/events\.jsonl: lines? [\d-]+ come after its last chain hash/);
  });

  it('a middle batch changed: events pages keep the log\'s line numbers and reach the lines after it; a state read through it is a 409 naming the file (Studio audit)', async () => {
    const id = 'run_changed_middle';
    await runFlow(countingFlow('middle'), { dataDir, runId: id });
    const path = runPaths(dataDir, 'default', id).events;
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    // Step 2's write edited in place: its batch no longer matches its chain hash.
    const changed = lines.findIndex((line) => line.includes('"valueSummary":"2"'));
    lines[changed] = lines[changed]!.replace('"valueSummary":"2"', '"valueSummary":"7"');
    writeFileSync(path, `${lines.join('\n')}\n`);
    const pages = [];
    for (let page = 1; ; page++) {
      const reply = (await api(`/api/runs/${id}/events?pageSize=5&page=${page}`)).json;
      pages.push(reply);
      if (!reply.hasMore) break;
    }
    const served = pages.flatMap((p) => p.events);
    // Each event under its own line number, each once; the lines after the changed batch are reached.
    for (const { line, event } of served) expect(JSON.parse(lines[line]!).seq, `line ${line}`).toBe(event.seq);
    expect(new Set(served.map((e: any) => e.line)).size).toBe(served.length);
    expect(served.at(-1).line).toBe(lines.length - 1);
    expect(served.length).toBeLessThan(lines.length);
    expect(pages.flatMap((p) => p.warnings).join('\n')).toMatch(/events\.jsonl: lines \d+-\d+ do not match the chain hash/);
    // The step range says why it may end early (it read the damaged batch).
    const steps = (await api(`/api/runs/${id}/steps`)).json;
    expect(steps.warnings.join('\n')).toMatch(/events\.jsonl: lines \d+-\d+ do not match the chain hash/);
    const state = await api(`/api/runs/${id}/state?step=2`);
    expect(state.status).toBe(409);
    expect(state.json.error).toMatch(/events\.jsonl: lines \d+-\d+ do not match the chain hash/);
  });

  it('a trace viewed before the log was edited in place (same length, earlier than its end) is read again and says so', async () => {
    const id = 'run_edited_in_place';
    await runFlow(countingFlow('inplace'), { dataDir, runId: id });
    const before = (await api(`/api/runs/${id}/trace?limit=50`)).json;
    expect(before.warnings).toEqual([]);
    // The log keeps its length and its last line: only its inode's change time tells it was written.
    const path = runPaths(dataDir, 'default', id).events;
    const text = readFileSync(path, 'utf8');
    const edited = text.replace('"valueSummary":"2"', '"valueSummary":"7"');
    expect(edited).not.toBe(text);
    expect(edited.length).toBe(text.length);
    writeFileSync(path, edited);
    const after = (await api(`/api/runs/${id}/trace?limit=50`)).json;
    expect(after.warnings.join('\n')).toMatch(/events\.jsonl/);
  });
});

describe('studio API: the job of a resume or fork', () => {
  it('GET /api/runs/:id/job gives the studio job writing the run, before the run exists, with the checks of every read', async () => {
    // The child's outcome is in the fork's reply (it waits up to 60 s for it).
    const steering = await startStudio({ dataDir, port: 0, steering: { cli: [process.execPath, BIN], settleMs: 60_000 } });
    const job = (id: string, headers: Record<string, string> = {}, query = '') => get(steering.port, `/api/runs/${id}/job${query}`, headers);
    try {
      // No job: null, for a recorded run and for one that does not exist (yet).
      expect((await job(runId)).json).toEqual({ job: null });
      const none = await job('run_job_api');
      expect(none.status).toBe(200);
      expect(none.json).toEqual({ job: null });
      const forked = await post(steering.port, `/api/runs/${runId}/fork`, { step: 1, newRunId: 'run_job_api' }, { authorization: `Bearer ${steering.token}` });
      expect(forked.status).toBe(200);
      const reply = await job('run_job_api');
      expect(reply.status).toBe(200);
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.json.job).toEqual(forked.json.job);
      expect(reply.json.job).toMatchObject({ kind: 'fork', session: 'default', runId: 'run_job_api', from: { runId, step: 1 }, state: 'completed' });
      // The job is the fork's, not the run it started from; another session has none.
      expect((await job(runId)).json).toEqual({ job: null });
      expect((await job('run_job_api', {}, '?session=other')).json).toEqual({ job: null });
      // Ids are validated; the route only reads; another origin or Host is refused.
      const bad = await job('..%2Fx');
      expect(bad.status).toBe(400);
      expect(bad.json.parameter).toBe('runId');
      expect((await job('run_job_api', {}, '?session=a%2Fb')).json.parameter).toBe('session');
      const wrote = await get(steering.port, '/api/runs/run_job_api/job', { authorization: `Bearer ${steering.token}`, 'content-type': 'application/json' }, 'POST', '{}');
      expect(wrote.status).toBe(405);
      expect(wrote.headers.allow).toBe('GET, HEAD');
      expect((await job('run_job_api', { origin: 'http://evil.example' })).status).toBe(403);
      expect((await job('run_job_api', { host: `evil.example:${steering.port}` })).status).toBe(421);
    } finally {
      await steering.close();
    }
    // Off loopback, it needs the token as every read does.
    const open = await startStudio({ dataDir, host: '0.0.0.0', port: 0 });
    try {
      expect((await get(open.port, `/api/runs/${runId}/job`)).status).toBe(401);
      expect((await get(open.port, `/api/runs/${runId}/job`, { authorization: `Bearer ${open.token}` })).json).toEqual({ job: null });
    } finally {
      await open.close();
    }
  }, 60_000);
});
