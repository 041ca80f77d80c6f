/**
 * BackpackflowSaver and names shaped like secrets. A thread id the redactor would change (a JWT or a `ghp_` token
 * used as a session id) is stored under a hashed run id and identified by its digest, so that after a restart the
 * thread serves exactly what LangGraph's MemorySaver serves; the secret never reaches a file or a path. Channel names
 * and channel versions are structure: a channel named `apiKey` keeps its version and its (non-string) value. Names the
 * saver gives back from storage (checkpoint ids, namespaces, channel names, task ids) are never redacted, so one
 * holding a secret is refused with an error that names the field, not the secret.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { MemorySaver, emptyCheckpoint, uuid6, type BaseCheckpointSaver, type Checkpoint, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { StreamEventType, newEventId, type StreamEvent } from '../../src/events/index.js';
import { BackpackflowSaver, RunStoreRecordStore, threadRunId } from '../../src/langgraph/index.js';
import { redactorFor } from '../../src/store/index.js';
import { trials } from '../support/soak.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-lg-secret-names-'));
  dirs.push(dir);
  return dir;
}

const redactor = redactorFor();
const ALNUM = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'];
const UPPER = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'];
const B64URL = [...ALNUM, '-', '_'];
const chars = (alphabet: string[], n: number) => fc.string({ unit: fc.constantFrom(...alphabet), minLength: n, maxLength: n });

/** Text the built-in catalogue redacts: GitHub and AWS key ids, JWTs, OpenAI keys (each checked to be one). */
const secret = fc
  .oneof(
    chars(ALNUM, 36).map((s) => `ghp_${s}`),
    chars(UPPER, 16).map((s) => `AKIA${s}`),
    fc.tuple(chars(B64URL, 12), chars(B64URL, 16), chars(B64URL, 43)).map(([a, b, c]) => `eyJ${a}.eyJ${b}.${c}`),
    chars(ALNUM, 40).map((s) => `sk-proj-${s}`),
  )
  .filter((s) => redactor.redactText(s) === '[REDACTED]');

/**
 * A thread id and the secret it holds: ordinary ids (store ids, and ids hashed for their characters) hold none, the
 * others a secret with text around it.
 */
/** Thread ids MemorySaver refuses ("reserved (would mutate Object.prototype)"). */
const RESERVED = ['__proto__', 'constructor', 'prototype'];

const threadId: fc.Arbitrary<{ id: string; secret?: string }> = fc.oneof(
  fc.constantFrom('t', 'tides-1', 'a/b', '../up', 'lgt-x', 'ümlaut thread').map((id) => ({ id })),
  // Not the ids MemorySaver refuses as reserved (it would pollute Object.prototype): it cannot be the reference for
  // them (BackpackflowSaver keeps them, see the test of its own below).
  fc.string({ minLength: 1, maxLength: 20 }).filter((id) => redactor.redactText(id) === id && !RESERVED.includes(id)).map((id) => ({ id })),
  fc.tuple(fc.constantFrom('', 'user-', 'session.', 'a/'), secret, fc.constantFrom('', '-2', '.x')).map(([p, s, q]) => ({ id: p + s + q, secret: s })),
);

/** Channel names, secret-named ones among them, and versions as numbers or as PostgresSaver's strings. */
const channel = fc.constantFrom('topic', 'messages', 'apiKey', 'token', 'password', 'OPENAI_API_KEY', 'client_secret');
const version = fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 1000 }).map((n) => `${String(n).padStart(32, '0')}.0.${n % 7}`));
/**
 * Values the redaction pass keeps even under a secret-named channel: it blanks strings, and a number right under the
 * name (the secret itself), but keeps booleans, null and the numbers of a structure.
 */
const value = fc.oneof(fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }), fc.record({ n: fc.integer() }));
const channels = fc.uniqueArray(fc.tuple(channel, version, value), { minLength: 1, maxLength: 5, selector: ([c]) => c });
/** A later version than any of {@link version} (a channel's version changes with its value). */
const later = (v: number | string): number | string => (typeof v === 'number' ? v + 1000 : `${v}1`);
const node = fc.constantFrom('agent', 'tools', '__input__');
const seen = fc.dictionary(node, fc.dictionary(channel, version, { maxKeys: 3 }), { maxKeys: 3 });

/** Every file path (relative to `dir`) and file text under `dir`. */
function everything(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      out.push(relative(dir, path));
      if (statSync(path).isDirectory()) walk(path);
      else out.push(readFileSync(path, 'latin1'));
    }
  };
  walk(dir);
  return out;
}

function expectNothingHolds(dataDir: string, secrets: string[]): void {
  for (const text of everything(dataDir)) for (const s of secrets) expect(text.includes(s), `a file or path under ${dataDir} holds ${s}`).toBe(false);
}

type Step = { channels: Array<[string, number | string, unknown]>; seen: Record<string, Record<string, number | string>> };

function checkpointOf(step: Step, id: string): { checkpoint: Checkpoint; versions: Record<string, number | string> } {
  const versions = Object.fromEntries(step.channels.map(([c, v]) => [c, v]));
  const values = Object.fromEntries(step.channels.map(([c, , v]) => [c, v]));
  return { checkpoint: { ...emptyCheckpoint(), id, ts: '2025-01-01T00:00:00.000Z', channel_values: values, channel_versions: versions, versions_seen: step.seen }, versions };
}

/** The same calls to any saver: a checkpoint, pending writes of a task, and a child checkpoint. */
async function write(saver: BaseCheckpointSaver, thread: string, steps: [Step, Step], ids: [string, string]): Promise<void> {
  const first = checkpointOf(steps[0], ids[0]);
  const config = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: '' } }, first.checkpoint, { source: 'input', step: -1, parents: {} }, first.versions);
  await saver.putWrites(config, steps[1].channels.map(([c, , v]) => [c, v]), 'task-1', '~__pregel_pull, agent');
  const second = checkpointOf(steps[1], ids[1]);
  await saver.put(config, second.checkpoint, { source: 'loop', step: 0, parents: {} }, second.versions);
}

async function all(saver: BaseCheckpointSaver, config: RunnableConfig): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = [];
  for await (const tuple of saver.list(config)) out.push(tuple);
  return out;
}

/** `tuples` with the thread id shown as `shown` (what a listing of every thread gives after a restart). */
function shownAs(tuples: CheckpointTuple[], shown: string): CheckpointTuple[] {
  const rename = (config: RunnableConfig | undefined) => config && { ...config, configurable: { ...config.configurable, thread_id: shown } };
  return tuples.map((t) => ({ ...t, config: rename(t.config)!, ...(t.parentConfig ? { parentConfig: rename(t.parentConfig) } : {}) }));
}

describe('BackpackflowSaver with thread ids named like Object.prototype members', () => {
  it('keeps each as a thread of its own across a restart, and touches no prototype', async () => {
    const dataDir = tempDir();
    const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();
    const steps: [Step, Step] = [
      { channels: [['topic', 1, 'a']], seen: {} },
      { channels: [['topic', 2, 'b']], seen: { agent: { topic: 1 } } },
    ];
    const saver = new BackpackflowSaver({ dataDir });
    for (const thread of RESERVED) await write(saver, thread, steps, [uuid6(-1), uuid6(-1)]);
    await saver.close();
    const again = new BackpackflowSaver({ dataDir });
    for (const thread of RESERVED) {
      const tuple = await again.getTuple({ configurable: { thread_id: thread } });
      expect(tuple?.config.configurable?.['thread_id']).toBe(thread);
      expect(tuple?.checkpoint.channel_values).toEqual({ topic: 'b' });
      expect(await all(again, { configurable: { thread_id: thread } })).toHaveLength(2);
    }
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeBefore);
    expect(({} as Record<string, unknown>)['topic']).toBeUndefined();
    await again.deleteThread('constructor');
    expect(await again.getTuple({ configurable: { thread_id: 'constructor' } })).toBeUndefined();
    expect((await again.getTuple({ configurable: { thread_id: 'prototype' } }))?.checkpoint.channel_values).toEqual({ topic: 'b' });
    await again.close();
  });
});

describe('BackpackflowSaver with names shaped like secrets', () => {
  it('serves what MemorySaver serves after a restart, for any thread id and secret-named channels, and no file holds the secret', async () => {
    await fc.assert(
      fc.asyncProperty(threadId, fc.tuple(fc.record({ channels, seen }), fc.record({ channels, seen })), async ({ id: thread, secret: held }, [step0, step1]) => {
        const steps: [Step, Step] = [step0, { ...step1, channels: step1.channels.map(([c, v, x]) => [c, later(v), x]) }];
        const dataDir = tempDir();
        const ids: [string, string] = [uuid6(-1), uuid6(-1)];
        const memory = new MemorySaver();
        const saver = new BackpackflowSaver({ dataDir });
        await write(memory, thread, steps, ids);
        await write(saver, thread, steps, ids);
        await saver.close();
        const secrets = held === undefined ? [] : [held];
        expectNothingHolds(dataDir, secrets);
        if (held !== undefined) expect(threadRunId(thread)).toMatch(/^lgt-[0-9a-f]{40}$/);

        const again = new BackpackflowSaver({ dataDir });
        const config = { configurable: { thread_id: thread } };
        // A listing of every thread cannot know a thread id it never stored: it shows it redacted, never drops it.
        expect(await all(again, { configurable: {} })).toEqual(shownAs(await all(memory, { configurable: {} }), redactor.redactText(thread)));
        expect(await again.getTuple(config)).toEqual(await memory.getTuple(config));
        const byId = { configurable: { thread_id: thread, checkpoint_ns: '', checkpoint_id: ids[0] } };
        expect(await again.getTuple(byId)).toEqual(await memory.getTuple(byId));
        expect(await all(again, config)).toEqual(await all(memory, config));
        // Once used by its id, the thread is listed under it.
        expect(await all(again, { configurable: {} })).toEqual(await all(memory, { configurable: {} }));
        // Writing again after the restart continues the same thread.
        const more = checkpointOf(steps[0], uuid6(-1));
        const parent = { configurable: { thread_id: thread, checkpoint_ns: '', checkpoint_id: ids[1] } };
        for (const s of [memory, again]) await s.put(parent, structuredClone(more.checkpoint), { source: 'update', step: 1, parents: {} }, more.versions);
        expect(await all(again, config)).toEqual(await all(memory, config));
        await again.close();
        expectNothingHolds(dataDir, secrets);

        const last = new BackpackflowSaver({ dataDir });
        await last.deleteThread(thread);
        await memory.deleteThread(thread);
        expect(await last.getTuple(config)).toBeUndefined();
        expect(await all(last, { configurable: {} })).toEqual([]);
        expect(readdirSync(join(dataDir, 'sessions', 'default', 'runs'))).toEqual([]);
        await last.close();
      }),
      // Each trial writes, reopens and deletes a thread on disk: a few in `npm test`, more in `npm run test:soak`.
      { numRuns: trials(12, 60) },
    );
  }, 300_000); // 60 runs under SOAK=1 write and reopen two stores each

  it('refuses a checkpoint id, namespace, channel name, version or task id holding a secret, naming the field and not the secret', async () => {
    await fc.assert(
      fc.asyncProperty(secret, fc.constantFrom('id', 'parent', 'ns', 'channel', 'version', 'seen', 'writes.checkpoint_id', 'writes.ns', 'writes.task_id', 'writes.task_path', 'writes.channel'), async (s, where) => {
        const dataDir = tempDir();
        const saver = new BackpackflowSaver({ dataDir });
        const good = checkpointOf({ channels: [['topic', 1, 1]], seen: {} }, uuid6(-1));
        const config = await saver.put({ configurable: { thread_id: 't', checkpoint_ns: '' } }, good.checkpoint, { source: 'input', step: -1, parents: {} }, good.versions);
        const bad = checkpointOf({ channels: [['topic', 2, 2]], seen: {} }, where === 'id' ? s : uuid6(-1));
        let attempt: Promise<unknown>;
        if (where.startsWith('writes.')) {
          const field = where.slice('writes.'.length);
          const c = { configurable: { ...config.configurable, ...(field === 'checkpoint_id' ? { checkpoint_id: s } : {}), ...(field === 'ns' ? { checkpoint_ns: `sub:${s}` } : {}) } };
          attempt = saver.putWrites(c, [[field === 'channel' ? s : 'topic', 3]], field === 'task_id' ? s : 'task-1', field === 'task_path' ? `~__pregel_pull, ${s}` : '~__pregel_pull, agent');
        } else {
          if (where === 'channel') bad.versions = { [s]: 2 };
          if (where === 'channel') bad.checkpoint.channel_versions = { [s]: 2 };
          if (where === 'version') bad.versions = bad.checkpoint.channel_versions = { topic: `v-${s}` };
          if (where === 'seen') bad.checkpoint.versions_seen = { agent: { [s]: 1 } };
          const c = { configurable: { thread_id: 't', checkpoint_ns: where === 'ns' ? `${s}:task1` : '', checkpoint_id: where === 'parent' ? s : config.configurable?.checkpoint_id } };
          attempt = saver.put(c, bad.checkpoint, { source: 'loop', step: 0, parents: {} }, bad.versions);
        }
        const error = await attempt.then(() => undefined, (e: unknown) => e as Error);
        expect(error?.message).toMatch(/holds text the redactor takes for a secret/);
        expect(error?.message).not.toContain(s);
        await saver.close();
        expectNothingHolds(dataDir, [s]);
        // The thread is as it was.
        const again = new BackpackflowSaver({ dataDir });
        expect((await all(again, { configurable: { thread_id: 't' } })).map((t) => t.checkpoint.channel_values)).toEqual([{ topic: 1 }]);
        await again.close();
      }),
      { numRuns: 25 },
    );
  });

  it('reads a thread written by an earlier version (channel versions and versions seen as records)', async () => {
    const dataDir = tempDir();
    const store = new RunStoreRecordStore({ dataDir });
    const id = uuid6(-1);
    const event = (seq: number, type: StreamEvent['type'], payload: Record<string, unknown>): StreamEvent => ({ v: 1, id: newEventId(), seq, timestamp: 1, runId: 'old', sessionKey: 'default', type, payload });
    await store.append('old', [
      event(1, StreamEventType.RUN_START, { flowNamespace: 'langgraph', entryNodeId: null, langgraph: { threadId: 'old' } }),
      event(2, StreamEventType.CUSTOM, {
        kind: 'langgraph.checkpoint',
        ns: '',
        id,
        checkpoint: { v: 4, ts: '2025-01-01T00:00:00.000Z', channel_versions: { topic: 3 }, versions_seen: { agent: { topic: 2 } } },
        values: [{ channel: 'topic', version: 3, value: { t: 'json', v: 'tides' } }],
        metadata: { t: 'json', v: { source: 'input', step: -1, parents: {} } },
      }),
    ]);
    await store.close();
    const saver = new BackpackflowSaver({ dataDir });
    const tuple = await saver.getTuple({ configurable: { thread_id: 'old' } });
    expect(tuple?.checkpoint).toEqual({ v: 4, id, ts: '2025-01-01T00:00:00.000Z', channel_values: { topic: 'tides' }, channel_versions: { topic: 3 }, versions_seen: { agent: { topic: 2 } } });
    await saver.close();
  });

  it('keeps the version of a secret-named channel exact while its value (a string, a number) stays redacted', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    const v = '00000000000000000000000000000001.0.1';
    const { checkpoint, versions } = checkpointOf({ channels: [['apiKey', v, 'not-a-pattern-value'], ['token', v, { version: 'v2', n: 1 }], ['password', v, 4821]], seen: { agent: { token: v } } }, uuid6(-1));
    const config = await saver.put({ configurable: { thread_id: 't', checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, versions);
    await saver.close();
    const again = new BackpackflowSaver({ dataDir });
    const tuple = await again.getTuple(config);
    expect(tuple?.checkpoint.channel_values).toEqual({ apiKey: '[REDACTED]', token: { version: '[REDACTED]', n: 1 }, password: '[REDACTED]' });
    expect(tuple?.checkpoint.channel_versions).toEqual({ apiKey: v, token: v, password: v });
    expect(tuple?.checkpoint.versions_seen).toEqual({ agent: { token: v } });
    await again.close();
    expectNothingHolds(dataDir, ['not-a-pattern-value']);
  });
});
