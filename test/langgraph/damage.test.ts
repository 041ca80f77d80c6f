/**
 * BackpackflowSaver over damaged threads (files; the Postgres twin is test/pg/langgraph-damage.test.ts): a thread
 * whose log lost its last batches is never served at an older checkpoint as its latest (audit s21b M1), and one
 * damaged run does not break a list across the session's threads (audit s21b L2).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { runPaths } from '../../src/store/paths.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-lg-damage-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

let version = 0;
async function putOne(saver: BackpackflowSaver, threadId: string, values: Record<string, unknown>) {
  version++;
  const versions = Object.fromEntries(Object.keys(values).map((k) => [k, version]));
  const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
  return saver.put({ configurable: { thread_id: threadId, checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, versions);
}

/** The process warnings `work` caused, as `type: message`. */
async function warningsOf<T>(work: () => Promise<T>): Promise<{ result: T | Error; warnings: string[] }> {
  const warnings: string[] = [];
  const listener = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
  process.on('warning', listener);
  let result: T | Error;
  try {
    result = await work();
  } catch (error) {
    result = error as Error;
  }
  // process.emitWarning delivers on the next tick.
  await new Promise((resolve) => setTimeout(resolve, 20));
  process.off('warning', listener);
  return { result, warnings };
}

/** Cuts the thread's log at the end of the batch before the one holding `marker`, and drops its index. */
function cutBefore(dataDir: string, runId: string, marker: string): void {
  const paths = runPaths(dataDir, 'default', runId);
  const text = readFileSync(paths.events, 'utf8');
  truncateSync(paths.events, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n', text.indexOf(marker)) + 1)));
  if (existsSync(paths.index)) unlinkSync(paths.index);
}

describe('BackpackflowSaver over a thread whose log lost its last batches (files)', () => {
  it('getTuple is an error naming the log and the projection, never the older checkpoint served as the latest', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    await putOne(saver, 't', { topic: 'tides' });
    await putOne(saver, 't', { topic: 'waves' });
    await putOne(saver, 't', { topic: 'storm' });
    await saver.close();
    cutBefore(dataDir, 't', '"storm"');
    const paths = runPaths(dataDir, 'default', 't');
    const again = new BackpackflowSaver({ dataDir });
    const { result } = await warningsOf(() => again.getTuple({ configurable: { thread_id: 't' } }));
    expect(result).toBeInstanceOf(Error);
    const message = (result as Error).message;
    expect(message).toContain(paths.runMeta);
    expect(message).toContain(paths.events);
    expect(message).toMatch(/records events up to seq \d+, but .* serves them up to seq \d+: the log was cut or damaged/);
    expect(message).toContain("backpackflow runs verify t");
    // Nor is it continued from there: a put is refused too.
    await expect(putOne(again, 't', { topic: 'calm' })).rejects.toThrow();
    await again.close().catch(() => undefined);
  });

  it('an intact thread reads as before, with no warning', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    await putOne(saver, 'ok', { topic: 'tides' });
    await putOne(saver, 'ok', { topic: 'waves' });
    await saver.close();
    const again = new BackpackflowSaver({ dataDir });
    const { result, warnings } = await warningsOf(() => again.getTuple({ configurable: { thread_id: 'ok' } }));
    expect((result as { checkpoint: { channel_values: Record<string, unknown> } }).checkpoint.channel_values).toEqual({ topic: 'waves' });
    expect(warnings).toEqual([]);
    await putOne(again, 'ok', { topic: 'storm' });
    await again.close();
  });
});

describe('BackpackflowSaver.list across threads, one of them damaged (files)', () => {
  it('lists the healthy threads and names each damaged run it skipped; a list of the damaged thread alone still fails', async () => {
    const dataDir = tempDir();
    const saver = new BackpackflowSaver({ dataDir });
    await putOne(saver, 'healthy', { topic: 'tides' });
    await putOne(saver, 'edited', { topic: 'waves' });
    await putOne(saver, 'edited', { topic: 'storm' });
    await putOne(saver, 'cut', { topic: 'rain' });
    await putOne(saver, 'cut', { topic: 'hail' });
    await saver.close();
    const edited = runPaths(dataDir, 'default', 'edited').events;
    writeFileSync(edited, readFileSync(edited, 'utf8').replace('"waves"', '"wavez"'));
    cutBefore(dataDir, 'cut', '"hail"');

    const again = new BackpackflowSaver({ dataDir });
    const { result, warnings } = await warningsOf(async () => {
      const listed: Array<[string, unknown]> = [];
      for await (const tuple of again.list({ configurable: {} })) listed.push([tuple.config.configurable!['thread_id'] as string, tuple.checkpoint.channel_values['topic']]);
      return listed;
    });
    expect(result).toEqual([['healthy', 'tides']]);
    const skipped = warnings.filter((w) => w.startsWith('BackpackflowSaverWarning: BackpackflowSaver.list: skipped damaged run'));
    expect(skipped).toHaveLength(2);
    expect(skipped.find((w) => w.includes('default/edited'))).toContain(edited);
    expect(skipped.find((w) => w.includes('default/cut'))).toContain('the log was cut or damaged');

    const alone = async (threadId: string) => {
      for await (const _ of again.list({ configurable: { thread_id: threadId } })) void _;
    };
    await expect(alone('edited')).rejects.toThrow(edited);
    await expect(alone('cut')).rejects.toThrow(/the log was cut or damaged/);
    await again.close();
  });
});
