/**
 * The first write of a journaled store file (the first scan's tree, the first frame's state) renames its base into
 * place and then writes its empty journal. A reader between the two (another process's `status` or `validate` while
 * the first `put-frame` runs) finds the base and the witness of that write but no journal: nothing acknowledged is
 * lost, so it is no damage (it was reported as "state.journal is missing", an error from validate).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { tempDir, writeTree } from './helpers.js';

describe('a store read between the first write of a base and of its journal', () => {
  it.each(['tree.journal', 'state.journal'])('without %s yet: no damage, and the next write goes on', async (journal) => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a\n' });
    const engine = await ContextEngine.open(root);
    await engine.scan();
    await engine.registerAgent({ agentId: 'w', role: 'writer' });
    await engine.putFrame('a.txt', { type: 'note', content: 'first' }, 'w');
    // Where a reader finds the store while the first write of that file is between its two renames.
    rmSync(join(root, '.merkle', journal));
    const reader = await ContextEngine.open(root);
    expect(await reader.status()).toMatchObject({ frames: 1, warnings: [] });
    expect(await reader.validate()).toMatchObject({ ok: true, errors: [] });
    await reader.putFrame('a.txt', { type: 'note', content: 'second' }, 'w');
    writeTree(root, { 'a.txt': 'changed\n' });
    await reader.scan();
    expect(await (await ContextEngine.open(root)).status()).toMatchObject({ frames: 2, warnings: [] });
  });
});
