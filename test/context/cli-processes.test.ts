import { execFile, spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { MERKLE_BIN, json, snapshotStore, tempDir, workspace } from './helpers.js';
import { plainEnv } from '../support/env.js';
import { trials } from '../support/soak.js';

/** Frames each of the two racing writers puts, one `merkle put-frame` process each: 4 in `npm test`, 12 in the soak. */
const FRAMES_EACH = trials(4, 12);

describe('merkle CLI: several processes, watch, isolation', () => {
  it('keeps workspaces isolated', async () => {
    const a = await workspace();
    const b = await workspace();
    const snapshotB = snapshotStore(b);
    const frameFile = join(tempDir(), 'f.json');
    writeFileSync(frameFile, JSON.stringify({ type: 'summary', content: 'only in a' }));
    await json(['--workspace', a, 'put-frame', 'README.md', frameFile, '--agent', 'w'], b);
    expect(snapshotStore(b)).toEqual(snapshotB);
    expect((await json(['status'], a)).frames).toBe(1);
    expect((await json(['status'], b)).frames).toBe(0);
  });

  it('two processes writing frames at once serialize on the workspace lock', async () => {
    const root = await workspace();
    const dir = tempDir();
    const script = (tag: string) =>
      `for i in $(seq ${FRAMES_EACH}); do printf '%s' "${tag} $i" > ${dir}/${tag}-$i.txt; "${process.execPath}" "${MERKLE_BIN}" put-frame README.md ${dir}/${tag}-$i.txt --agent w --type note > /dev/null || exit 1; done`;
    const run = (tag: string) =>
      new Promise<number>((resolve) => {
        execFile('sh', ['-c', script(tag)], { cwd: root }, (error, _out, stderr) => resolve(error === null ? 0 : (console.error(`put-frame failed: ${stderr}`), 1)));
      });
    // Meanwhile, a reader polls: it must never see a half-written state.
    const reader = await ContextEngine.open(root);
    let done = false;
    let reads = 0;
    let last = 0;
    const polling = (async () => {
      while (!done) {
        const count = (await reader.getNode('README.md', { maxFrames: 100 })).frameCount;
        expect(count).toBeGreaterThanOrEqual(last);
        last = count;
        reads++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const codes = await Promise.all([run('left'), run('right')]);
    done = true;
    await polling;
    expect(codes).toEqual([0, 0]);
    expect(reads).toBeGreaterThan(0);
    const frames = await json(['list-frames', 'README.md'], root);
    expect(frames).toHaveLength(2 * FRAMES_EACH);
    const node = await json(['get-node', 'README.md', '--max-frames', '100'], root);
    expect(node.frames.map((f: { content: string }) => f.content).sort()).toEqual(
      ['left', 'right'].flatMap((t) => Array.from({ length: FRAMES_EACH }, (_, i) => `${t} ${i + 1}`)).sort(),
    );
    expect(await json(['validate'], root)).toMatchObject({ ok: true, errors: [] });
  });

  it('watch rescans on change and prints the changed nodes until stopped', async () => {
    const root = await workspace();
    const child = spawn(process.execPath, [MERKLE_BIN, 'watch', '--debounce', '20'], { cwd: root, env: plainEnv() });
    let out = '';
    const seen = (text: string) =>
      new Promise<void>((resolve, reject) => {
        // Generous: on a loaded machine starting the process and its first scan can take seconds.
        const timer = setTimeout(() => reject(new Error(`timed out waiting for '${text}'; got: ${out}`)), 25_000);
        const check = () => {
          if (out.includes(text)) {
            clearTimeout(timer);
            resolve();
          } else setTimeout(check, 20);
        };
        check();
      });
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await seen('watching');
      writeFileSync(join(root, 'docs/guide.md'), 'changed guide\n');
      await seen('docs/guide.md');
      expect(out).toMatch(/root [0-9a-f]{64}\n {2}\.\n {2}docs\n {2}docs\/guide\.md/);
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });

  it('keeps the core free of CLI dependencies (of ours, it imports only the ground-floor modules)', () => {
    const dir = join(MERKLE_BIN, '..', '..', '..', 'src', 'context');
    for (const name of readdirSync(dir)) {
      const text = readFileSync(join(dir, name), 'utf8');
      expect(text, name).not.toMatch(/from '(commander|picocolors|cli-progress)'|from '\.\.\/(?!(fs|hash|redact)\/)/);
    }
  });
});
