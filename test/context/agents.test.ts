import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { MerkleStore } from '../../src/context/store.js';
import { loadHashBackend } from '../../src/context/hash.js';
import { openSample, settle, snapshotStore } from './helpers.js';

describe('agent read/write model (spec §1)', () => {
  it('writer agents cannot overwrite frames: a new frame is appended and the stored one is refused', async () => {
    const { root, engine } = await openSample();
    const first = await engine.putFrame('README.md', { type: 'summary', content: 'v1' }, 'w');
    const second = await engine.putFrame('README.md', { type: 'summary', content: 'v2' }, 'w');
    expect(second).not.toBe(first);
    expect((await engine.getFrame(first)).content).toBe('v1');
    expect((await engine.listFrames('README.md')).map((f) => f.frameId)).toEqual([first, second]);

    // The store itself refuses different bytes under an existing id.
    const store = new MerkleStore(root, await loadHashBackend());
    const existing = store.readFrame(first);
    expect(() => store.stageFrames([{ ...existing, content: 'tampered' }])).toThrow(/already exists .* frames are never overwritten/);
    expect((await engine.getFrame(first)).content).toBe('v1');
  });

  it('reader agents never trigger writes: put and synthesize are refused and the store is untouched', async () => {
    const { root, engine } = await openSample();
    await engine.putFrame('README.md', { type: 'summary', content: 'v1' }, 'w');
    const before = snapshotStore(root);
    await expect(engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'r')).rejects.toMatchObject({
      code: 'ROLE_DENIED',
      message: expect.stringMatching(/agent 'r' has role 'reader'/),
    });
    await expect(engine.synthesizeBranch('src', 'summary', 'r')).rejects.toMatchObject({ code: 'ROLE_DENIED' });
    await expect(engine.as('r').writeContext('README.md', { type: 'summary', content: 'x' })).rejects.toMatchObject({ code: 'ROLE_DENIED' });
    const context = await engine.as('r').readContext('README.md');
    expect(context.frames).toHaveLength(1);
    await engine.getNode('src');
    await engine.compose('src', { maxFrames: 5, sources: ['current', 'parent', 'siblings'] });
    expect(snapshotStore(root)).toEqual(before);
    // A writer may not synthesize either: that is the synthesis role.
    await expect(engine.synthesizeBranch('src', 'summary', 'w')).rejects.toMatchObject({ code: 'ROLE_DENIED' });
  });

  it('agent attribution is part of the FrameID basis', async () => {
    const { engine } = await openSample();
    await engine.registerAgent({ agentId: 'w2', role: 'writer' });
    const a = await engine.putFrame('README.md', { type: 'summary', content: 'same' }, 'w');
    const b = await engine.putFrame('README.md', { type: 'summary', content: 'same' }, 'w2');
    expect(a).not.toBe(b);
    const frame = await engine.getFrame(b);
    expect(frame.agentId).toBe('w2');
    expect(frame.metadata.agent_id).toBe('w2');
  });

  it('a frame whose agent was edited on disk fails verification on read', async () => {
    const { root, engine } = await openSample();
    const id = await engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'w');
    const file = join(root, '.merkle', 'frames', id.slice(0, 2), `${id}.json`);
    const forged = readFileSync(file, 'utf8').replaceAll('"w"', '"s"');
    chmodSync(file, 0o644);
    writeFileSync(file, forged);
    await expect(engine.getFrame(id)).rejects.toMatchObject({ code: 'CORRUPT_STORE', message: expect.stringContaining(id) });
    const report = await engine.validate();
    expect(report.ok).toBe(false);
    expect(report.errors.join('\n')).toContain(id);
  });

  it('verifies agent identity on every write', async () => {
    const { engine } = await openSample();
    await expect(engine.putFrame('README.md', { type: 't', content: 'x' }, 'ghost')).rejects.toMatchObject({
      code: 'UNKNOWN_AGENT',
      message: expect.stringContaining("agent 'ghost' is not registered"),
    });
    await expect(engine.putFrame('README.md', { type: 't', content: 'x', metadata: { agent_id: 's' } }, 'w')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining("metadata.agent_id 's' does not match the writing agent 'w'"),
    });
    await expect(engine.putFrame('README.md', { type: 't', content: 'x' }, 'bad id')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await engine.registerAgent({ agentId: 'narrow', role: 'writer', capabilities: ['summary'] });
    await expect(engine.putFrame('README.md', { type: 'review', content: 'x' }, 'narrow')).rejects.toMatchObject({ code: 'CAPABILITY_DENIED' });
    await expect(engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'narrow')).resolves.toMatch(/^[0-9a-f]{64}$/);
  });

  it('persists agents and rejects bad registrations', async () => {
    const { root } = await openSample();
    const reopened = await ContextEngine.open(root);
    expect((await reopened.listAgents()).map((a) => `${a.agentId}:${a.role}`).sort()).toEqual(['r:reader', 's:synthesis', 'w:writer']);
    await expect(reopened.registerAgent({ agentId: 'x', role: 'admin' as 'reader' })).rejects.toThrow(/role "admin" of agent 'x' is invalid/);
  });

  it('concurrent agents do not corrupt state: parallel writes from two engine instances all land', async () => {
    const { root, engine } = await openSample();
    const other = await ContextEngine.open(root);
    const writes = [];
    for (let i = 0; i < 20; i++) {
      const target = i % 2 === 0 ? engine : other;
      writes.push(target.putFrame(i % 3 === 0 ? 'README.md' : 'src/main.ts', { type: 'note', content: `note ${i}` }, 'w'));
    }
    const ids = await Promise.all(writes);
    expect(new Set(ids).size).toBe(20);
    const listed = [...(await engine.listFrames('README.md')), ...(await engine.listFrames('src/main.ts'))].map((f) => f.frameId);
    expect(listed.sort()).toEqual([...ids].sort());
    expect((await engine.validate()).ok).toBe(true);
  });
});

describe('a damaged agents.json', () => {
  it('blocks writes with an error that says how to go on; repair keeps it aside, starts an empty registry, and writes go on once agents are registered again', async () => {
    const { root, engine } = await openSample();
    const file = join(root, '.merkle', 'agents.json');
    writeFileSync(file, '{"agents": TOPSECRETBYTES');
    await expect(engine.putFrame('README.md', { type: 'summary', content: 'v1' }, 'w')).rejects.toMatchObject({
      code: 'CORRUPT_STORE',
      message: expect.stringMatching(/agents\.json: not valid JSON: .*'backpackflow context repair' keeps the file aside/),
    });
    expect((await engine.validate()).ok).toBe(false);
    const { repaired } = await engine.repair();
    expect(repaired).toEqual([expect.stringMatching(/agents\.json could not be read; it is kept as .*agents\.json\.damaged-.*register the agents again/)]);
    const kept = repaired[0]!.match(/kept as (\S+),/)![1]!;
    expect(readFileSync(kept, 'utf8')).toBe('{"agents": TOPSECRETBYTES');
    // An empty registry: the agent must be registered again (the hint names the command that ships with the package).
    await expect(engine.putFrame('README.md', { type: 'summary', content: 'v1' }, 'w')).rejects.toMatchObject({
      code: 'UNKNOWN_AGENT',
      message: expect.stringMatching(/register it first \(backpackflow context agent add w --role <role>\)/),
    });
    await engine.registerAgent({ agentId: 'w', role: 'writer' });
    await engine.putFrame('README.md', { type: 'summary', content: 'v1' }, 'w');
    expect((await engine.validate()).ok).toBe(true);
    expect((await engine.repair()).repaired).toEqual([]);
  });
});

describe('validate of a workspace whose files were copied or touched', () => {
  it('does not call it changed when only stats changed (the root is the same); a changed file is a change', async () => {
    const { root, engine } = await openSample();
    const rootId = (await engine.status()).root;
    // As `cp -a` or a checkout leaves it: the same bytes, other mtimes (and inodes).
    settle(root, 30);
    const copied = await engine.validate();
    expect(copied.warnings.some((w) => w.startsWith('workspace changed since the last scan'))).toBe(false);
    expect(copied.warnings).toContainEqual(expect.stringMatching(/stats changed since the last scan, their contents did not/));
    expect((await engine.status()).root).toBe(rootId);
    writeFileSync(join(root, 'README.md'), 'changed\n');
    const changed = await engine.validate();
    expect(changed.warnings).toContainEqual(expect.stringMatching(/^workspace changed since the last scan \(root would be [0-9a-f]+\)/));
  });
});
