/**
 * The size bound of an MCP server's answers (`maxResponseBytes`, default 8 MB; audit-s23b F4): an event stream that
 * never ends is cut off and fails the request at once (not at its timeout), and a tool result over the bound is a
 * failed tool call naming the server and the limit, for a remote server and for a stdio one. The huge tool list
 * answered as one JSON body is mcp-response-size.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { McpServer as SdkServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Flow } from '../../src/nodes/index.js';
import { AgentNode, type McpServer, type ToolResultRecord } from '../../src/nodes/llm/index.js';
import { depsOf, failureOf } from './helpers.js';

const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };

/** A model that calls the given tools (with their inputs) on its first turn, then answers. */
function callingModel(calls: Array<[string, Record<string, unknown>]>): MockLanguageModelV3 {
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async () =>
      turn++ === 0
        ? { content: calls.map(([toolName, input], i) => ({ type: 'tool-call' as const, toolCallId: `c${i}`, toolName, input: JSON.stringify(input) })), finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage, warnings: [] }
        : { content: [{ type: 'text' as const, text: 'ok' }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] },
  });
}

async function toolResults(server: McpServer, calls: Array<[string, Record<string, unknown>]>): Promise<ToolResultRecord[]> {
  const flow = new Flow({ deps: depsOf({ model: callingModel(calls) }) });
  flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', mcpServers: [server] });
  await flow.run({ q: 'go' });
  return flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
}

let sdkHttp: Server;
let streamHttp: Server;
let sdkUrl = '';
let streamUrl = '';
beforeAll(async () => {
  // A server built with the SDK (it answers requests as event streams): `echo` returns `size` characters.
  sdkHttp = createServer(async (req, res) => {
    const server = new SdkServer({ name: 'sized', version: '1.0.0' });
    server.registerTool('echo', { description: 'returns size characters', inputSchema: { size: z.number() } }, async ({ size }) => ({ content: [{ type: 'text', text: 'x'.repeat(size) }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    let body = '';
    for await (const chunk of req) body += chunk;
    await server.connect(transport);
    await transport.handleRequest(req, res, body === '' ? undefined : JSON.parse(body));
  });
  // A server that answers tools/list with an event stream whose one data line never ends.
  streamHttp = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = body === '' ? undefined : (JSON.parse(body) as { id?: number; method: string });
    if (message?.id === undefined) return void res.writeHead(message === undefined ? 405 : 202).end();
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'endless', version: '1' } } }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},"description":"');
    const chunk = 'y'.repeat(64 * 1024);
    let open = true;
    res.on('close', () => (open = false));
    const pump = (): void => {
      while (open) if (!res.write(chunk)) return void res.once('drain', pump);
    };
    pump();
  });
  await Promise.all([sdkHttp, streamHttp].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
  sdkUrl = `http://127.0.0.1:${(sdkHttp.address() as AddressInfo).port}/mcp`;
  streamUrl = `http://127.0.0.1:${(streamHttp.address() as AddressInfo).port}/mcp`;
});
afterAll(() => {
  sdkHttp.close();
  streamHttp.close();
});

describe.concurrent('the size bound of MCP answers', () => {
  it('an event stream that never ends is cut off at the bound and fails the listing at once, naming the server and the limit', async () => {
    const flow = new Flow({ deps: depsOf({ model: callingModel([]) }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', mcpServers: [{ name: 'endless', transport: 'http', url: streamUrl, timeoutMs: 60_000, maxResponseBytes: 1024 * 1024 }] });
    const started = performance.now();
    const failure = await failureOf(flow.run({ q: 'go' }));
    expect(failure.message).toMatch(/MCP server 'endless' .*: could not list its tools: .*larger than its maxResponseBytes \(1048576 bytes\)/);
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it("a remote server's tool result over the bound is a failed call naming the server and the limit; the next call works", async () => {
    const results = await toolResults({ name: 'sized', transport: 'http', url: sdkUrl, maxResponseBytes: 20_000 }, [['echo', { size: 50_000 }], ['echo', { size: 10 }]]);
    expect(results[0]!.error).toMatch(/MCP server 'sized' .*: call of 'echo' failed: .*larger than its maxResponseBytes \(20000 bytes\)/);
    expect(results[1]).toMatchObject({ output: [{ type: 'text', text: 'x'.repeat(10) }] });
  });

  it("a stdio server's tool result over the bound is a failed call naming the server and the limit", async () => {
    const server: McpServer = { name: 'fixture', transport: 'stdio', command: process.execPath, args: [join(import.meta.dirname, '..', 'fixtures', 'mcp-server.mjs')], maxResponseBytes: 5_000 };
    const results = await toolResults(server, [['shout', { text: 'a'.repeat(8_000) }], ['shout', { text: 'ok' }]]);
    expect(results[0]!.error).toMatch(/MCP server 'fixture' .*: call of 'shout' failed: its result is larger than the server's maxResponseBytes \(5000 bytes\)/);
    expect(results[1]).toMatchObject({ output: [{ type: 'text', text: 'OK' }] });
  });
});
