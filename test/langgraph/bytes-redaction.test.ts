/**
 * BackpackflowSaver redacts bytes values (a `Uint8Array` channel or pending write, stored as encoded bytes,
 * `{ t: 'bytes', bytes: { "$bp": "typed", v } }`)
 * as it redacts JSON ones: bytes holding text never reach the disk, nor come back, with a catalogue secret in them;
 * binary data (a NUL byte in the first 8 KB, as the redactor judges it) is stored and served back as it is.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyCheckpoint, uuid6, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-lg-bytes-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Secrets of the catalogue (src/redact/patterns.ts), each alone enough to be redacted. */
const SECRETS = [
  'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi',
  'AKIAIOSFODNN7EXAMPLF',
  'sk-ant-api03-' + 'Zq7Xw2Lp9Rt4Yv6Bn1Mc8Kd3Fg5Hj0Ss'.repeat(3) + 'AA',
  'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx',
];

/** Text around a secret: printable ASCII, kept apart from it by spaces. */
const text = fc.string({ unit: fc.constantFrom(...'abc XYZ:=/.-_019'), maxLength: 30 });

/** Every file under `dir`, with the bytes of each encoded byte array (`{ "$bp": "typed", v }`) decoded beside the raw text. */
function stored(dir: string): string {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const raw = readFileSync(join(entry.parentPath, entry.name), 'latin1');
    out.push(raw);
    for (const [, b64] of raw.matchAll(/"\$bp":"typed","t":"Uint8Array","v":"([A-Za-z0-9+/=]*)"/g)) out.push(Buffer.from(b64!, 'base64').toString('latin1'));
  }
  return out.join('\n');
}

/** The channel values and pending writes of a tuple, bytes as latin1 text. */
function served(tuple: CheckpointTuple | undefined): string {
  const show = (v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : JSON.stringify(v));
  return [...Object.values(tuple?.checkpoint.channel_values ?? {}), ...(tuple?.pendingWrites ?? []).map((w) => w[2])].map(show).join('\n');
}

/** Puts a checkpoint whose `blob` channel holds `channelBytes` and a pending write of `writeBytes` to it. */
async function putBytes(saver: BackpackflowSaver, channel: string, channelBytes: Uint8Array, writeBytes: Uint8Array) {
  const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { [channel]: channelBytes }, channel_versions: { [channel]: 1 } };
  const config = await saver.put({ configurable: { thread_id: 't', checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, { [channel]: 1 });
  await saver.putWrites(config, [[channel, writeBytes]], 'task-1', '~__pregel_pull, agent');
  return config;
}

async function readBack(dataDir: string, config: Awaited<ReturnType<typeof putBytes>>): Promise<CheckpointTuple[]> {
  const saver = new BackpackflowSaver({ dataDir });
  const tuples = [(await saver.getTuple(config))!];
  for await (const t of saver.list({ configurable: { thread_id: 't' } })) tuples.push(t);
  await saver.close();
  return tuples;
}

describe('BackpackflowSaver and bytes values', () => {
  it('stores and serves bytes holding text with their catalogue secrets redacted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SECRETS), text, text, async (secret, before, after) => {
        const dataDir = tempDir();
        const saver = new BackpackflowSaver({ dataDir });
        const config = await putBytes(saver, 'blob', Buffer.from(`data ${before} ${secret} ${after}`, 'latin1'), new TextEncoder().encode(`w ${secret}`));
        const live = await saver.getTuple(config);
        await saver.close();
        expect(stored(dataDir)).not.toContain(secret);
        const tuples = [live!, ...(await readBack(dataDir, config))];
        for (const tuple of tuples) {
          expect(served(tuple)).not.toContain(secret);
          expect(tuple.checkpoint.channel_values['blob']).toBeInstanceOf(Uint8Array);
          expect(Buffer.from(tuple.checkpoint.channel_values['blob'] as Uint8Array).toString('latin1')).toBe(`data ${before} [REDACTED] ${after}`);
          expect(Buffer.from(tuple.pendingWrites![0]![2] as Uint8Array).toString('latin1')).toBe('w [REDACTED]');
        }
      }),
      { numRuns: 8 },
    );
  });

  it('blanks text bytes under a secret-named channel, as a JSON value of that channel', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    const config = await putBytes(saver, 'password', new TextEncoder().encode('hunter2-not-a-pattern'), new TextEncoder().encode('correct horse'));
    const live = await saver.getTuple(config);
    await saver.close();
    for (const tuple of [live!, ...(await readBack(dataDir, config))]) {
      expect(Buffer.from(tuple.checkpoint.channel_values['password'] as Uint8Array).toString()).toBe('[REDACTED]');
      expect(Buffer.from(tuple.pendingWrites![0]![2] as Uint8Array).toString()).toBe('[REDACTED]');
    }
    expect(stored(dataDir)).not.toMatch(/hunter2|correct horse/);
  });

  it('keeps binary bytes (a NUL byte in the first 8 KB) as they are', async () => {
    const binary = fc
      .tuple(fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ maxLength: 64 }), fc.constantFrom(...SECRETS))
      .map(([head, tail, secret]) => new Uint8Array([...head, 0, ...Buffer.from(` ${secret} `), ...tail]));
    await fc.assert(
      fc.asyncProperty(binary, binary, async (channelBytes, writeBytes) => {
        const dataDir = tempDir();
        const saver = new BackpackflowSaver({ dataDir });
        const config = await putBytes(saver, 'blob', channelBytes, writeBytes);
        const live = await saver.getTuple(config);
        await saver.close();
        for (const tuple of [live!, ...(await readBack(dataDir, config))]) {
          expect(new Uint8Array(tuple.checkpoint.channel_values['blob'] as Uint8Array)).toEqual(channelBytes);
          expect(new Uint8Array(tuple.pendingWrites![0]![2] as Uint8Array)).toEqual(writeBytes);
        }
      }),
      { numRuns: 8 },
    );
  });
});
