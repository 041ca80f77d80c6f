import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainEnv } from '../support/env.js';
import { get } from '../studio/helpers.js';
import { BIN, FIXTURES, MODULES, cli, tempDir } from './helpers.js';

/** Starts `backpackflow studio` and resolves with its URL once it printed it. */
function startCli(args: string[]): Promise<{ url: URL; stdout: () => string; stop: () => Promise<{ code: number | null; stderr: string }> }> {
  const child = spawn(process.execPath, [BIN, 'studio', ...args], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const closed = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`studio printed no URL in 20 s; stdout: ${stdout}; stderr: ${stderr}`)), 20_000);
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      const match = /(http:\/\/\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: new URL(match[1]!),
        stdout: () => stdout,
        stop: () => {
          child.kill('SIGTERM');
          return closed;
        },
      });
    });
    void closed.then(({ code }) => reject(new Error(`studio exited ${code} before printing a URL: ${stderr}`)));
  });
}

describe('backpackflow studio', () => {
  it('starts on the port asked (0: a free one), prints its URL, serves the runs, stops cleanly on SIGTERM', async () => {
    const dataDir = tempDir();
    const run = await cli(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--data-dir', dataDir]);
    const runId = /run id: (\S+)/.exec(run.stdout)![1]!;
    const studio = await startCli(['--port', '0', '--data-dir', dataDir, '--session', 'default']);
    const port = Number(studio.url.port);
    expect(studio.url.href).toBe(`http://127.0.0.1:${port}/`);
    expect(port).toBeGreaterThan(0);
    expect(studio.stdout()).toContain(`data: ${dataDir} · session default`);
    const runs = await get(port, '/api/runs');
    expect(runs.json.runs.map((r: any) => r.runId)).toEqual([runId]);
    const stopped = await studio.stop();
    expect(stopped).toEqual({ code: 0, stderr: '' });
  });

  it('off loopback it prints a URL with the token, and requests without it are refused', async () => {
    const studio = await startCli(['--port', '0', '--host', '0.0.0.0', '--data-dir', tempDir()]);
    try {
      const token = studio.url.searchParams.get('token');
      expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(studio.stdout()).toContain('every request needs the token');
      const port = Number(studio.url.port);
      expect((await get(port, '/api/runs')).status).toBe(401);
      expect((await get(port, `/api/runs?token=${token}`)).status).toBe(200);
    } finally {
      await studio.stop();
    }
  });

  it('bad options: usage errors exit 2, a port in use exits 1 naming it', async () => {
    const badPort = await cli(['studio', '--port', 'x']);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain("--port must be an integer 0..65535 (0: any free port), got 'x'");
    const badSession = await cli(['studio', '--session', '../x', '--port', '0']);
    expect(badSession.code).toBe(2);
    expect(badSession.stderr).toContain("invalid --session '../x'");
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const busy = await cli(['studio', '--port', String(taken), '--data-dir', tempDir()]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain(`port ${taken} on 127.0.0.1 is in use`);
    } finally {
      blocker.close();
    }
  });
});
