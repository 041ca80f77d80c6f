import { spawn } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { bundledScript } from '../support/bundle.js';
import { trials } from '../support/soak.js';
import { openSample } from './helpers.js';

const writer = await bundledScript(join(import.meta.dirname, 'fixtures', 'validate-race-writer.ts'));
/** Frames each writer puts while validate runs. */
const FRAMES = trials(40, 80);

/** A child process that puts `count` frames on `node`, one transaction each, then exits. */
function putFrames(root: string, node: string, count: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [writer, root, node, String(count)], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => resolve(code));
  });
}

/** Frame ids whose final file is under `.merkle/frames/`. */
function frameFiles(root: string): string[] {
  const dir = join(root, '.merkle', 'frames');
  return readdirSync(dir).flatMap((shard) => readdirSync(join(dir, shard)).map((name) => join(dir, shard, name)));
}

describe('validate while writers run in other processes', () => {
  it('reports no error and calls no live writer\'s temp file safe to delete', async () => {
    const { root, engine } = await openSample();
    const writers = [putFrames(root, 'src/main.ts', FRAMES), putFrames(root, 'README.md', FRAMES)];
    let done = false;
    void Promise.all(writers).then(() => (done = true));
    const problems: string[] = [];
    let runs = 0;
    while (!done) {
      const report = await engine.validate();
      runs++;
      problems.push(...report.errors, ...report.warnings.filter((w) => /safe to delete|stored only in/.test(w)));
      await new Promise((resolve) => setImmediate(resolve)); // lets the writers' exits be seen
    }
    expect(await Promise.all(writers)).toEqual([0, 0]);
    expect(runs).toBeGreaterThan(5);
    expect(problems).toEqual([]);
    expect((await engine.validate()).ok).toBe(true);
  }, 120_000);

  it('judges a temp frame file by its writer: a live one is left alone, a dead one\'s is safe to delete', async () => {
    const { root, engine } = await openSample();
    const id = await engine.putFrame('README.md', { type: 'note', content: 'x' }, 'w');
    const shard = join(root, '.merkle', 'frames', id.slice(0, 2));
    const other = `${'ab'.repeat(32)}.json`;
    writeFileSync(join(shard, `${other}.${process.pid}.0011aabb.tmp`), 'being written');
    const dead = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.on('exit', () => resolve(child.pid!));
    });
    writeFileSync(join(shard, `${other}.${dead}.0011aabb.tmp`), 'interrupted');
    const report = await engine.validate();
    expect(report.errors).toEqual([]);
    expect(report.warnings.filter((w) => w.includes('.tmp'))).toEqual([`leftover file ${join(shard, `${other}.${dead}.0011aabb.tmp`)} (an interrupted write that never committed); safe to delete`]);
  });
});

describe('getNode with a frame file deleted', () => {
  it('skips that frame with a warning naming it and returns the others', async () => {
    const { root } = await openSample();
    const told: string[] = [];
    const engine = await ContextEngine.open(root, { onWarning: (m) => told.push(m) });
    const kept = await engine.putFrame('README.md', { type: 'a', content: 'kept' }, 'w');
    const lost = await engine.putFrame('README.md', { type: 'b', content: 'lost' }, 'w');
    rmSync(frameFiles(root).find((f) => f.includes(lost))!);
    const node = await engine.getNode('README.md');
    expect(node.frames.map((f) => f.frameId)).toEqual([kept]);
    expect(node.frameCount).toBe(2);
    expect(told).toEqual([expect.stringMatching(new RegExp(`^getNode: frame ${lost} not found at .*\\(a frame of 'README.md'\\); skipped`))]);
  });
});
