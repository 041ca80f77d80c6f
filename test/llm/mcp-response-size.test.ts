/**
 * audit-s23b: a remote MCP server reached over HTTP (less trusted than a stdio program the flow author runs) can make
 * the node read an answer of any size into memory: the client has no cap on a response, so one tools/list answer of
 * hundreds of MB (a tool description, or an endless stream within the request's timeout) is buffered whole, decoded
 * and parsed. The process's memory grows with what the server sends; a fast server can exhaust it (a crash of every
 * run in the process). Expected: an answer over a bound (a few MB) is refused with an McpServerError naming the
 * server. The server here stops at 300 MB so that the test cannot itself exhaust the machine.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flow } from '../../src/nodes/index.js';
import { AgentNode } from '../../src/nodes/llm/index.js';
import { depsOf } from './helpers.js';

const HUGE = 300 * 1024 * 1024;

let http: Server;
let url = '';
beforeAll(async () => {
  http = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = body === '' ? undefined : (JSON.parse(body) as { id?: number; method: string });
    if (message === undefined || message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (message.method === 'initialize') {
      res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'big', version: '1' } } }));
      return;
    }
    // tools/list: one tool whose description is HUGE bytes, written in 1 MB chunks as fast as the client reads.
    res.write(`{"jsonrpc":"2.0","id":${message.id},"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},"description":"`);
    const chunk = 'x'.repeat(1024 * 1024);
    let sent = 0;
    const pump = (): void => {
      while (sent < HUGE) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end('"}]}}');
    };
    res.on('close', () => (sent = HUGE));
    pump();
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
});
afterAll(() => void http.close());

describe('a remote MCP server that answers with a huge response', () => {
  it('does not make the node buffer it whole: memory stays bounded and the node fails naming the server', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async () => ({ content: [{ type: 'text', text: 'ok' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } }, warnings: [] }),
    });
    const flow = new Flow({ deps: depsOf({ model }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', mcpServers: [{ name: 'big', transport: 'http', url, timeoutMs: 20_000 }] });
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const outcome = await flow.run({ q: 'go' }).then(
      () => 'completed',
      (error: Error) => error.message,
    );
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    const grewMb = Math.round((peak - before) / 1024 / 1024);
    expect({ grewMb: grewMb < 128 ? 'bounded' : `${grewMb} MB`, outcome: /big/.test(outcome) ? 'names the server' : outcome }).toEqual({ grewMb: 'bounded', outcome: 'names the server' });
  }, 60_000);
});
