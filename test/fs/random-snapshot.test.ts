/**
 * Random names and ids in processes started from a V8 startup snapshot (`node --snapshot-blob`, a single executable
 * application with `useSnapshot`): the pool of random bytes (src/fs/random.ts) and the process's id prefix
 * (src/events/ids.ts) are drawn again in each such process, never taken from the snapshot's heap.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const src = join(import.meta.dirname, '..', '..', 'src');

describe('random values and a startup snapshot', () => {
  it('two processes started from one snapshot draw different run ids, event ids, temp names and tokens', () => {
    const dir = tempDir();
    const entry = join(dir, 'entry.ts');
    writeFileSync(
      entry,
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
    const bundle = join(dir, 'entry.cjs');
    buildSync({ entryPoints: [entry], bundle: true, format: 'cjs', platform: 'node', outfile: bundle, logLevel: 'silent' });
    const blob = join(dir, 'snap.blob');
    execFileSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', bundle], { cwd: dir });
    const draw = (): Record<string, string> => JSON.parse(execFileSync(process.execPath, ['--snapshot-blob', blob], { cwd: dir, encoding: 'utf8' })) as Record<string, string>;
    const a = draw();
    const b = draw();
    for (const field of ['run', 'event', 'temp', 'token']) expect(a[field], field).not.toBe(b[field]);
  });
});
