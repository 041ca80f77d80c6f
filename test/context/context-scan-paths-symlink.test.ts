/**
 * "Symlinks inside the workspace are recorded as links, never followed" (README), also for a scan limited to paths
 * (`scan({ paths })`, which `watch` calls with the watcher's paths): a path under a symlinked directory is rescanned
 * from the link's folder, never through the link, and the watcher does not follow links. Found by the adversarial
 * review of 2026-11-28: the directories to re-walk were picked with an lstat that followed a link in any component
 * but the last, and chokidar followed links.
 */
import { mkdtempSync, mkdirSync, writeFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';

function setup(): { w: string; outside: string } {
  const outside = mkdtempSync(join(tmpdir(), 'audit-s21e-outside-'));
  mkdirSync(join(outside, 'sub'));
  writeFileSync(join(outside, 'sub', 'secret.txt'), 'outside the workspace');
  const w = mkdtempSync(join(tmpdir(), 'audit-s21e-ws-'));
  writeFileSync(join(w, 'a.txt'), 'a');
  symlinkSync(outside, join(w, 'outlink'));
  return { w, outside };
}

describe('scan({ paths }) and watch through a symlinked directory', () => {
  it('scan({ paths: [a path under a symlink] }) does not read outside the workspace, and the tree stays valid', async () => {
    const { w } = setup();
    const e = await ContextEngine.open(w, { onWarning: () => undefined });
    await e.scan();
    const report = await e.scan({ paths: ['outlink/sub/secret.txt'] });
    expect(report.changedPaths).toEqual([]);
    expect(report.nodes).toBe(3); // '', a.txt, outlink (a symlink leaf)
    await e.registerAgent({ agentId: 'w', role: 'writer' });
    await expect(e.putFrame('outlink/sub/secret.txt', { type: 'summary', content: 'x' }, 'w')).rejects.toMatchObject({ code: 'UNKNOWN_NODE' });
    const v = await e.validate();
    expect(v.errors).toEqual([]);
  });

  it('watch: a change in the directory a symlink points to does not put outside files into the tree', async () => {
    const { w, outside } = setup();
    const e = await ContextEngine.open(w, { onWarning: () => undefined });
    await e.scan();
    const changes: (readonly string[])[] = [];
    const triggers: string[] = [];
    const watcher = await e.watch(
      (ev) => {
        changes.push(ev.changedPaths);
        triggers.push(...ev.triggers);
      },
      { debounceMs: 20 },
    );
    try {
      writeFileSync(join(outside, 'sub', 'secret.txt'), 'changed outside the workspace');
      writeFileSync(join(outside, 'sub', 'new.txt'), 'new outside the workspace');
      // A change inside the workspace, made after them: once the watch has reported it, it has had every event of the
      // writes before it (a watcher following the link would have had them first), and a few quiet periods more.
      writeFileSync(join(w, 'after.txt'), 'inside');
      for (const deadline = Date.now() + 20_000; !changes.flat().includes('after.txt'); ) {
        if (Date.now() > deadline) throw new Error('the watch never reported after.txt');
        await new Promise((r) => setTimeout(r, 10));
      }
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await watcher.close();
    }
    expect((await e.listNodes()).map((n) => n.path).filter((p) => p.startsWith('outlink/'))).toEqual([]);
    expect(changes.flat().filter((p) => p.startsWith('outlink/'))).toEqual([]);
    expect(triggers.filter((p) => p.startsWith('outlink/'))).toEqual([]);
    expect((await e.validate()).errors).toEqual([]);
  });
});
