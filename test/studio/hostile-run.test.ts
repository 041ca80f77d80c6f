/**
 * The Studio against one hostile run (review s46): a question whose recorded schema has a catastrophic regular
 * expression, a run folder with a FIFO or a link in place of its log. One such run never freezes the Studio, hides
 * the other runs, or has the Studio read a file outside the data directory. The Studio runs as the built CLI in a
 * child process (killed with SIGKILL after each case: a frozen one would ignore SIGTERM).
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { BIN, tempDir } from '../cli/helpers.js';
import { plainEnv } from '../support/env.js';
import { get, post } from './helpers.js';

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** A completed run `runId` and, when `ask` is given, a run `<runId>-ask` waiting for an answer of that schema. */
async function seed(dataDir: string, runId: string, ask?: z.ZodType): Promise<void> {
  class Write extends BackpackNode {
    override post(backpack: BackpackHandle): undefined {
      backpack.pack('note', 'hello');
      return undefined;
    }
  }
  const done = new Flow({ namespace: 'ok' });
  done.addNode(Write, { id: 'write' });
  await runFlow(done, { dataDir, runId });
  if (!ask) return;
  class Ask extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      backpack.pack('answer', await this.interrupt({ question: 'Your name?' }, { schema: ask }));
      return undefined;
    }
  }
  const waiting = new Flow({ namespace: 'ask' });
  waiting.addNode(Ask, { id: 'ask' });
  expect((await runFlow(waiting, { dataDir, runId: `${runId}-ask` })).status).toBe('waiting');
}

/** `backpackflow studio` on a free port; its port and write token. */
async function studio(dataDir: string): Promise<{ port: number; token: string }> {
  const child = spawn(process.execPath, [BIN, 'studio', '--data-dir', dataDir, '--port', '0'], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  stops.push(() => void child.kill('SIGKILL'));
  const url = await new Promise<URL>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`studio printed no URL: ${out}`)), 20_000);
    child.stdout.on('data', (data: Buffer) => {
      out += data;
      const match = /(http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(new URL(match[1]!));
      }
    });
  });
  return { port: Number(url.port), token: url.searchParams.get('token')! };
}

/** The status of a GET, or 'no answer' when none comes within `ms`. */
function statusWithin(port: number, path: string, ms: number): Promise<number | 'no answer'> {
  return Promise.race([get(port, path).then((reply) => reply.status), new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), ms))]);
}

describe('the Studio and one hostile run', () => {
  it("answering a question whose recorded schema has a catastrophic pattern does not freeze the Studio (patterns are the node's to check)", async () => {
    const dataDir = tempDir();
    // `^(.*.*)*x$` backtracks for an exponential time on a string without an x: 16 characters took 20 s before.
    await seed(dataDir, 'r', z.object({ name: z.string().regex(/^(.*.*)*x$/) }));
    const s = await studio(dataDir);
    const pause = (await get(s.port, '/api/runs/r-ask')).json.meta.interrupt.pause as number;
    const answered = post(s.port, '/api/runs/r-ask/resume', { answer: { name: 'Ada Lovelace, Countess of Lov' }, pause }, { authorization: `Bearer ${s.token}` });
    // Other requests are served meanwhile, and the answer's own request is answered too (the resume goes to a child,
    // where the node checks its own schema).
    expect(await statusWithin(s.port, '/api/info', 5000)).toBe(200);
    expect((await answered).status).toBeLessThan(500);
  }, 60_000);

  it('a FIFO or a folder in place of a run\'s log: that run is listed as damaged, naming it, and the others as they are', async () => {
    const dataDir = tempDir();
    await seed(dataDir, 'good');
    await seed(dataDir, 'fifo');
    await seed(dataDir, 'folder');
    const runs = join(dataDir, 'sessions', 'default', 'runs');
    rmSync(join(runs, 'fifo', 'events.jsonl'));
    execFileSync('mkfifo', [join(runs, 'fifo', 'events.jsonl')]);
    rmSync(join(runs, 'folder', 'events.jsonl'));
    mkdirSync(join(runs, 'folder', 'events.jsonl'));
    const s = await studio(dataDir);
    const list = await get(s.port, '/api/runs');
    expect(list.status).toBe(200);
    const byId = new Map((list.json.runs as { runId: string; damaged?: string }[]).map((run) => [run.runId, run]));
    expect(byId.get('good')?.damaged).toBeUndefined();
    expect(byId.get('fifo')?.damaged).toContain(`${join(runs, 'fifo', 'events.jsonl')} is a FIFO (named pipe), not a regular file`);
    expect(byId.get('folder')?.damaged).toContain(`${join(runs, 'folder', 'events.jsonl')} is a directory, not a regular file`);
    // Its own views: a 409 naming the damage, not a server error.
    const detail = await get(s.port, '/api/runs/fifo/state');
    expect(detail.status).toBe(409);
  }, 60_000);

  it('a link in place of a run\'s log, to a file outside the data directory, is not read: nothing of that file is served', async () => {
    const dataDir = tempDir();
    await seed(dataDir, 'r');
    const outside = join(tempDir(), 'secret.txt');
    writeFileSync(outside, 'hunter2\nAKIA12345678 is my key\n');
    const runDir = join(dataDir, 'sessions', 'default', 'runs', 'evil');
    mkdirSync(runDir, { recursive: true });
    symlinkSync(outside, join(runDir, 'events.jsonl'));
    const s = await studio(dataDir);
    for (const path of ['/api/runs', '/api/runs/evil', '/api/runs/evil/events', '/api/runs/evil/state']) {
      const reply = await get(s.port, path);
      expect(reply.status, path).toBeLessThan(500);
      expect(reply.body, path).not.toContain('hunter2');
      expect(reply.body, path).not.toContain('AKIA1234');
    }
    const listed = (await get(s.port, '/api/runs')).json.runs as { runId: string; damaged?: string }[];
    expect(listed.find((run) => run.runId === 'evil')?.damaged).toContain('is a symbolic link, not a regular file');
  }, 60_000);

  it('studio --open puts no token on a command line: the browser gets the bare URL, the terminal the one with the token', async () => {
    const dataDir = tempDir();
    await seed(dataDir, 'r');
    // A stand-in for xdg-open that writes down the arguments it was started with (what `ps` shows every user).
    const bin = tempDir();
    const seen = join(bin, 'argv.txt');
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" > ${JSON.stringify(seen)}\n`);
    chmodSync(join(bin, 'xdg-open'), 0o755);
    const child = spawn(process.execPath, [BIN, 'studio', '--data-dir', dataDir, '--port', '0', '--open'], { env: plainEnv({ PATH: `${bin}:${process.env['PATH']}` }), stdio: ['ignore', 'pipe', 'pipe'] });
    stops.push(() => void child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (data: Buffer) => (out += data));
    await vi.waitFor(() => expect(existsSync(seen) && readFileSync(seen, 'utf8').includes('http')).toBe(true), { timeout: 20_000, interval: 50 });
    const printed = new URL(/(http:\/\/\S+)/.exec(out)![1]!);
    const token = printed.searchParams.get('token')!;
    expect(token.length).toBeGreaterThan(20);
    const opened = readFileSync(seen, 'utf8').trim();
    expect(opened).not.toContain(token);
    expect(new URL(opened).origin).toBe(printed.origin);
    expect(out).toContain('--open opened the page without the token');
  }, 60_000);
});
