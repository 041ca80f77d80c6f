/**
 * The flow recorded with a run masks the credentials of an LLM node's `baseURL` (review s32, finding 3), as of an MCP
 * server's URL. A resume or fork built from that record would call another URL than the run did (review s33, finding
 * 2: the check for masked secrets looked only for strings that are the mask). It is refused, naming the masked URL,
 * and `run` says so when it records the flow; with `--flow` the resume calls the URL the run called. (Common base
 * URLs carry ids of that shape: Cloudflare AI Gateway `/v1/<account id>/<gateway>/openai`.)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maskedPointers } from '../../src/cli/backpackflow/flows.js';
import { cli, tempDir } from './helpers.js';

const ACCOUNT = '0123456789abcdef0123456789abcdef';
let http: Server;
let port = 0;
const asked: string[] = [];
beforeAll(async () => {
  // Always unavailable: the run fails, and the resume calls again. Each request's path is recorded.
  http = createServer((req, res) => {
    asked.push(req.url ?? '');
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'try later', type: 'unavailable' } }));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  port = (http.address() as AddressInfo).port;
});
afterAll(() => void http.close());

describe('runs resume of a recorded flow whose LLM node has a baseURL with an id in its path', () => {
  it('is refused, naming the masked baseURL; with --flow it calls the URL the run called', async () => {
    const dir = tempDir();
    const dataDir = tempDir();
    const baseURL = `http://127.0.0.1:${port}/v1/${ACCOUNT}/my-gateway/openai`;
    const flow = join(dir, 'flow.json');
    writeFileSync(
      flow,
      JSON.stringify({
        version: '2.0.0',
        namespace: 'gw',
        nodes: [{ type: 'ChatNode', id: 'chat', params: { model: 'openai-compatible:m', baseURL, apiKey: '${BPF_S33_KEY}', promptFrom: 'q', retry: { maxAttempts: 1 } } }],
        edges: [],
      }),
    );
    const env = { env: { BPF_S33_KEY: 'local-key-0001' } };
    const ran = await cli(['run', flow, '--run-id', 'gw', '--data-dir', dataDir, '--input', '{"q":"hi"}'], env);
    expect(ran.code, ran.stderr).toBe(1);
    expect(asked.length, ran.stderr).toBeGreaterThan(0);
    const first = asked[0]!;
    expect(first).toContain(ACCOUNT);
    expect(ran.stderr).toContain('masks secrets given as they are (/nodes/0/params/baseURL)');
    const before = asked.length;
    const refused = await cli(['runs', 'resume', 'gw', '--data-dir', dataDir], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('has secrets masked where they were given as they are (/nodes/0/params/baseURL)');
    expect(asked.length).toBe(before);
    const resumed = await cli(['runs', 'resume', 'gw', '--data-dir', dataDir, '--flow', flow], env);
    expect(asked.length, resumed.stderr).toBeGreaterThan(before);
    expect(asked.slice(before).every((path) => path === first)).toBe(true);
  });
});

describe('maskedPointers', () => {
  it('flags a URL whose credentials were masked, and no text a user wrote with *** in it (review s34, finding 4)', () => {
    const config = {
      namespace: 'docs',
      nodes: [
        {
          id: 'writer',
          type: 'ChatNode',
          params: {
            systemPrompt: 'https://docs.example.com/style-guide is the house style.\n\n***\n\nWrite the summary below the rule.',
            template: 'https://example.com/reviews rated ***',
            baseURL: 'https://gateway.example.com/v1/***/openai',
            apiKey: '***',
          },
        },
      ],
    };
    expect(maskedPointers(config)).toEqual(['/nodes/0/params/baseURL', '/nodes/0/params/apiKey']);
  });
});
