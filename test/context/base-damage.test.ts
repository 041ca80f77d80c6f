/**
 * A lost or replaced base file of the context store (`.merkle/tree`, `.merkle/state.json`) is reported like journal
 * damage: its witness records that a base was written, so a missing one is never read as "never written" (before,
 * status answered no tree or no frames in silence). The one crash that leaves no base, a first write cut after its
 * witness, stays silent. See `src/context/journal.ts`.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { loadHashBackend } from '../../src/context/hash.js';
import { JournaledFile } from '../../src/context/journal.js';
import { copyForUpdate, stateCodec } from '../../src/context/state-journal.js';
import { emptyState } from '../../src/context/state.js';
import { openSample, tempDir } from './helpers.js';

async function reader(root: string): Promise<{ engine: ContextEngine; warnings: string[] }> {
  const warnings: string[] = [];
  return { engine: await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) }), warnings };
}

/** A sample workspace with two summaries of README.md and a rescan: both journals hold entries. */
async function sample(): Promise<{ root: string; ids: string[]; scannedRoot: string }> {
  const { root, engine } = await openSample();
  const ids = [await engine.putFrame('README.md', { type: 'summary', content: 'one' }, 'w'), await engine.putFrame('README.md', { type: 'summary', content: 'two' }, 'w')];
  writeFileSync(join(root, 'docs/guide.md'), 'guide, edited\n');
  const scannedRoot = (await engine.scan()).root;
  await engine.close();
  return { root, ids, scannedRoot };
}

describe('a deleted base file is reported by every reader', () => {
  it('state.json deleted: status, getHead and listFrames warn naming it; validate fails naming it; writes wait for repair, which continues from the empty state', async () => {
    const { root } = await sample();
    const base = join(root, '.merkle', 'state.json');
    rmSync(base);
    const { engine, warnings } = await reader(root);
    const status = await engine.status();
    expect(status.frames).toBe(0);
    expect(status.warnings).toEqual([expect.stringMatching(/state\.json is missing: .*state\.witness records a base written at generation \d+ and commits up to generation \d+, so everything stored in it is lost/)]);
    expect(status.warnings[0]).toContain(base);
    expect(await engine.getHead('README.md', 'summary')).toBeNull();
    expect(await engine.listFrames('README.md')).toEqual([]);
    expect(warnings).toEqual(status.warnings);
    const report = await engine.validate();
    expect(report.ok).toBe(false);
    expect(report.errors[0]).toContain(`${base} is missing`);

    await expect(engine.putFrame('README.md', { type: 'summary', content: 'three' }, 'w')).rejects.toMatchObject({ code: 'CORRUPT_STORE', message: expect.stringContaining(`${base} is missing`) });
    const { repaired } = await engine.repair();
    // The frames of the lost state are kept, out of frames/.
    expect(repaired).toEqual([expect.stringContaining(`${base} is missing`), expect.stringMatching(/^2 frame files no frame set references .* kept in .*frames\.lost-/)]);
    expect(readdirSync(join(root, '.merkle')).filter((n) => n.startsWith('state.journal.damaged-'))).toHaveLength(1);
    const { engine: fresh, warnings: after } = await reader(root);
    expect((await fresh.status()).frames).toBe(0);
    const three = await fresh.putFrame('README.md', { type: 'summary', content: 'three' }, 'w');
    expect(await fresh.getHead('README.md', 'summary')).toBe(three);
    expect(after).toEqual([]);
  });

  it('tree deleted: status warns and answers no root, getHead fails naming it, validate fails, and a scan (or repair) rebuilds the tree', async () => {
    for (const fix of ['scan', 'repair'] as const) {
      const { root, ids, scannedRoot } = await sample();
      const base = join(root, '.merkle', 'tree');
      rmSync(base);
      const { engine, warnings } = await reader(root);
      const status = await engine.status();
      expect(status.root).toBeNull();
      expect(status.warnings).toEqual([expect.stringContaining(`${base} is missing: `)]);
      await expect(engine.getHead('README.md', 'summary')).rejects.toMatchObject({ code: 'CORRUPT_STORE', message: expect.stringContaining(`${base} is missing`) });
      expect(warnings).toEqual(status.warnings);
      const report = await engine.validate();
      expect(report.ok).toBe(false);
      expect(report.errors).toEqual([expect.stringContaining(`${base} is missing`)]);
      await expect(engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'w')).rejects.toMatchObject({ code: 'CORRUPT_STORE' });

      const repaired = fix === 'scan' ? (await engine.scan()).warnings : (await engine.repair()).repaired;
      expect(repaired).toEqual([expect.stringMatching(/tree is missing: .*; the tree was rebuilt from the workspace$/)]);
      const { engine: fresh, warnings: after } = await reader(root);
      expect((await fresh.status()).root).toBe(scannedRoot);
      expect(await fresh.getHead('README.md', 'summary')).toBe(ids[1]);
      expect(await fresh.validate()).toMatchObject({ ok: true, errors: [] });
      expect(after).toEqual([]);
    }
  });

  it('a base deleted with its witness (the journal left) is reported, naming the base', async () => {
    const { root } = await sample();
    for (const [base, witness, journal] of [
      ['state.json', 'state.witness', 'state.journal'],
      ['tree', 'tree.witness', 'tree.journal'],
    ]) {
      rmSync(join(root, '.merkle', base!));
      rmSync(join(root, '.merkle', witness!));
      expect(existsSync(join(root, '.merkle', journal!))).toBe(true);
    }
    const { engine } = await reader(root);
    const { warnings } = await engine.status();
    expect(warnings).toEqual([
      expect.stringContaining(`${join(root, '.merkle', 'tree')} is missing: ${join(root, '.merkle', 'tree.journal')} is there, and is only ever written after ${join(root, '.merkle', 'tree')}`),
      expect.stringContaining(`${join(root, '.merkle', 'state.json')} is missing: ${join(root, '.merkle', 'state.journal')} is there`),
    ]);
    expect((await engine.validate()).ok).toBe(false);
  });

  it('a base deleted with its journal, once commits followed its write, is reported (the witness records them)', async () => {
    const { root } = await sample();
    rmSync(join(root, '.merkle', 'state.json'));
    rmSync(join(root, '.merkle', 'state.journal'));
    const { engine } = await reader(root);
    expect((await engine.status()).warnings).toEqual([expect.stringContaining(`${join(root, '.merkle', 'state.json')} is missing`)]);
  });
});

describe('the state.json and tree files swapped', () => {
  it('every reader fails naming a file, validate names both, and repair accepts the loss (the frame state kept aside, the tree rebuilt)', async () => {
    const { root, scannedRoot } = await sample();
    const state = join(root, '.merkle', 'state.json');
    const tree = join(root, '.merkle', 'tree');
    const [stateBytes, treeBytes] = [readFileSync(state), readFileSync(tree)];
    writeFileSync(state, treeBytes);
    writeFileSync(tree, stateBytes);
    const { engine } = await reader(root);
    await expect(engine.status()).rejects.toMatchObject({ code: 'CORRUPT_STORE', message: expect.stringContaining(tree) });
    await expect(engine.getHead('README.md', 'summary')).rejects.toMatchObject({ code: 'CORRUPT_STORE', message: expect.stringContaining(tree) });
    const report = await engine.validate();
    expect(report.errors).toEqual([expect.stringContaining(`corrupt tree file ${tree}`), expect.stringContaining(`corrupt store file ${state}`)]);

    const { repaired } = await engine.repair();
    expect(repaired).toEqual([
      expect.stringMatching(new RegExp(`^corrupt store file ${state.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: .*; it is kept as .*state\\.json\\.damaged-.*; .*state\\.json is missing: `)),
      expect.stringMatching(/^\d+ frame files? no frame set references .* kept in .*frames\.lost-/),
      expect.stringContaining(`rebuilt the tree from the workspace: corrupt tree file ${tree}`),
    ]);
    const kept = readdirSync(join(root, '.merkle')).filter((n) => n.startsWith('state.json.damaged-'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(root, '.merkle', kept[0]!)).equals(treeBytes)).toBe(true);
    const { engine: fresh, warnings } = await reader(root);
    expect(await fresh.status()).toMatchObject({ root: scannedRoot, frames: 0, warnings: [] });
    expect(warnings).toEqual([]);
  });
});

describe('a crash stays silent', () => {
  it('a first write cut after its witness (no base, no journal) reads as never written, as does a second such crash; a base deleted later is damage', async () => {
    const dir = tempDir('merkle-first-write-');
    const backend = await loadHashBackend();
    const file = join(dir, 'state.json');
    const journal = join(dir, 'state.journal');
    const store = () => new JournaledFile(file, journal, stateCodec(backend), backend);
    const state = { ...copyForUpdate(emptyState()), seq: 1 };
    for (let crash = 0; crash < 2; crash++) {
      store().write(state);
      // The crash: the witness was written (fsynced, renamed), the base and the journal not yet.
      rmSync(file);
      rmSync(journal);
      expect(store().read()).toBeUndefined();
    }
    const written = store();
    written.write(state);
    written.append({ ...state, seq: 2 }, { seq: 2, frames: {}, heads: {}, stale: {}, basis: {} });
    expect(store().read()).toMatchObject({ value: { seq: 2 }, damage: undefined });
    rmSync(file);
    rmSync(journal);
    expect(store().read()).toEqual({ damage: expect.stringMatching(/state\.json is missing: .*state\.witness records a base written at generation 1 and commits up to generation 2/) });
  });
});

describe('a deleted witness (base and journal there)', () => {
  it('is reported by every reader and validate, and repair ends the report', async () => {
    const { root, ids } = await sample();
    const witness = join(root, '.merkle', 'state.witness');
    rmSync(witness);
    const { engine, warnings } = await reader(root);
    expect(await engine.getHead('README.md', 'summary')).toBe(ids[1]);
    expect(warnings).toEqual([expect.stringContaining(`${witness} is missing, so an older copy of`)]);
    expect((await engine.validate()).errors).toEqual([expect.stringContaining(`${witness} is missing`)]);
    await engine.repair();
    const { engine: fresh, warnings: after } = await reader(root);
    expect(await fresh.getHead('README.md', 'summary')).toBe(ids[1]);
    expect(after).toEqual([]);
    expect(existsSync(witness)).toBe(true);
  });
});
