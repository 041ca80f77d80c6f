import { readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointStore, CheckpointStoreError, type Checkpoint } from '../../src/store/index.js';
import { SECRETS, tempDir } from './helpers.js';

const checkpoint = (step: number, state: Checkpoint['state'] = { count: step }): Checkpoint => ({
  v: 1,
  runId: 'run-1',
  sessionKey: 'sess',
  step,
  createdAt: 1_700_000_000_000 + step,
  position: ['outer', 'inner'],
  state,
});

describe('CheckpointStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  let store: CheckpointStore;
  beforeEach(() => {
    tmp = tempDir();
    store = new CheckpointStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: 'run-1' });
  });
  afterEach(() => tmp.cleanup());

  it('returns null when no checkpoint exists', async () => {
    expect(await store.loadLatest()).toBeNull();
    expect(await store.loadHistorical(3)).toBeNull();
    expect(await store.listHistorical()).toEqual([]);
  });

  it('saves and loads the latest checkpoint at checkpoint.latest.json, replacing the previous one', async () => {
    await store.saveLatest(checkpoint(1));
    await store.saveLatest(checkpoint(2, { nested: { list: [1, 'a', null, true] } }));
    expect(await store.loadLatest()).toEqual(checkpoint(2, { nested: { list: [1, 'a', null, true] } }));
    expect(JSON.parse(readFileSync(store.paths.checkpointLatest, 'utf8')).data.step).toBe(2);
    expect(readdirSync(store.paths.dir)).toEqual(['checkpoint.latest.json']);
  });

  it('saves historical checkpoints under checkpoint/<stepId>.json and lists them in numeric order', async () => {
    for (const step of [10, 2, 1, 33]) await store.saveHistorical(checkpoint(step), step);
    await store.saveHistorical(checkpoint(5), 'final');
    expect(await store.listHistorical()).toEqual(['1', '2', '10', '33', 'final']);
    expect(await store.loadHistorical(10)).toEqual(checkpoint(10));
    expect(readdirSync(store.paths.checkpointDir).sort()).toEqual(['1.json', '10.json', '2.json', '33.json', 'final.json']);
  });

  it('writes a checkpoint as it was when its save was called, even if the caller changes it while the save waits its turn', async () => {
    const state = { items: ['a', 'b'], note: 'first' };
    const waiting = store.saveLatest(checkpoint(1, { blob: 'x'.repeat(200_000) }));
    const second = store.saveHistorical(checkpoint(2, state), 2);
    state.items.push('c');
    state.note = 'changed';
    await Promise.all([waiting, second]);
    expect((await store.loadHistorical(2))?.state).toEqual({ items: ['a', 'b'], note: 'first' });
  });

  it('keeps the last save called when saves are not awaited one by one', async () => {
    await Promise.all(Array.from({ length: 8 }, (_, i) => store.saveLatest(checkpoint(i, { blob: 'x'.repeat((8 - i) * 20_000) }))));
    expect((await store.loadLatest())?.step).toBe(7);
  });

  it('rejects an invalid checkpoint with the path of the problem', async () => {
    const bad = { ...checkpoint(1), position: 'outer' } as unknown as Checkpoint;
    await expect(store.saveLatest(bad)).rejects.toThrow(/invalid checkpoint .*position:/);
    await expect(store.saveLatest({ ...checkpoint(1), state: { f: () => 1 } } as unknown as Checkpoint)).rejects.toThrow(CheckpointStoreError);
    expect(await store.loadLatest()).toBeNull();
  });

  it('rejects a checkpoint of another run', async () => {
    await expect(store.saveLatest({ ...checkpoint(1), runId: 'run-2' })).rejects.toThrow(/sess\/run-2 cannot be saved in run sess\/run-1/);
  });

  it('reports a corrupt file with its path', async () => {
    mkdirSync(store.paths.dir, { recursive: true });
    writeFileSync(store.paths.checkpointLatest, '{"v":1,"runId":');
    await expect(store.loadLatest()).rejects.toThrow(new RegExp(`corrupt checkpoint ${store.paths.checkpointLatest}: not valid JSON`));
    writeFileSync(store.paths.checkpointLatest, JSON.stringify({ ...checkpoint(1), step: 'x' }));
    await expect(store.loadLatest()).rejects.toThrow(/corrupt checkpoint .*step:/);
  });

  it('seals every checkpoint with its checksum: an edit to another valid value is a corrupt checkpoint naming the file', async () => {
    await store.saveHistorical(checkpoint(4, { n: 41 }), 4);
    const path = `${store.paths.checkpointDir}/4.json`;
    const text = readFileSync(path, 'utf8');
    expect(text).toMatch(/^\{"checksum":"[0-9a-f]{64}","data":\{/);
    writeFileSync(path, text.replace('"n":41', '"n":42'));
    await expect(store.loadHistorical(4)).rejects.toThrow(new RegExp(`corrupt checkpoint ${path}: checksum mismatch`));
  });

  it('still loads a checkpoint written before seals existed (plain JSON)', async () => {
    mkdirSync(store.paths.checkpointDir, { recursive: true });
    writeFileSync(`${store.paths.checkpointDir}/3.json`, JSON.stringify(checkpoint(3)));
    expect(await store.loadHistorical(3)).toEqual(checkpoint(3));
  });

  it('never writes secrets in state or meta (latest and historical), and marks the checkpoint', async () => {
    const state = { items: { token: 'plain-token-value', notes: Object.values(SECRETS).map((s) => `use ${s}`) } };
    await store.saveLatest({ ...checkpoint(1, state), meta: { auth: SECRETS.bearer } });
    await store.saveHistorical({ ...checkpoint(1, state) }, 1);
    for (const path of [store.paths.checkpointLatest, `${store.paths.checkpointDir}/1.json`]) {
      const raw = readFileSync(path, 'utf8');
      for (const secret of ['plain-token-value', ...Object.values(SECRETS)]) expect(raw).not.toContain(secret.slice(7, 27));
    }
    const loaded = await store.loadLatest();
    expect(loaded?.redaction).toEqual({ containsSecrets: true });
    expect(loaded?.state).toEqual({ items: { token: '[REDACTED]', notes: Object.values(SECRETS).map(() => 'use [REDACTED]') } });
    expect(loaded?.meta).toEqual({ auth: '[REDACTED]' });
    expect((await store.loadHistorical(1))?.redaction).toEqual({ containsSecrets: true });
  });

  it('leaves no redaction mark on a checkpoint without secrets', async () => {
    await store.saveLatest(checkpoint(1));
    expect((await store.loadLatest())?.redaction).toBeUndefined();
  });
});
