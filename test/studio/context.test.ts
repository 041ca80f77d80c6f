/**
 * The Context view's API (`--workspace`): the workspace tree a directory at a time, each node's frames and heads
 * with stale markers, a frame's content as stored (redacted), and every bad request refused without touching a file.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { tempDir } from '../cli/helpers.js';
import { get } from './helpers.js';

let workspace = '';
let studio: StudioServer;
let noteFrame = '';
const SECRET = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';

beforeAll(async () => {
  workspace = tempDir();
  mkdirSync(join(workspace, 'docs', 'deep'), { recursive: true });
  writeFileSync(join(workspace, 'docs', 'a.md'), 'alpha\n');
  writeFileSync(join(workspace, 'docs', 'deep', 'b.md'), 'beta\n');
  writeFileSync(join(workspace, 'readme.md'), 'top\n');
  writeFileSync(join(workspace, '.env'), `TOKEN=${SECRET}\n`);
  const engine = await ContextEngine.open(workspace);
  await engine.scan();
  await engine.registerAgent({ agentId: 'writer', role: 'writer' });
  noteFrame = await engine.putFrame('docs/a.md', { type: 'summary', content: `alpha, with a key ${SECRET}`, metadata: { source: 'test' } }, 'writer');
  await engine.putFrame('docs/deep/b.md', { type: 'summary', content: 'beta' }, 'writer');
  await engine.putFrame('docs/deep/b.md', { type: 'note', content: 'a second frame type' }, 'writer');
  // b.md changes after its frames were written: its heads describe an old version of it now.
  writeFileSync(join(workspace, 'docs', 'deep', 'b.md'), 'beta, changed\n');
  await engine.scan();
  await engine.close();
  studio = await startStudio({ dataDir: tempDir(), workspace, port: 0 });
});

afterAll(async () => {
  await studio?.close();
});

const api = (path: string) => get(studio.port, path);

describe('studio context API', () => {
  it('GET /api/context gives the workspace and its counts; /api/info names it', async () => {
    const reply = await api('/api/context');
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ workspace, status: { frames: 3, heads: 3, stale: 2, nodes: 6 } });
    expect((await api('/api/info')).json.workspace).toBe(workspace);
  });

  it('GET /api/context/node lists a directory with frames, heads and stale markers per child, and never the secret file', async () => {
    const root = (await api('/api/context/node')).json;
    expect(root.node).toMatchObject({ path: '', kind: 'dir' });
    expect(root.children.map((c: any) => [c.name, c.kind, c.staleBelow])).toEqual([
      ['docs', 'dir', 2],
      ['readme.md', 'file', 0],
    ]);
    const docs = (await api('/api/context/node?path=docs')).json;
    expect(docs.children.map((c: any) => [c.path, c.frames, c.heads.map((h: any) => `${h.type}:${h.stale}`), c.staleBelow])).toEqual([
      ['docs/a.md', 1, ['summary:false'], 0],
      ['docs/deep', 0, [], 2],
    ]);
    const b = (await api('/api/context/node?path=docs/deep/b.md')).json;
    expect(b.node).toMatchObject({ path: 'docs/deep/b.md', kind: 'file' });
    expect(b.heads.map((h: any) => [h.type, h.stale])).toEqual([
      ['note', true],
      ['summary', true],
    ]);
    expect(b.frames.map((f: any) => [f.type, f.agentId, f.isHead])).toEqual([
      ['summary', 'writer', true],
      ['note', 'writer', true],
    ]);
    expect(b.children).toEqual([]);
  });

  it('GET /api/context/frames/:id gives the frame as stored: redacted before it was written', async () => {
    const reply = await api(`/api/context/frames/${noteFrame}`);
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ frameId: noteFrame, path: 'docs/a.md', type: 'summary', agentId: 'writer', metadata: { source: 'test' } });
    expect(reply.json.content).toContain('[REDACTED]');
    expect(reply.body).not.toContain(SECRET);
    const everything = [await api('/api/context'), await api('/api/context/node'), await api('/api/context/node?path=docs/a.md')].map((r) => r.body).join('');
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain('.env');
  });

  it.each([
    ['/api/context/node?path=../outside', 400, /outside|escape|workspace|invalid/i],
    ['/api/context/node?path=nothing/here', 404, /no node at 'nothing\/here'/],
    ['/api/context/node?path=.env', 404, /no node at '.env'.*ignored/],
    [`/api/context/node?path=${'a'.repeat(5000)}`, 400, /at most 4096/],
    ['/api/context/frames/xyz', 400, /64 lowercase hex/],
    [`/api/context/frames/${'0'.repeat(64)}`, 404, /./],
    ['/api/context/other', 404, /no API route/],
  ])('%s → %i', async (path, status, message) => {
    const reply = await api(path);
    expect(reply.status).toBe(status);
    expect(reply.json.error).toMatch(message);
  });

  it('a damaged frame file is a 409 naming the file and what is wrong, not a 500 "server error" (the store is damaged, not the server)', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'a.md'), 'alpha\n');
    const engine = await ContextEngine.open(dir);
    await engine.scan();
    await engine.registerAgent({ agentId: 'writer', role: 'writer' });
    const frameId = await engine.putFrame('docs/a.md', { type: 'summary', content: 'alpha' }, 'writer');
    await engine.close();
    const file = join(dir, '.merkle', 'frames', frameId.slice(0, 2), `${frameId}.json`);
    writeFileSync(file, readFileSync(file, 'utf8').replace('"nodeId"', '"nodeXd"'));
    const damaged = await startStudio({ dataDir: tempDir(), workspace: dir, port: 0 });
    try {
      const reply = await get(damaged.port, `/api/context/frames/${frameId}`);
      expect(reply.status).toBe(409);
      expect(reply.json.error).toContain(`corrupt store file ${file}`);
      expect(reply.json).toMatchObject({ code: 'CORRUPT_STORE', parameter: 'frameId' });
    } finally {
      await damaged.close();
    }
  });

  it('without --workspace, the context routes say how to get one; an unscanned workspace is a 409 saying to scan it', async () => {
    const plain = await startStudio({ dataDir: tempDir(), port: 0 });
    try {
      const reply = await get(plain.port, '/api/context');
      expect(reply.status).toBe(404);
      expect(reply.json.error).toContain('start it with --workspace <dir>');
    } finally {
      await plain.close();
    }
    const fresh = await startStudio({ dataDir: tempDir(), workspace: tempDir(), port: 0 });
    try {
      expect((await get(fresh.port, '/api/context')).json.status).toMatchObject({ root: null, nodes: 0 });
      const node = await get(fresh.port, '/api/context/node');
      expect(node.status).toBe(409);
      expect(node.json.error).toContain("run 'backpackflow context scan' first");
    } finally {
      await fresh.close();
    }
  });
});
