import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { get, startCli } from '../studio/helpers.js';
import { FIXTURES, MODULES, cli, tempDir } from './helpers.js';

// Concurrently: two of the tests wait on a studio process starting, the third runs the CLI in this process.
describe.concurrent('backpackflow studio', () => {
  it('starts on the port asked (0: a free one), prints its URL, serves the runs, stops cleanly on SIGTERM', async () => {
    const dataDir = tempDir();
    const run = await cli(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--data-dir', dataDir]);
    const runId = /run id: (\S+)/.exec(run.stdout)![1]!;
    const studio = await startCli(['--port', '0', '--data-dir', dataDir, '--session', 'default']);
    const port = Number(studio.url.port);
    expect(studio.url.origin + studio.url.pathname).toBe(`http://127.0.0.1:${port}/`);
    expect(studio.url.searchParams.get('token')).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(studio.stdout()).toContain('the token in this URL lets the page answer, resume and fork runs');
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
