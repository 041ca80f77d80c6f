// Child of store-entry.property.test.ts: for each `.merkle/` entry named on the command line, sets up a scanned
// workspace with an agent and a frame, replaces that entry with one of `kind` (see KINDS below), runs every command
// against it and prints one JSON line per command started and finished, then one listing what changed outside the
// workspace. A command that hangs leaves its "start" line last: the parent's timeout reports it.
import { cpSync, mkdirSync, readdirSync, readFileSync, lstatSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { ContextEngine } from '../../src/context/index.js';

// `secret` starts the outside file that symlinks of kind `symlink-to-secret` point at: no output may quote it.
const [base, kind, secret, ...entries] = process.argv.slice(2) as [string, string, string, ...string[]];
setTimeout(() => process.exit(3), 120_000).unref();

function say(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Every entry under `dir` (links not followed) with what it is and the hash of a file's bytes. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string, rel: string): void => {
    const stat = lstatSync(abs);
    if (stat.isSymbolicLink()) out[rel] = `link ${readlinkSync(abs)}`;
    else if (stat.isDirectory()) {
      out[rel] = 'dir';
      for (const name of readdirSync(abs)) walk(join(abs, name), `${rel}/${name}`);
    } else if (stat.isFile()) out[rel] = `file ${createHash('sha256').update(readFileSync(abs)).digest('hex')} ${stat.mtimeMs}`;
    else out[rel] = 'other';
  };
  walk(dir, '');
  return out;
}

/** Replaces `path` (an entry of `.merkle/`, `isDir` when the engine keeps a directory there) with one of `kind`. */
function plant(path: string, isDir: boolean, outside: string): void {
  const copy = join(outside, 'copy');
  rmSync(copy, { recursive: true, force: true });
  try {
    cpSync(path, copy, { recursive: true });
  } catch {
    writeFileSync(copy, 'not written by the engine\n'); // the lock: there is none between commands
  }
  rmSync(path, { recursive: true, force: true });
  if (kind === 'symlink-to-copy') symlinkSync(copy, path);
  else if (kind === 'symlink-to-dir') symlinkSync(join(outside, 'victim'), path);
  else if (kind === 'symlink-to-secret') symlinkSync(join(outside, 'secret.txt'), path);
  else if (kind === 'fifo') execFileSync('mkfifo', [path]);
  else if (kind === 'wrong-type') {
    if (isDir) writeFileSync(path, 'a file where a directory belongs\n');
    else mkdirSync(path);
  } else throw new Error(`unknown kind ${kind}`);
}

const commands: [string, (engine: ContextEngine, root: string) => Promise<unknown>][] = [
  ['status', (e) => e.status()],
  ['validate', (e) => e.validate()],
  ['get-node', (e) => e.getNode('a.txt')],
  ['agent add', (e) => e.registerAgent({ agentId: 'x', role: 'reader' })],
  ['put-frame (new)', (e) => e.putFrame('a.txt', { type: 'note', content: 'second' }, 'w')],
  ['put-frame (same)', (e) => e.putFrame('a.txt', { type: 'note', content: 'first' }, 'w')],
  [
    'scan',
    (e, root) => {
      writeFileSync(join(root, 'a.txt'), 'changed\n');
      return e.scan();
    },
  ],
  ['scan --force', (e) => e.scan({ force: true })],
  ['repair', (e) => e.repair()],
  ['status (after)', (e) => e.status()],
];

for (let i = 0; i < entries.length; i++) {
  const entry = entries[i];
  const root = join(base, String(i), 'ws');
  const outside = join(base, String(i), 'outside');
  mkdirSync(root, { recursive: true });
  mkdirSync(join(outside, 'victim'), { recursive: true });
  for (const name of ['tree', 'tree.stat', 'tree.witness', 'agents.json', 'state.json', 'lock']) writeFileSync(join(outside, 'victim', name), `user file ${name}\n`);
  writeFileSync(join(outside, 'secret.txt'), `${secret}\n`);
  writeFileSync(join(root, 'a.txt'), 'a\n');
  const setup = await ContextEngine.open(root, { lockTimeoutMs: 300 });
  await setup.scan();
  await setup.registerAgent({ agentId: 'w', role: 'writer' });
  const frameId = await setup.putFrame('a.txt', { type: 'note', content: 'first' }, 'w');
  await setup.close();
  // `shard` and `frame` name the directory and the file of the frame just written.
  const shard = join(root, '.merkle', 'frames', frameId.slice(0, 2));
  const path = entry === '.' ? join(root, '.merkle') : entry === 'shard' ? shard : entry === 'frame' ? join(shard, `${frameId}.json`) : join(root, '.merkle', entry);
  plant(path, entry === '.' || entry === 'frames' || entry === 'shard', outside);
  const before = snapshot(outside);
  for (const [name, run] of commands) {
    say({ entry, kind, path, command: name, started: true });
    const engine = await ContextEngine.open(root, { lockTimeoutMs: 300 });
    try {
      const result = await run(engine, root);
      say({ entry, kind, path, command: name, ok: true, result });
    } catch (error) {
      say({ entry, kind, path, command: name, ok: false, error: (error as Error).message });
    } finally {
      await engine.close();
    }
  }
  const after = snapshot(outside);
  const changed = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => before[k] !== after[k]);
  say({ entry, kind, path, outsideChanged: changed });
}
say({ done: true });
