/**
 * A frame file that still parses as JSON but lost the shape of a frame (a field name damaged, a value of another
 * type, a file holding `null`, a number or an array) is a corrupt store file, as a frame that fails its hash is:
 * getFrame and getNode give a CORRUPT_STORE error naming the file and the frame, validate reports them, and
 * `backpackflow context validate` exits 1 naming the file. Never a bare TypeError naming nothing (audit s21, F4).
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextError, type ContextEngine } from '../../src/context/index.js';
import { frameShapeProblem } from '../../src/context/frames.js';
import { cli } from '../cli/helpers.js';
import { openSample } from './helpers.js';

/** A sample workspace with two frames on README.md and a synthesized frame on src; the engine is closed. */
async function annotated(): Promise<{ root: string; engine: ContextEngine; plain: string; other: string; synthesized: string }> {
  const { root, engine } = await openSample();
  const plain = await engine.putFrame('README.md', { type: 'summary', content: 'summary of the readme', metadata: { lines: 1 } }, 'w');
  const other = await engine.putFrame('README.md', { type: 'note', content: 'a note' }, 'w');
  await engine.putFrame('src/main.ts', { type: 'summary', content: 'main' }, 'w');
  const synthesized = await engine.synthesizeBranch('src', 'summary', 's');
  return { root, engine, plain, other, synthesized };
}

const frameFile = (root: string, id: string): string => join(root, '.merkle', 'frames', id.slice(0, 2), `${id}.json`);

function rewrite(file: string, edit: (text: string) => string): void {
  chmodSync(file, 0o644);
  const before = readFileSync(file, 'utf8');
  const after = edit(before);
  expect(after, 'the edit changed the file').not.toBe(before);
  writeFileSync(file, after);
}

/** Rewrites the parsed frame in `file` with `edit` (a field of another type). */
function rewriteJson(file: string, edit: (frame: any) => unknown): void {
  rewrite(file, (text) => `${JSON.stringify(edit(JSON.parse(text)))}\n`);
}

/** getFrame, getNode (of the frame's node) and validate each name `file` and the frame; none throws anything else. */
async function expectReported(engine: ContextEngine, node: string, id: string, file: string): Promise<void> {
  const read = async (what: () => Promise<unknown>): Promise<unknown> => what().then(() => undefined, (e: unknown) => e);
  for (const error of [await read(() => engine.getFrame(id)), await read(() => engine.getNode(node, { maxFrames: 100 }))]) {
    expect(error).toBeInstanceOf(ContextError);
    expect(error).toMatchObject({ code: 'CORRUPT_STORE', details: { file } });
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain(id);
  }
  const report = await engine.validate();
  expect(report.ok).toBe(false);
  expect(report.errors.some((e) => e.includes(file) && e.includes(id)), JSON.stringify(report.errors)).toBe(true);
  for (const error of report.errors) expect(error).not.toMatch(/Cannot read properties|is not a function|is not iterable|out of range/);
}

describe('a frame file damaged in its shape (audit s21 F4)', () => {
  // One-byte flips in a field name: the file still parses; the field is missing.
  for (const [field, damaged] of [
    ['"v"', '"w"'],
    ['"frameId"', '"frameIe"'],
    ['"nodeId"', '"nodeIe"'],
    ['"path"', '"patx"'],
    ['"type"', '"typf"'],
    ['"agentId"', '"agentIe"'],
    ['"content"', '"contenu"'],
    ['"metadata"', '"metadatb"'],
    ['"basis"', '"basit"'],
    ['"kind"', '"kine"'],
    ['"hash"', '"hasi"'],
  ] as const) {
    it(`field name ${field} flipped to ${damaged}: a CORRUPT_STORE error naming the file and the frame`, async () => {
      const { root, engine, plain } = await annotated();
      const file = frameFile(root, plain);
      rewrite(file, (text) => text.replace(field, damaged));
      await expectReported(engine, 'README.md', plain, file);
    });
  }

  for (const [field, damaged] of [
    ['"sourceType"', '"sourceTypf"'],
    ['"policy"', '"policz"'],
    ['"childFrameIds"', '"childFrameIdt"'],
    ['"synthesis"', '"synthesit"'],
  ] as const) {
    it(`a synthesized frame with ${field} flipped to ${damaged}: a CORRUPT_STORE error naming the file`, async () => {
      const { root, engine, synthesized } = await annotated();
      const file = frameFile(root, synthesized);
      rewrite(file, (text) => text.replace(field, damaged));
      await expectReported(engine, 'src', synthesized, file);
    });
  }

  const wrongTypes: Array<[string, (frame: any) => unknown]> = [
    ['nodeId a number', (f) => ({ ...f, nodeId: 5 })],
    ['nodeId not hex', (f) => ({ ...f, nodeId: `g${f.nodeId.slice(1)}` })],
    ['agentId null', (f) => ({ ...f, agentId: null })],
    ['path an array', (f) => ({ ...f, path: [f.path] })],
    ['type an object', (f) => ({ ...f, type: { type: f.type } })],
    ['content a number', (f) => ({ ...f, content: 1 })],
    ['metadata null', (f) => ({ ...f, metadata: null })],
    ['metadata an array', (f) => ({ ...f, metadata: [f.metadata] })],
    ['basis null', (f) => ({ ...f, basis: null })],
    ['basis a string', (f) => ({ ...f, basis: 'node' })],
    ['basis.kind unknown', (f) => ({ ...f, basis: { ...f.basis, kind: 'other' } })],
    ['basis.hash a number', (f) => ({ ...f, basis: { ...f.basis, hash: 0 } })],
  ];
  for (const [what, edit] of wrongTypes) {
    it(`${what}: a CORRUPT_STORE error naming the file and the frame`, async () => {
      const { root, engine, plain } = await annotated();
      const file = frameFile(root, plain);
      rewriteJson(file, edit);
      await expectReported(engine, 'README.md', plain, file);
    });
  }

  const synthesisTypes: Array<[string, (frame: any) => unknown]> = [
    ['childFrameIds a string', (f) => ({ ...f, basis: { ...f.basis, childFrameIds: f.basis.childFrameIds.join(',') } })],
    ['childFrameIds null', (f) => ({ ...f, basis: { ...f.basis, childFrameIds: null } })],
    ['a child frame id a number', (f) => ({ ...f, basis: { ...f.basis, childFrameIds: [1] } })],
    ['a child frame id not hex', (f) => ({ ...f, basis: { ...f.basis, childFrameIds: ['zz'] } })],
    ['sourceType a number', (f) => ({ ...f, basis: { ...f.basis, sourceType: 1 } })],
    ['policy an object', (f) => ({ ...f, basis: { ...f.basis, policy: {} } })],
  ];
  for (const [what, edit] of synthesisTypes) {
    it(`a synthesized frame with ${what}: a CORRUPT_STORE error naming the file`, async () => {
      const { root, engine, synthesized } = await annotated();
      const file = frameFile(root, synthesized);
      rewriteJson(file, edit);
      await expectReported(engine, 'src', synthesized, file);
    });
  }

  for (const [what, text] of [
    ['null', 'null'],
    ['a number', '42'],
    ['an array', '[]'],
    ['a string', '"frame"'],
    ['true', 'true'],
    ['an empty object', '{}'],
  ] as const) {
    it(`a frame file holding ${what}: a CORRUPT_STORE error naming the file`, async () => {
      const { root, engine, plain } = await annotated();
      const file = frameFile(root, plain);
      rewrite(file, () => text);
      await expectReported(engine, 'README.md', plain, file);
    });
  }

  it('ids in upper-case hex hash to the same bytes, but are not the stored frame: refused, not served changed', async () => {
    // Buffer.write(hex) accepts upper case: without the shape check this frame verified, with another nodeId.
    const { root, engine, plain, synthesized } = await annotated();
    const file = frameFile(root, plain);
    rewriteJson(file, (f) => ({ ...f, nodeId: f.nodeId.toUpperCase() }));
    await expectReported(engine, 'README.md', plain, file);
    const synth = frameFile(root, synthesized);
    rewriteJson(synth, (f) => ({ ...f, basis: { ...f.basis, childFrameIds: f.basis.childFrameIds.map((id: string) => id.toUpperCase()) } }));
    await expectReported(engine, 'src', synthesized, synth);
  });

  it('getNode treats a malformed frame exactly as a frame that fails its hash: the same error, naming the file', async () => {
    const { root, engine, plain } = await annotated();
    const file = frameFile(root, plain);
    const original = readFileSync(file, 'utf8');
    rewrite(file, (text) => text.replace('summary of the readme', 'summary of the README'));
    const hashFailure = await engine.getNode('README.md').then(() => undefined, (e: unknown) => e as ContextError);
    writeFileSync(file, original.replace('"nodeId"', '"nodeIe"'));
    const malformed = await engine.getNode('README.md').then(() => undefined, (e: unknown) => e as ContextError);
    expect(hashFailure).toMatchObject({ code: 'CORRUPT_STORE', details: { file } });
    expect(malformed).toMatchObject({ code: hashFailure!.code, details: hashFailure!.details });
    expect(malformed!.message).toContain(`corrupt store file ${file}: frame ${plain} fails verification (malformed frame: "nodeId" is missing, not a 64-hex id)`);
    // The node's other frame still reads on its own, and the node reads again once the file is put back.
    expect((await engine.getNode('README.md', { types: ['note'] })).frames.map((f) => f.content)).toEqual(['a note']);
    writeFileSync(file, original);
    expect((await engine.getNode('README.md')).frames).toHaveLength(2);
    expect((await engine.validate()).ok).toBe(true);
  });

  it('`backpackflow context validate` and `get-node` name the damaged file', async () => {
    const { root, engine, plain } = await annotated();
    await engine.close();
    const file = frameFile(root, plain);
    rewrite(file, (text) => text.replace('"agentId"', '"agentIe"'));
    const validate = await cli(['context', '--workspace', root, 'validate', '--json']);
    expect(validate.code).toBe(1);
    const report = JSON.parse(validate.stdout) as { ok: boolean; errors: string[] };
    expect(report.ok).toBe(false);
    expect(report.errors.some((e) => e.includes(file) && e.includes(plain)), JSON.stringify(report.errors)).toBe(true);
    const text = await cli(['context', '--workspace', root, 'validate']);
    expect(text.code).toBe(1);
    expect(`${text.stdout}${text.stderr}`).toContain(file);
    const getNode = await cli(['context', '--workspace', root, 'get-node', 'README.md']);
    expect(getNode.code).toBe(1);
    expect(getNode.stderr).toContain(file);
    expect(getNode.stderr).not.toContain('Cannot read properties');
  });

  it('frameShapeProblem says which field is wrong, never quoting its text', () => {
    expect(frameShapeProblem(null)).toBe('the file holds null, not a frame object');
    expect(frameShapeProblem([1])).toBe('the file holds an array, not a frame object');
    expect(frameShapeProblem(7)).toBe('the file holds a number, not a frame object');
    const id = 'a'.repeat(64);
    const good = { v: 1, frameId: id, nodeId: id, path: 'p', type: 't', agentId: 'w', content: 'c', metadata: {}, basis: { kind: 'node', hash: id } };
    expect(frameShapeProblem(good)).toBeUndefined();
    expect(frameShapeProblem({ ...good, agentId: 'secret'.length })).toBe('"agentId" is the number 6, not a string');
    expect(frameShapeProblem({ ...good, nodeId: 'secret text' })).toBe('"nodeId" is a string of 11 characters, not a 64-hex id');
    expect(frameShapeProblem({ ...good, basis: { kind: 'synthesis', hash: id, sourceType: '*', policy: '{}', childFrameIds: [id, 3] } })).toBe(
      '"basis.childFrameIds[1]" is the number 3, not a 64-hex id',
    );
  });
});
