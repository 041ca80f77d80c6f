/**
 * The journals of the context store (`.merkle/tree.journal`, `.merkle/state.journal`) tell damage from a crash: a
 * committed byte missing or bad, or a missing journal, is reported by every reader and by validate (finding 7 of the
 * store audit); bytes an append left after the committed length (a crash before the write was acknowledged) are
 * ignored in silence. See `src/context/journal.ts`.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { loadHashBackend } from '../../src/context/hash.js';
import { JournaledFile } from '../../src/context/journal.js';
import { stateCodec } from '../../src/context/state-journal.js';
import { backdate, openSample, runMerkle } from './helpers.js';

/** Where the commit record (committed length and its check) sits in a journal's header. */
const COMMIT_OFFSET = 84;

async function reader(root: string): Promise<{ engine: ContextEngine; warnings: string[] }> {
  const warnings: string[] = [];
  return { engine: await ContextEngine.open(root, { onWarning: (m) => warnings.push(m) }), warnings };
}

/** A sample workspace with three summaries of README.md put one after the other; their ids in order. */
async function threeHeads(): Promise<{ root: string; engine: ContextEngine; ids: string[]; journals: Buffer[]; witnesses: Buffer[] }> {
  const { root, engine } = await openSample();
  const ids: string[] = [];
  const journals: Buffer[] = [];
  const witnesses: Buffer[] = [];
  for (const content of ['v1', 'v2', 'v3']) {
    ids.push(await engine.putFrame('README.md', { type: 'summary', content }, 'w'));
    journals.push(readFileSync(join(root, '.merkle', 'state.journal')));
    witnesses.push(readFileSync(join(root, '.merkle', 'state.witness')));
  }
  return { root, engine, ids, journals, witnesses };
}

describe('a damaged or missing journal is reported by every reader', () => {
  it('state.journal deleted (the audit repro): status, getHead and listFrames warn naming it; validate fails; writes are refused until repair', async () => {
    const { root, ids } = await threeHeads();
    const journal = join(root, '.merkle', 'state.journal');
    rmSync(journal);
    const { engine, warnings } = await reader(root);
    const status = await engine.status();
    expect(status.warnings).toEqual([expect.stringContaining(`${journal} is missing`)]);
    expect(await engine.getHead('README.md', 'summary')).toBe(ids[0]); // state.json alone: the first transaction
    expect(await engine.listFrames('README.md')).toHaveLength(1);
    expect(warnings).toEqual([expect.stringMatching(new RegExp(`^${journal.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is missing: every change journaled since .*state\\.json was last written is lost`))]);
    const report = await engine.validate();
    expect(report.ok).toBe(false);
    expect(report.errors[0]).toContain(`${journal} is missing`);

    await expect(engine.putFrame('README.md', { type: 'summary', content: 'v4' }, 'w')).rejects.toMatchObject({
      code: 'CORRUPT_STORE',
      message: expect.stringMatching(/state\.journal is missing: .*then 'backpackflow context repair' to continue from the state that survives/),
    });
    // Before the repair, validate reports the frames of the lost transactions (never as safe to delete).
    const before = (await engine.validate()).errors.filter((e) => e.includes('is referenced by no frame set'));
    expect(before).toHaveLength(2);
    for (const lost of [ids[1], ids[2]]) expect(before.join('\n')).toContain(`${lost}.json is referenced by no frame set`);
    const { repaired } = await engine.repair();
    expect(repaired).toEqual([
      expect.stringContaining(`${journal} is missing`),
      expect.stringMatching(/^2 frame files no frame set references .* moved out of frames\/ and kept in .*frames\.lost-/),
    ]);
    const { engine: fresh, warnings: after } = await reader(root);
    expect(await fresh.getHead('README.md', 'summary')).toBe(ids[0]);
    const v4 = await fresh.putFrame('README.md', { type: 'summary', content: 'v4' }, 'w');
    expect(await fresh.getHead('README.md', 'summary')).toBe(v4);
    expect(after).toEqual([]);
    // The frames of the lost transactions are kept, out of frames/, byte for byte: validate passes (audit F11).
    expect(await fresh.validate()).toMatchObject({ ok: true, errors: [] });
    const kept = readdirSync(join(root, '.merkle')).filter((n) => n.startsWith('frames.lost-'));
    expect(kept).toHaveLength(1);
    for (const lost of [ids[1], ids[2]]) {
      const file = join(root, '.merkle', kept[0]!, lost!.slice(0, 2), `${lost}.json`);
      expect(existsSync(file)).toBe(true);
      expect(existsSync(join(root, '.merkle', 'frames', lost!.slice(0, 2), `${lost}.json`))).toBe(false);
    }
    // A repair with nothing left to do changes nothing.
    expect((await fresh.repair()).repaired).toEqual([]);
  });

  it('repair also takes out frame files an earlier repair left in frames/ (validate failed on them with no way out)', async () => {
    const { root, ids } = await threeHeads();
    // A frame file no frame set references, as a version whose repair kept them in frames/ left it.
    const state = join(root, '.merkle', 'frames', ids[2]!.slice(0, 2), `${ids[2]}.json`);
    const copy = 'f'.repeat(64);
    mkdirSync(join(root, '.merkle', 'frames', 'ff'), { recursive: true });
    copyFileSync(state, join(root, '.merkle', 'frames', 'ff', `${copy}.json`));
    const { engine } = await reader(root);
    expect((await engine.validate()).errors).toEqual([expect.stringContaining(`${copy}.json is referenced by no frame set`)]);
    const { repaired } = await engine.repair();
    expect(repaired).toEqual([expect.stringMatching(/^1 frame file no frame set references/)]);
    expect((await engine.validate()).ok).toBe(true);
    expect((await engine.listFrames('README.md')).map((f) => f.frameId)).toEqual(ids);
  });

  it('a journal cut exactly where its last committed entry starts: warned with the bytes lost, never a RangeError (found by the validate race soak)', async () => {
    const { root, ids, journals } = await threeHeads();
    const journal = join(root, '.merkle', 'state.journal');
    // The third commit's header (its committed length counts the third entry) over the bytes of the first two.
    writeFileSync(journal, Buffer.concat([journals[2]!.subarray(0, COMMIT_OFFSET + 8), journals[1]!.subarray(COMMIT_OFFSET + 8)]));
    const { engine, warnings } = await reader(root);
    expect(await engine.getHead('README.md', 'summary')).toBe(ids[1]);
    expect(warnings).toEqual([expect.stringMatching(/state\.journal is damaged: committed bytes \d+-\d+ \(\d+ bytes, of which \d+ are missing \(the file was cut\)\) fail their checksum/)]);
    const report = await engine.validate();
    expect(report.errors).toEqual(expect.arrayContaining([expect.stringContaining(`${journal} is damaged`)]));
    expect(report.errors.join('\n')).not.toMatch(/out of range/);
  });

  it('a byte flipped in a committed state journal entry, or its tail cut: warned with the bytes lost; a damaged journal is kept aside by repair', async () => {
    for (const damage of ['flip', 'cut'] as const) {
      const { root, ids } = await threeHeads();
      const journal = join(root, '.merkle', 'state.journal');
      const bytes = readFileSync(journal);
      if (damage === 'flip') bytes[bytes.length - 10]! ^= 0x20;
      writeFileSync(journal, damage === 'flip' ? bytes : bytes.subarray(0, bytes.length - 20));
      const { engine, warnings } = await reader(root);
      expect(await engine.getHead('README.md', 'summary')).toBe(ids[1]);
      expect(warnings).toEqual([expect.stringMatching(/state\.journal is damaged: committed bytes \d+-\d+ \(\d+ bytes.*\) fail their checksum, so the changes they held and any after them are lost/)]);
      expect(warnings[0]!.includes('missing (the file was cut)')).toBe(damage === 'cut');
      await engine.repair();
      expect(readdirSync(join(root, '.merkle')).filter((n) => n.startsWith('state.journal.damaged-'))).toHaveLength(1);
    }
  });

  it('a repair stopped before it writes the state that survives leaves the journal in place: the next repair keeps every frame it said survive', async () => {
    const { root, ids } = await threeHeads();
    const journal = join(root, '.merkle', 'state.journal');
    const before = readFileSync(journal);
    // Damage whose entries still apply: the witness is gone, the three transactions read.
    rmSync(join(root, '.merkle', 'state.witness'));
    const { engine } = await reader(root);
    expect(await engine.listFrames('README.md')).toHaveLength(3);
    // The process dies at the write of the new base (after the damaged journal was copied aside).
    const write = vi.spyOn(JournaledFile.prototype, 'write').mockImplementationOnce(() => {
      throw new Error('killed before the new base was written');
    });
    try {
      await expect(engine.repair()).rejects.toThrow(/killed before the new base/);
    } finally {
      write.mockRestore();
    }
    expect(readFileSync(journal)).toEqual(before);
    const { engine: again } = await reader(root);
    expect(await again.listFrames('README.md')).toHaveLength(3);
    const { repaired } = await again.repair();
    expect(repaired).toEqual([expect.stringMatching(/state\.witness is missing.*the damaged journal is kept as .*state\.journal\.damaged-/)]);
    const { engine: after, warnings } = await reader(root);
    expect((await after.listFrames('README.md')).map((f) => f.frameId)).toEqual(ids);
    expect(await after.getHead('README.md', 'summary')).toBe(ids[2]);
    expect(warnings).toEqual([]);
    expect((await after.validate()).ok).toBe(true);
  });

  it('tree.journal deleted: status warns and shows the older root, validate is not ok, and the next scan rebuilds the tree', async () => {
    const { root, engine } = await openSample();
    const before = (await engine.status()).root;
    writeFileSync(join(root, 'README.md'), '# changed\n');
    backdate(root, ['README.md']); // an edit well before the scans: not in their racy windows
    const scanned = await engine.scan();
    const journal = join(root, '.merkle', 'tree.journal');
    rmSync(journal);
    const { engine: fresh, warnings } = await reader(root);
    const status = await fresh.status();
    expect(status.root).toBe(before);
    expect(status.warnings).toEqual([expect.stringContaining(`${journal} is missing`)]);
    expect(warnings).toHaveLength(1);
    const report = await fresh.validate();
    expect(report.ok).toBe(false);
    expect(report.errors).toEqual([expect.stringContaining(`${journal} is missing`)]);
    await expect(fresh.putFrame('README.md', { type: 'summary', content: 'x' }, 'w')).rejects.toMatchObject({ code: 'CORRUPT_STORE' });
    const rescan = await fresh.scan();
    expect(rescan).toMatchObject({ root: scanned.root, warnings: [expect.stringContaining(`${journal} is missing`)] });
    const { engine: after, warnings: none } = await reader(root);
    expect((await after.status()).root).toBe(scanned.root);
    expect((await after.validate()).ok).toBe(true);
    expect(await after.scan()).toMatchObject({ changed: false, hashed: 0, warnings: [] });
    expect(none).toEqual([]);
  });

  it('a damaged tree journal is seen by the scan that takes the stat index path, which rebuilds instead of answering "no changes"', async () => {
    const { root, engine } = await openSample();
    writeFileSync(join(root, 'README.md'), '# changed\n');
    const scanned = await engine.scan();
    const journal = join(root, '.merkle', 'tree.journal');
    const bytes = readFileSync(journal);
    bytes[bytes.length - 3]! ^= 0x01;
    writeFileSync(journal, bytes);
    const { engine: fresh } = await reader(root);
    const rescan = await fresh.scan();
    expect(rescan.root).toBe(scanned.root);
    expect(rescan.warnings).toEqual([expect.stringMatching(/tree\.journal is damaged: .*; the tree was rebuilt from the workspace$/)]);
    expect((await (await ContextEngine.open(root)).validate()).ok).toBe(true);
  });
});

describe('a crash before an append was acknowledged stays silent', () => {
  it('a whole entry written but not yet committed (killed between its two writes) is ignored, and the next write replaces it', async () => {
    const { root, ids, journals, witnesses } = await threeHeads();
    const journal = join(root, '.merkle', 'state.journal');
    // The third transaction's entry is on disk, the commit record (and the witness) still that of the second; its
    // frame still staged.
    const interrupted = Buffer.from(journals[2]!);
    journals[1]!.copy(interrupted, COMMIT_OFFSET, COMMIT_OFFSET, COMMIT_OFFSET + 8);
    writeFileSync(journal, interrupted);
    writeFileSync(join(root, '.merkle', 'state.witness'), witnesses[1]!);
    const frame = join(root, '.merkle', 'frames', ids[2]!.slice(0, 2), `${ids[2]}.json`);
    renameSync(frame, `${frame}.123.abcd.tmp`);
    const { engine, warnings } = await reader(root);
    expect(await engine.getHead('README.md', 'summary')).toBe(ids[1]);
    expect((await engine.status()).warnings).toEqual([]);
    const report = await engine.validate();
    expect(report.errors).toEqual([]);
    expect(report.warnings).toContain(`state journal: ${journal}: ${interrupted.length - journals[1]!.length} bytes after the last committed entry (at byte ${journals[1]!.length}) are ignored (an append interrupted before it was acknowledged)`);
    const next = await engine.putFrame('docs/guide.md', { type: 'summary', content: 'next' }, 'w');
    expect(warnings).toEqual([]);
    const { engine: after } = await reader(root);
    expect(await after.getHead('README.md', 'summary')).toBe(ids[1]);
    expect(await after.getHead('docs/guide.md', 'summary')).toBe(next);
    expect(readFileSync(journal).subarray(COMMIT_OFFSET + 8, journals[1]!.length).equals(journals[1]!.subarray(COMMIT_OFFSET + 8))).toBe(true);
  });

  it('an entry cut short after the committed length (a torn append) is ignored in silence, by readers and validate', async () => {
    const { root, ids, journals, witnesses } = await threeHeads();
    const journal = join(root, '.merkle', 'state.journal');
    const torn = Buffer.concat([journals[1]!, journals[2]!.subarray(journals[1]!.length, journals[1]!.length + 20)]);
    writeFileSync(journal, torn);
    writeFileSync(join(root, '.merkle', 'state.witness'), witnesses[1]!);
    rmSync(join(root, '.merkle', 'frames', ids[2]!.slice(0, 2), `${ids[2]}.json`));
    const { engine, warnings } = await reader(root);
    expect(await engine.getHead('README.md', 'summary')).toBe(ids[1]);
    expect((await engine.validate()).ok).toBe(true);
    expect(warnings).toEqual([]);
  });

  it('the old journal of a base rewrite interrupted after its rename (it names the old base) is ignored in silence', async () => {
    const { root, ids } = await threeHeads();
    const file = join(root, '.merkle', 'state.json');
    const journal = join(root, '.merkle', 'state.journal');
    const old = readFileSync(journal);
    const backend = await loadHashBackend();
    const store = new JournaledFile(file, journal, stateCodec(backend), backend);
    store.write(store.read()!.value!); // the rewrite: a new base holding every entry, and an empty journal
    writeFileSync(journal, old); // as if the crash came before the new journal was renamed into place
    const { engine, warnings } = await reader(root);
    expect(await engine.getHead('README.md', 'summary')).toBe(ids[2]);
    expect((await engine.validate()).ok).toBe(true);
    expect(warnings).toEqual([]);
  });
});

describe('the command line', () => {
  it('status and get-head name the damaged journal on stderr, validate exits 1, repair continues', async () => {
    const { root, ids } = await threeHeads();
    const journal = join(root, '.merkle', 'state.journal');
    rmSync(journal);
    const status = await runMerkle(['status', '--json'], root);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ frames: 1, warnings: [expect.stringContaining(`${journal} is missing`)] });
    expect(status.stderr).toContain(`merkle: warning: ${journal} is missing`);
    const head = await runMerkle(['get-head', 'README.md', '--type', 'summary'], root);
    expect(head).toMatchObject({ code: 0, stdout: `${ids[0]}\n` });
    expect(head.stderr).toContain(`warning: ${journal} is missing`);
    expect((await runMerkle(['validate'], root)).code).toBe(1);
    const repair = await runMerkle(['repair'], root);
    expect(repair.code).toBe(0);
    expect(repair.stdout).toContain(`${journal} is missing`);
    const again = await runMerkle(['get-head', 'README.md', '--type', 'summary'], root);
    expect(again).toMatchObject({ code: 0, stdout: `${ids[0]}\n`, stderr: '' });
    expect(existsSync(journal)).toBe(true);
  });
});
