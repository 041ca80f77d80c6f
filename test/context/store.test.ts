import { mkdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { openSample } from './helpers.js';

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

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

  it('a write that never committed leaves only temp files, which validate reports as safe to delete', async () => {
    const { root, engine } = await openSample();
    const id = await engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'w');
    const frame = readFileSync(join(root, '.merkle', 'frames', id.slice(0, 2), `${id}.json`), 'utf8');
    // Frames staged by a transaction that died before its state journal entry: temp files only.
    const orphanId = 'f'.repeat(64);
    mkdirSync(join(root, '.merkle', 'frames', 'ff'));
    writeFileSync(join(root, '.merkle', 'frames', 'ff', `${orphanId}.json.123.abcd.tmp`), JSON.stringify({ ...JSON.parse(frame), frameId: orphanId }));
    writeFileSync(join(root, '.merkle', 'frames', id.slice(0, 2), `${id}.json.123.abcd.tmp`), frame);
    const report = await engine.validate();
    expect(report.errors).toEqual([]);
    expect(report.warnings.filter((w) => /leftover file .*\.tmp \(an interrupted write that never committed\); safe to delete/.test(w))).toHaveLength(2);
    expect(await engine.getHead('README.md', 'summary')).toBe(id);
  });

  it('a damaged last state journal entry: the acknowledged frame it committed is reported by validate, never called safe to delete', async () => {
    const { root, engine } = await openSample();
    const base = await engine.putFrame('README.md', { type: 'summary', content: 'base' }, 'w');
    const journal = join(root, '.merkle', 'state.journal');
    // The first transaction wrote state.json whole, with an empty journal (header and commit record): its length is
    // where the next entry starts.
    const headerBytes = readFileSync(journal).length;
    const acked = await engine.putFrame('README.md', { type: 'summary', content: 'acknowledged' }, 'w');
    const bytes = readFileSync(journal);
    expect(bytes.length).toBeGreaterThan(headerBytes);
    bytes[bytes.length - 10] ^= 0x20; // inside the last entry's payload
    writeFileSync(journal, bytes);
    const fresh = await ContextEngine.open(root);
    const report = await fresh.validate();
    expect(report.ok).toBe(false);
    const file = join(root, '.merkle', 'frames', acked.slice(0, 2), `${acked}.json`);
    // Two errors: the journal damage (its only entry, from the end of the header to the end of the file, fails its
    // checksum: state.json holds the first transaction), and the acknowledged frame whose entry it lost, with that
    // damage named.
    const damage = `${escape(journal)} is damaged: committed bytes ${headerBytes}-${bytes.length} \\(${bytes.length - headerBytes} bytes\\) fail their checksum, so the changes they held and any after them are lost; 0 intact entries before them are applied`;
    expect(report.errors).toHaveLength(2);
    expect(report.errors[0]).toMatch(new RegExp(`^${damage}; 'backpackflow context repair' continues`));
    expect(report.errors[1]).toMatch(new RegExp(`^frame file ${escape(file)} is referenced by no frame set: the state journal entry that committed it was lost \\(${damage}\\); keep the file \\('backpackflow context repair' moves it out of frames/, into a folder of its own\\)$`));
    expect(report.warnings.join('\n')).not.toContain('safe to delete');
    expect(await fresh.getHead('README.md', 'summary')).toBe(base);
    expect((await fresh.getFrame(acked)).content).toBe('acknowledged');
  });

  it('a write stopped between the state journal and the rename: the frame is read from its temp file and kept', async () => {
    const { root, engine } = await openSample();
    const id = await engine.putFrame('README.md', { type: 'summary', content: 'committed' }, 'w');
    const file = join(root, '.merkle', 'frames', id.slice(0, 2), `${id}.json`);
    // The temp file of a writer that is gone: a pid above Linux's largest pid_max (2^22), so no live process has it
    // (pid 999 was alive on a CI machine once, and its temp file was taken for a write in progress).
    renameSync(file, `${file}.4194305.beef.tmp`);
    const fresh = await ContextEngine.open(root);
    expect((await fresh.getFrame(id)).content).toBe('committed');
    const report = await fresh.validate();
    expect(report.errors).toEqual([]);
    expect(report.warnings).toContain(`frame ${id} is stored only in ${file}.4194305.beef.tmp, a write stopped before its rename; keep the file (frames are read from it)`);
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
