import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { openSample } from './helpers.js';

describe('store integrity', () => {
  it('verifies state.json and agents.json against their checksums on read', async () => {
    const { root, engine } = await openSample();
    await engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'w');
    for (const name of ['state.json', 'agents.json']) {
      const file = join(root, '.merkle', name);
      const original = readFileSync(file, 'utf8');
      writeFileSync(file, original.replace('"w"', '"x"'));
      const fresh = await ContextEngine.open(root);
      const read = name === 'state.json' ? fresh.listFrames('README.md') : fresh.listAgents();
      await expect(read).rejects.toMatchObject({ code: 'CORRUPT_STORE', message: expect.stringContaining(`${name}: checksum mismatch`) });
      expect((await fresh.validate()).ok).toBe(false);
      writeFileSync(file, original);
    }
    expect((await engine.validate()).ok).toBe(true);
  });

  it('an interrupted write leaves only unreferenced files, which validate reports as warnings', async () => {
    const { root, engine } = await openSample();
    const id = await engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'w');
    const frame = readFileSync(join(root, '.merkle', 'frames', id.slice(0, 2), `${id}.json`), 'utf8');
    // A frame written by a transaction that died before its state was replaced, and a temp file of another.
    const orphan = JSON.parse(frame);
    const orphanId = 'f'.repeat(64);
    writeFileSync(join(root, '.merkle', 'frames', id.slice(0, 2), `${id}.json.123.abcd.tmp`), frame);
    writeFileSync(join(root, '.merkle', 'frames', id.slice(0, 2), `${orphanId}.json`), JSON.stringify({ ...orphan, frameId: orphanId }));
    const report = await engine.validate();
    expect(report.ok).toBe(true);
    expect(report.warnings.join('\n')).toMatch(/leftover file .*\.tmp/);
    expect(report.warnings.join('\n')).toContain(`frame file ${orphanId} is referenced by no frame set`);
    expect(await engine.getHead('README.md', 'summary')).toBe(id);
  });

  it('a changed mtime alone re-reads the file but changes no id', async () => {
    const { root, engine } = await openSample();
    const future = new Date(Date.now() + 60_000);
    utimesSync(join(root, 'docs/guide.md'), future, future);
    const report = await engine.scan();
    expect(report.hashed).toBe(1);
    expect(report.changedPaths).toEqual([]);
  });

  it('enforces roles on regeneration: a demoted synthesis agent cannot regenerate its frames', async () => {
    const { engine } = await openSample();
    await engine.synthesizeBranch('docs', 'summary', 's');
    await engine.invalidate('docs');
    await engine.registerAgent({ agentId: 's', role: 'reader' });
    await expect(engine.regenerate('docs')).rejects.toMatchObject({ code: 'ROLE_DENIED', message: expect.stringContaining("agent 's' has role 'reader'") });
  });
});
