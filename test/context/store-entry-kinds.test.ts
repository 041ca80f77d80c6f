/**
 * A hostile `.merkle/`: for every entry of the store (the folder itself, `frames/`, a frame's shard, a frame file, each
 * store file and the lock) and every kind of entry that is not what the engine keeps there (a symlink to an outside
 * copy of it, to an outside directory of user files or to an outside file of secrets, a FIFO, a directory where a file
 * belongs or a file where a directory belongs), every command works or fails with an error naming the entry and what
 * it is; none hangs (a child process runs them under a timeout), nothing outside the workspace changes, and no
 * output quotes the outside file. The domain is small, so every case runs (one child per kind).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { runJsonLinesChild, type ChildReport } from '../support/json-lines-child.js';
import { makeTempDir } from '../support/temp.js';

const child = await bundledScript(join(import.meta.dirname, 'store-entry-child.ts'));
const SECRET = 'Zq9XK-private root:x:0:0';
const KINDS = ['symlink-to-copy', 'symlink-to-dir', 'symlink-to-secret', 'fifo', 'wrong-type'] as const;
const ENTRIES = ['.', 'frames', 'shard', 'frame', 'tree', 'tree.journal', 'tree.witness', 'tree.stat', 'state.json', 'state.journal', 'state.witness', 'agents.json', 'lock'];
/** Entries that `status` reads: with one of them replaced, it must fail naming it. */
const READ_BY_STATUS = new Set(['.', 'tree', 'tree.journal', 'tree.witness', 'state.json', 'state.journal', 'state.witness', 'agents.json']);
/** Entries that `get-node` reads. */
const READ_BY_GET_NODE = new Set(['.', 'frames', 'shard', 'frame']);
const WHAT = /symbolic link|FIFO|directory|regular file/;

interface Line {
  entry: string;
  kind: string;
  path: string;
  command?: string;
  started?: boolean;
  ok?: boolean;
  error?: string;
  outsideChanged?: string[];
  done?: boolean;
}

function runChild(kind: string): Promise<ChildReport<Line>> {
  // Removed at the end of the file: the children run concurrently, and a test's end must not remove another's.
  return runJsonLinesChild<Line>([child, makeTempDir('merkle-entry-', 'file'), kind, SECRET, ...ENTRIES]);
}

describe('a .merkle entry that is not what the engine keeps there', () => {
  // One child per kind, all at once: each works in its own temp directories, and much of a child's time is waiting
  // (fsync, lock timeouts), which the others' work fills.
  it.concurrent.each(KINDS)('as %s: every command works or fails naming it, never hangs, never writes or quotes outside', async (kind) => {
    const { lines, stdout, stderr, timedOut } = await runChild(kind);
    const last = lines.at(-1);
    if (last?.done !== true) {
      const where = last?.started === true ? `hung in '${last.command}' with ${last.path} as ${kind}` : `died after ${JSON.stringify(last)}`;
      expect.fail(`${timedOut ? 'timed out: ' : ''}${where}; stderr: ${stderr.slice(0, 2000)}`);
    }
    expect(stdout + stderr).not.toContain(SECRET.slice(0, 5));
    const problems: string[] = [];
    for (const line of lines) {
      if (line.outsideChanged !== undefined && line.outsideChanged.length > 0) problems.push(`${line.entry}: wrote outside the workspace: ${line.outsideChanged.join(', ')}`);
      if (line.ok === false && !(line.error!.includes(line.path) && WHAT.test(line.error!))) problems.push(`${line.entry}: '${line.command}' failed without naming ${line.path} and what it is: ${line.error}`);
      const mustFail = (line.command === 'status' && READ_BY_STATUS.has(line.entry)) || (line.command === 'get-node' && READ_BY_GET_NODE.has(line.entry));
      if (mustFail && line.ok === true) problems.push(`${line.entry}: '${line.command}' read through ${line.path} (${kind}) instead of refusing it`);
    }
    expect(problems).toEqual([]);
  }, 90_000);
});
