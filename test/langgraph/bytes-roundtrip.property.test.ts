/**
 * BackpackflowSaver keeps bytes values (a `Uint8Array` channel value or pending write) exactly, whatever their length
 * and content: stored as encoded bytes (`{ "$bp": "typed" }`), never as bare base64 that the redaction pass would
 * scan as text (40 base64 characters, a 30-byte value, have the AWS secret key's shape and were replaced).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonPlusSerializer, emptyCheckpoint, uuid6, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/events/index.js';
import { BackpackflowSaver, type CheckpointRecordStore } from '../../src/langgraph/index.js';
import { redact } from '../../src/redact/index.js';
import { trials } from '../support/soak.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-lg-roundtrip-'));
  dirs.push(dir);
  return dir;
}

/** Lengths whose base64 is 40 characters (28 to 30; 30 without padding) or 44 (31 to 33), and the edges. */
const EDGE_LENGTHS = [0, 1, 2, 3, 28, 29, 30, 31, 32, 33, 40, 60, 90, 150, 200];

/**
 * Byte values of lengths 0 to 200: arbitrary bytes, base64-alphabet text, and bytes as long as the edge lengths
 * (mostly holding text: no NUL byte, so that the redactor scans them).
 */
const bytesValue = fc.oneof(
  fc.uint8Array({ maxLength: 200 }),
  fc.constantFrom(...EDGE_LENGTHS).chain((n) => fc.uint8Array({ min: 1, minLength: n, maxLength: n })),
  fc.constantFrom(...EDGE_LENGTHS).chain((n) =>
    fc.string({ unit: fc.constantFrom(...'ABCXYZabcxyz0189+/'), minLength: n, maxLength: n }).map((s) => new Uint8Array(Buffer.from(s, 'latin1'))),
  ),
);

/** What the saver must serve for `bytes`: the bytes as the redactor leaves a Uint8Array (itself unless its text holds a secret). */
function expected(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(redact(bytes).value);
}

/** Puts one checkpoint with channel `c<i>` holding `values[i]`, and a pending write of each value to its channel. */
async function putAll(saver: BackpackflowSaver, values: Uint8Array[]) {
  const channels = Object.fromEntries(values.map((v, i) => [`c${i}`, v]));
  const versions = Object.fromEntries(values.map((_, i) => [`c${i}`, 1]));
  const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: channels, channel_versions: versions };
  const config = await saver.put({ configurable: { thread_id: 't', checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, versions);
  await saver.putWrites(config, values.map((v, i) => [`c${i}`, v]), 'task-1', '~__pregel_pull, agent');
  return config;
}

/** The tuples `saver` serves for the thread: through getTuple and through list. */
async function served(saver: BackpackflowSaver, config: Awaited<ReturnType<typeof putAll>>): Promise<CheckpointTuple[]> {
  const tuples = [(await saver.getTuple(config))!];
  for await (const t of saver.list({ configurable: { thread_id: 't' } })) tuples.push(t);
  return tuples;
}

function expectServed(tuples: CheckpointTuple[], values: Uint8Array[]): void {
  for (const tuple of tuples) {
    values.forEach((value, i) => {
      const channel = tuple.checkpoint.channel_values[`c${i}`];
      expect(channel).toBeInstanceOf(Uint8Array);
      expect(new Uint8Array(channel as Uint8Array)).toEqual(expected(value));
      const write = tuple.pendingWrites!.find(([, ch]) => ch === `c${i}`)!;
      expect(new Uint8Array(write[2] as Uint8Array)).toEqual(expected(value));
    });
  }
}

/** A record store in memory, whose stored events a test can rewrite. */
class MemoryRecordStore implements CheckpointRecordStore {
  readonly sessionKey = 'default';
  constructor(readonly runs = new Map<string, StreamEvent[]>()) {}
  async listRunIds() {
    return [...this.runs.keys()];
  }
  async read(runId: string) {
    return structuredClone(this.runs.get(runId) ?? []);
  }
  async openForWrite(runId: string) {
    return { lastSeq: this.runs.get(runId)?.at(-1)?.seq };
  }
  async append(runId: string, events: StreamEvent[]) {
    this.runs.set(runId, [...(this.runs.get(runId) ?? []), ...structuredClone(events)]);
  }
  async delete(runId: string) {
    this.runs.delete(runId);
  }
  async close() {}
}

/** `value` with every stored bytes value `{ t, bytes: { "$bp": "typed", v } }` in the form of earlier versions, `{ t, b64 }`. */
function toLegacyForm(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toLegacyForm);
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  const bytes = record['bytes'] as { $bp?: unknown; v?: unknown } | undefined;
  if (typeof record['t'] === 'string' && bytes?.$bp === 'typed') return { t: record['t'], b64: bytes.v };
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, toLegacyForm(v)]));
}

describe('BackpackflowSaver keeps bytes values exactly', () => {
  it('round-trips bytes of any length and content through put, putWrites, getTuple and list, before and after a restart', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(bytesValue, { minLength: 1, maxLength: 8 }), async (values) => {
        const dataDir = tempDir();
        const saver = new BackpackflowSaver({ dataDir });
        const config = await putAll(saver, values);
        const live = await served(saver, config);
        await saver.close();
        const reopened = new BackpackflowSaver({ dataDir });
        const restarted = await served(reopened, config);
        await reopened.close();
        expectServed([...live, ...restarted], values);
      }),
      { numRuns: trials(20, 250), examples: [[[new Uint8Array(30).map((_, i) => i * 7 + 1)]], [[new Uint8Array(30).fill(0x41)]]] },
    );
  }, 60_000); // shrinking a failure writes many threads

  it('keeps the bytes of a custom serializer type as bytes values, exactly', async () => {
    // A serializer whose bytes values are of its own type: stored as bytes, redacted as bytes.
    const base = new JsonPlusSerializer();
    const serde = {
      dumpsTyped: async (value: unknown): Promise<[string, Uint8Array]> => (value instanceof Uint8Array ? ['raw', value] : base.dumpsTyped(value)),
      loadsTyped: async (type: string, data: Uint8Array | string) => (type === 'raw' ? data : base.loadsTyped(type, data)),
    };
    await fc.assert(
      fc.asyncProperty(fc.array(bytesValue, { minLength: 1, maxLength: 8 }), async (values) => {
        const dataDir = tempDir();
        const saver = new BackpackflowSaver({ dataDir, serde });
        const config = await putAll(saver, values);
        const live = await served(saver, config);
        await saver.close();
        const reopened = new BackpackflowSaver({ dataDir, serde });
        expectServed([...live, ...(await served(reopened, config))], values);
        await reopened.close();
      }),
      { numRuns: 15 },
    );
  });

  it('stores binary bytes (a NUL byte among them) as they are', async () => {
    const value = new Uint8Array(30).map((_, i) => (i * 37) % 256);
    expect(value.includes(0)).toBe(true);
    const saver = new BackpackflowSaver({ dataDir: tempDir() });
    const config = await putAll(saver, [value]);
    const [tuple] = await served(saver, config);
    await saver.close();
    expect(new Uint8Array(tuple!.checkpoint.channel_values['c0'] as Uint8Array)).toEqual(value);
  });

  it('reads bytes stored by earlier versions as bare base64 ({ t, b64 })', async () => {
    const values = [new Uint8Array([1, 2, 3]), new Uint8Array(30).map((_, i) => i * 7 + 1), new Uint8Array(0)];
    const store = new MemoryRecordStore();
    const writer = new BackpackflowSaver({ store });
    const config = await putAll(writer, values);
    await writer.close();
    const [runId, events] = [...store.runs][0]!;
    const legacy = toLegacyForm(events) as StreamEvent[];
    expect(JSON.stringify(legacy)).toContain('"b64"');
    expect(JSON.stringify(legacy)).not.toContain('"bytes":');
    const reader = new BackpackflowSaver({ store: new MemoryRecordStore(new Map([[runId, legacy]])) });
    expectServed(await served(reader, config), values);
    await reader.close();
  });

  it('refuses, naming the channel, bytes that an earlier version stored redacted', async () => {
    const store = new MemoryRecordStore();
    const writer = new BackpackflowSaver({ store });
    const config = await putAll(writer, [new Uint8Array([1, 2, 3])]);
    await writer.close();
    const [runId, events] = [...store.runs][0]!;
    const damaged = JSON.parse(JSON.stringify(toLegacyForm(events)).replaceAll('"b64":"AQID"', '"b64":"[REDACTED]"')) as StreamEvent[];
    const reader = new BackpackflowSaver({ store: new MemoryRecordStore(new Map([[runId, damaged]])) });
    await expect(reader.getTuple(config)).rejects.toThrow(/channel 'c0': the stored bytes of type 'bytes' are not base64 \("\[REDACTED\]"\)/);
    await reader.close();
  });
});
