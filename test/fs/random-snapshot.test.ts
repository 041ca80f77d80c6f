/**
 * Processes started from a V8 startup snapshot (`node --snapshot-blob`, a single executable application with
 * `useSnapshot`): what the package drew or read about its process while the snapshot was built (the pool of random
 * bytes, the id prefix, the host name, boot id and pid namespace that locks record) is drawn or read again in each
 * such process, never taken from the snapshot's heap (src/fs/snapshot.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const src = join(import.meta.dirname, '..', '..', 'src');

/** Bundles `code` (TypeScript importing src/ by absolute path) and builds a startup snapshot of it; returns the blob. */
function snapshotOf(dir: string, code: string): string {
  const entry = join(dir, 'entry.ts');
  writeFileSync(entry, code);
  const bundle = join(dir, 'entry.cjs');
  buildSync({ entryPoints: [entry], bundle: true, format: 'cjs', platform: 'node', outfile: bundle, logLevel: 'silent' });
  const blob = join(dir, 'snap.blob');
  execFileSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', bundle], { cwd: dir });
  return blob;
}

/** Whether this machine lets us start a process in new UTS and pid namespaces (root, and unshare(1) is there). */
const canUnshare = spawnSync('unshare', ['--uts', '--pid', '--fork', '--mount-proc', 'true']).status === 0;

describe('random values and a startup snapshot', () => {
  it('two processes started from one snapshot draw different run ids, event ids, temp names and tokens', () => {
    const dir = tempDir();
    const blob = snapshotOf(
      dir,
      `import { newEventId, newRunId } from ${JSON.stringify(join(src, 'events', 'ids.ts'))};
import { randomHex } from ${JSON.stringify(join(src, 'fs', 'random.ts'))};
import { tempBeside } from ${JSON.stringify(join(src, 'fs', 'temp-files.ts'))};
// Drawn while the snapshot is built: what a process restored from it must not repeat.
randomHex(8);
newRunId();
require('node:v8').startupSnapshot.setDeserializeMainFunction(() =>
  console.log(JSON.stringify({ run: newRunId().split('_')[2], event: newEventId(), temp: tempBeside('/d/run.json'), token: randomHex(8) })));
`,
    );
    const draw = (): Record<string, string> => JSON.parse(execFileSync(process.execPath, ['--snapshot-blob', blob], { cwd: dir, encoding: 'utf8' })) as Record<string, string>;
    const a = draw();
    const b = draw();
    for (const field of ['run', 'event', 'temp', 'token']) expect(a[field], field).not.toBe(b[field]);
  });

  // The host name and pid namespace differ only in another container: a restored process is started in new UTS and
  // pid namespaces, with a host name of its own (root and unshare(1) needed; CI runs as root).
  it.skipIf(!canUnshare)('a restored process records its own host name and pid namespace in a lock, not those of the process that built the snapshot', () => {
    const dir = tempDir();
    const blob = snapshotOf(
      dir,
      `import { tryLock } from ${JSON.stringify(join(src, 'fs', 'lock.ts'))};
// A lock taken while the snapshot is built fills the caches of this process's identity.
const built = tryLock(${JSON.stringify(join(dir, 'build.lock'))});
if ('release' in built) built.release();
require('node:v8').startupSnapshot.setDeserializeMainFunction(() => {
  const lock = tryLock(${JSON.stringify(join(dir, 'run.lock'))});
  console.log(require('node:fs').readFileSync(${JSON.stringify(join(dir, 'run.lock'))}, 'utf8'));
  console.log(require('node:fs').readlinkSync('/proc/self/ns/pid'));
  if ('release' in lock) lock.release();
});
`,
    );
    const out = execFileSync('unshare', ['--uts', '--pid', '--fork', '--mount-proc', 'sh', '-c', `hostname restored-host && exec ${JSON.stringify(process.execPath)} --snapshot-blob ${JSON.stringify(blob)}`], { cwd: dir, encoding: 'utf8' });
    const [record, namespace] = out.trim().split('\n');
    const holder = JSON.parse(record!) as { host: string; pidNs?: string };
    expect(holder.host).toBe('restored-host');
    expect(namespace).not.toBe(readlinkSync('/proc/self/ns/pid'));
    expect(holder.pidNs).toBe(namespace);
  });
});
