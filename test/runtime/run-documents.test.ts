/**
 * The documents kept with a run (its flow config, its recipe) are tied to its log: the run's start record holds the
 * BLAKE3 of each, and readers refuse a document changed or replaced since (store/run-documents.ts).
 */
import fc from 'fast-check';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { openNewRun, runFlow, verifyRun } from '../../src/runtime/index.js';
import { EventStore, FileRunStore, StoreError, recordedDigests } from '../../src/store/index.js';
import { documentDigest } from '../../src/store/run-documents.js';
import { makeEvent } from '../store/helpers.js';
import { trials } from '../support/soak.js';

const dataDir = mkdtempSync(join(tmpdir(), 'bpf-documents-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const store = new FileRunStore(dataDir);

class Put extends BackpackNode {
  override post(backpack: Parameters<BackpackNode['post']>[0]): undefined {
    backpack.pack('done', true);
    return undefined;
  }
}

function flow(): Flow {
  const f = new Flow({ namespace: 'docs' });
  f.addNode(Put, { id: 'put' });
  return f;
}

const CONFIG = { version: '2.0.0', namespace: 'docs', nodes: [{ type: 'Put', id: 'put', params: { note: 'é ✓' } }], edges: [] };
const RECIPE = { flow: { kind: 'config' }, modules: ['nodes.mjs'] };

/** A run started with its flow config and recipe recorded, as the CLI starts one. */
async function recordedRun(runId: string): Promise<{ ref: { sessionKey: string; runId: string }; flowPath: string }> {
  const newRun = await openNewRun({ dataDir, runId });
  await newRun.saveDocument('flow', CONFIG);
  await newRun.saveDocument('recipe', RECIPE);
  await runFlow(flow(), { newRun });
  const ref = { sessionKey: 'default', runId };
  return { ref, flowPath: store.documentPath(ref, 'flow') };
}

describe('the documents of a run, tied to its log', () => {
  it("the start record holds the BLAKE3 of each document's stored text, and a reader gets them back", async () => {
    const { ref, flowPath } = await recordedRun('tied');
    const recorded = await recordedDigests(store, ref);
    expect(recorded?.line).toBe(1);
    expect(recorded?.digests).toEqual({
      flow: await documentDigest(readFileSync(flowPath, 'utf8')),
      recipe: await documentDigest(readFileSync(store.documentPath(ref, 'recipe'), 'utf8')),
    });
    expect(await store.loadDocument(ref, 'flow')).toEqual(CONFIG);
    expect(await store.loadDocument(ref, 'recipe')).toEqual(RECIPE);
    expect((await verifyRun({ dataDir, runId: 'tied' })).status).toBe('verified');
  });

  it('a document edited, replaced by another run\'s, or deleted after the run started is refused (reader) and reported (verify), naming it', async () => {
    const { ref, flowPath } = await recordedRun('edited');
    const original = readFileSync(flowPath, 'utf8');
    // An edit by hand that keeps it valid JSON: another param value.
    writeFileSync(flowPath, original.replace('é ✓', 'changed'));
    const refused = store.loadDocument(ref, 'flow');
    await expect(refused).rejects.toBeInstanceOf(StoreError);
    await expect(store.loadDocument(ref, 'flow')).rejects.toThrow(`${flowPath} is not the flow document run default/edited recorded`);
    await expect(store.loadDocument(ref, 'flow')).rejects.toThrow(/events\.jsonl, line 2\)/);
    const verified = await verifyRun({ dataDir, runId: 'edited' });
    expect(verified.status).toBe('damaged');
    expect(verified.problems).toEqual([expect.stringContaining(`${flowPath} is not the flow document`)]);
    // Another run's document, byte for byte a valid flow.json, is not this run's either.
    await runFlow(flow(), { newRun: await (async () => {
      const other = await openNewRun({ dataDir, runId: 'other' });
      await other.saveDocument('flow', { ...CONFIG, namespace: 'elsewhere' });
      return other;
    })() });
    copyFileSync(store.documentPath({ sessionKey: 'default', runId: 'other' }, 'flow'), flowPath);
    await expect(store.loadDocument(ref, 'flow')).rejects.toThrow(/is not the flow document run default\/edited recorded/);
    // Restored, it reads again; deleted, the reader and verify say the same: the run recorded it, and it is gone (never
    // "this run has no flow", which would have the CLI build the run without it).
    writeFileSync(flowPath, original);
    expect(await store.loadDocument(ref, 'flow')).toEqual(CONFIG);
    unlinkSync(flowPath);
    const message = `${flowPath}: the run recorded it when it started (${store.describeLog(ref)}, line 2), and it is gone`;
    await expect(store.loadDocument(ref, 'flow')).rejects.toThrow(message);
    const gone = await verifyRun({ dataDir, runId: 'edited' });
    expect(gone.status).toBe('damaged');
    expect(gone.problems).toEqual([message]);
  });

  it('any change to the stored text of a document is refused, and only the unchanged text is served (property)', async () => {
    const { ref, flowPath } = await recordedRun('flips');
    const original = readFileSync(flowPath);
    try {
      await fc.assert(
        fc.asyncProperty(fc.nat(original.length - 1), fc.integer({ min: 1, max: 255 }), fc.boolean(), async (at, xor, cut) => {
          const damaged = cut ? original.subarray(0, at) : Buffer.from(original);
          if (!cut) damaged[at] = damaged[at]! ^ xor;
          writeFileSync(flowPath, damaged);
          await expect(store.loadDocument(ref, 'flow')).rejects.toThrow(flowPath);
        }),
        { numRuns: trials(60, 750) },
      );
    } finally {
      writeFileSync(flowPath, original);
    }
    expect(await store.loadDocument(ref, 'flow')).toEqual(CONFIG);
  });

  it('a document the start record does not name is refused: added after the run started, or left by an earlier start of the id', async () => {
    const evil = { v: 1, flow: { kind: 'module', module: '/tmp/evil.mjs', export: 'build' }, modules: [] };
    // Recorded with its flow config only; a recipe added by hand later (one that would make resume import a module).
    const flowOnly = await openNewRun({ dataDir, runId: 'flow-only' });
    await flowOnly.saveDocument('flow', CONFIG);
    await runFlow(flow(), { newRun: flowOnly });
    const ref = { sessionKey: 'default', runId: 'flow-only' };
    expect(Object.keys((await recordedDigests(store, ref))!.digests)).toEqual(['flow']);
    const recipePath = store.documentPath(ref, 'recipe');
    writeFileSync(recipePath, JSON.stringify(evil));
    await expect(store.loadDocument(ref, 'recipe')).rejects.toThrow(`${recipePath} is not a document of run default/flow-only: the run's start record`);
    const verified = await verifyRun({ dataDir, runId: 'flow-only' });
    expect(verified.status).toBe('damaged');
    expect(verified.problems).toEqual([expect.stringContaining(`${recipePath} is not a document of run default/flow-only`)]);
    // A start that recorded documents and was released; the id then started in code, recording none.
    const released = await openNewRun({ dataDir, runId: 'reused' });
    await released.saveDocument('flow', { ...CONFIG, namespace: 'released-start' });
    await released.release();
    await runFlow(flow(), { dataDir, runId: 'reused' });
    const reused = { sessionKey: 'default', runId: 'reused' };
    expect((await recordedDigests(store, reused))?.digests).toEqual({});
    await expect(store.loadDocument(reused, 'flow')).rejects.toThrow(/is not a document of run default\/reused/);
    // Nothing beside a run started without documents: nothing to refuse.
    await runFlow(flow(), { dataDir, runId: 'bare' });
    expect(await store.loadDocument({ sessionKey: 'default', runId: 'bare' }, 'flow')).toBeUndefined();
    expect((await verifyRun({ dataDir, runId: 'bare' })).status).toBe('verified');
  });

  it('a run started before documents were tied to its log (no documents in its start record) serves one as found', async () => {
    // The start record as an older backpackflow wrote it: without `documents`.
    const ref = { sessionKey: 'default', runId: 'legacy' };
    const writer = await store.openWriter(ref, { fresh: true });
    await writer.commit([
      makeEvent('legacy', 1, { type: 'run.started', payload: { flowNamespace: 'docs', entryNodeId: 'put' } }),
      makeEvent('legacy', 2, { type: 'checkpoint.saved', payload: { step: 0, position: ['put'], keyframe: false, start: true } }),
    ]);
    await writer.close();
    writeFileSync(store.documentPath(ref, 'flow'), JSON.stringify(CONFIG));
    expect(await recordedDigests(store, ref)).toBeUndefined();
    expect(await store.loadDocument(ref, 'flow')).toEqual(CONFIG);
  });

  it('the start record waits for documents still being saved through the NewRun, and holds the digest of exactly the bytes written', async () => {
    const newRun = await openNewRun({ dataDir, runId: 'late-save' });
    const config = structuredClone(CONFIG) as { namespace: string };
    const saving = newRun.saveDocument('flow', config);
    // Changed by its caller while it is being saved: the run still reads back what was written.
    config.namespace = 'changed-after-the-call';
    await runFlow(flow(), { newRun });
    await saving;
    const ref = { sessionKey: 'default', runId: 'late-save' };
    expect((await recordedDigests(store, ref))?.digests.flow).toBe(await documentDigest(readFileSync(store.documentPath(ref, 'flow'), 'utf8')));
    expect(await store.loadDocument(ref, 'flow')).toEqual(JSON.parse(readFileSync(store.documentPath(ref, 'flow'), 'utf8')));
    expect((await verifyRun({ dataDir, runId: 'late-save' })).status).toBe('verified');
  });

  it('a run whose document failed to save does not start: runFlow rejects as the save did, and the id stays free', async () => {
    const newRun = await openNewRun({ dataDir, runId: 'failed-save' });
    const failed = newRun.saveDocument('flow', { count: 1n });
    await expect(failed).rejects.toThrow(/BigInt/);
    await expect(runFlow(flow(), { newRun })).rejects.toThrow(/BigInt/);
    expect(await store.hasEvents({ sessionKey: 'default', runId: 'failed-save' })).toBe(false);
    await runFlow(flow(), { dataDir, runId: 'failed-save' });
    expect(await store.hasEvents({ sessionKey: 'default', runId: 'failed-save' })).toBe(true);
  });

  it('a document that cannot be read (a directory in its place) is an error naming it, and verify reports it', async () => {
    const { ref, flowPath } = await recordedRun('unreadable');
    unlinkSync(flowPath);
    mkdirSync(flowPath);
    await expect(store.loadDocument(ref, 'flow')).rejects.toThrow(`${flowPath} cannot be read`);
    const verified = await verifyRun({ dataDir, runId: 'unreadable' });
    expect(verified.status).toBe('damaged');
    expect(verified.problems).toEqual([expect.stringContaining(`${flowPath} cannot be read`)]);
  });

  it('a start record whose batch was changed is the log\'s error, naming it, not a document served unchecked', async () => {
    const { ref } = await recordedRun('forged');
    const log = new EventStore({ dataDir, sessionKey: 'default', runId: 'forged' });
    const path = log.paths.events;
    const text = readFileSync(path, 'utf8');
    // Another digest put in the start record, without the chain's hash: the first batch no longer verifies.
    writeFileSync(path, text.replace(/"flow":"[0-9a-f]{64}"/, `"flow":"${'0'.repeat(64)}"`));
    await expect(store.loadDocument(ref, 'flow')).rejects.toThrow(path);
  });
});
