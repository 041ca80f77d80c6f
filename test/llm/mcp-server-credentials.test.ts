/**
 * audit-s23b: the credentials an AgentNode's MCP server declaration carries (an HTTP header, a token in the URL,
 * an env var of a stdio server) are secrets the node knows, like its own apiKey. A server that echoes one (an error
 * "key … expired", a whoami result) or a URL that holds one must not get it onto disk. The key has no vendor shape
 * (a self-hosted MCP gateway's key), so only the node's knowledge of it can remove it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer as SdkServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Flow } from '../../src/nodes/index.js';
import { bridgeToOpenTelemetry, EventStreamer, type OtelApi, type OtelSpan, type OtelTracer } from '../../src/events/index.js';
import { AgentNode, llmNodeTypes, type McpServer } from '../../src/nodes/llm/index.js';
import { FlowLoader } from '../../src/serialization/index.js';
import { runFlow } from '../../src/runtime/durable.js';
import { makeTempDir } from '../support/temp.js';
import { filesHolding } from '../support/files.js';
import { depsOf } from './helpers.js';

/** Keys no catalogue pattern knows (a self-hosted gateway's). */
const HEADER_KEY = 'gw-live-7f3a9c2e1b44d0aa51c3';
const URL_TOKEN = 'u9x2k7q4m1z8w3v6';

const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };

function toolCallingModel(toolName: string): MockLanguageModelV3 {
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async () =>
      turn++ === 0
        ? { content: [{ type: 'tool-call' as const, toolCallId: 'c1', toolName, input: '{}' }], finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage, warnings: [] }
        : { content: [{ type: 'text' as const, text: 'ok' }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] },
  });
}

let http: Server;
let base = '';
beforeAll(async () => {
  http = createServer(async (req, res) => {
    const server = new SdkServer({ name: 'echo', version: '1.0.0' });
    const key = String(req.headers['x-api-key'] ?? '');
    // What many gateways do: a whoami tool, and an error that quotes the rejected key.
    server.registerTool('whoami', { description: 'who am I', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: `authenticated with key ${key}` }] }));
    server.registerTool('quota', { description: 'quota', inputSchema: {} }, async () => ({ isError: true, content: [{ type: 'text', text: `quota exceeded for key ${key}` }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    let body = '';
    for await (const chunk of req) body += chunk;
    await server.connect(transport);
    await transport.handleRequest(req, res, body === '' ? undefined : JSON.parse(body));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(() => void http.close());

async function durableAgent(servers: McpServer[], toolName: string): Promise<string> {
  const dataDir = makeTempDir('audit-s23b-mcp-', 'test');
  const flow = new Flow({ deps: depsOf({ model: toolCallingModel(toolName) }) });
  flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', mcpServers: servers });
  await runFlow(flow, { dataDir, input: { q: 'go' } }).catch(() => undefined);
  return dataDir;
}

/** Everything the bridge hands a tracer, as text (what an exporter would send). */
function recordingTracer(): { tracer: OtelTracer; text: () => string } {
  const calls: unknown[] = [];
  const tracer: OtelTracer = {
    startSpan(name, options): OtelSpan {
      calls.push(['startSpan', name, options?.attributes]);
      return {
        setAttribute: (k, v) => calls.push(['setAttribute', k, v]),
        addEvent: (n, a) => calls.push(['addEvent', n, a]),
        setStatus: (s) => calls.push(['setStatus', s]),
        recordException: (e) => calls.push(['recordException', e.name, e.message]),
        end: () => undefined,
      };
    },
  };
  return { tracer, text: () => JSON.stringify(calls) };
}
const otelApi: OtelApi = { trace: { getTracer: () => recordingTracer().tracer, setSpan: (c) => c }, context: { active: () => ({}) }, SpanStatusCode: { ERROR: 2 } };

describe('MCP server credentials', () => {
  it('an X-Api-Key header value the server quotes in an isError result is not exported to OpenTelemetry', async () => {
    const streamer = new EventStreamer();
    const { tracer, text } = recordingTracer();
    const detach = bridgeToOpenTelemetry(streamer, otelApi, tracer);
    const flow = new Flow({ eventStreamer: streamer, deps: depsOf({ model: toolCallingModel('quota') }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', mcpServers: [{ name: 'gw', transport: 'http', url: `${base}/mcp`, headers: { 'X-Api-Key': HEADER_KEY } }] });
    await flow.run({ q: 'go' });
    detach();
    expect(text()).toContain('quota exceeded');
    expect(text()).not.toContain(HEADER_KEY);
  });

  it('an X-Api-Key header value the server echoes in a tool result is not written to disk', async () => {
    const dataDir = await durableAgent([{ name: 'gw', transport: 'http', url: `${base}/mcp`, headers: { 'X-Api-Key': HEADER_KEY } }], 'whoami');
    expect(filesHolding(dataDir, HEADER_KEY)).toEqual([]);
  });

  it('an X-Api-Key header value the server quotes in an isError result is not written to disk', async () => {
    const dataDir = await durableAgent([{ name: 'gw', transport: 'http', url: `${base}/mcp`, headers: { 'X-Api-Key': HEADER_KEY } }], 'quota');
    expect(filesHolding(dataDir, HEADER_KEY)).toEqual([]);
  });

  it('a token in the path of an MCP URL (from ${ENV} in a flow file) is not written to disk when the server cannot be reached', async () => {
    const loader = new FlowLoader();
    for (const [type, NodeClass] of Object.entries(llmNodeTypes)) loader.register(type, NodeClass);
    const config = {
      version: '2.0.0',
      namespace: 'mcp',
      nodes: [{ type: 'AgentNode', id: 'agent', params: { promptFrom: 'q', mcpServers: [{ name: 'hosted', transport: 'http', url: 'http://127.0.0.1:9/s/${MCP_TOKEN}/mcp', timeoutMs: 3000 }] } }],
    };
    const flow = await loader.loadFlow(config, { model: toolCallingModel('x') }, { env: { MCP_TOKEN: URL_TOKEN } });
    const dataDir = makeTempDir('audit-s23b-mcp-', 'test');
    const result = await runFlow(flow, { dataDir, input: { q: 'go' } }).catch((e: unknown) => e);
    expect(result).toBeInstanceOf(Error);
    expect(filesHolding(dataDir, URL_TOKEN)).toEqual([]);
  });

  it('a token in the query of an MCP URL is not written to disk when the server cannot be reached', async () => {
    const dataDir = await durableAgent([{ name: 'hosted', transport: 'http', url: `http://127.0.0.1:9/mcp?access=${URL_TOKEN}`, timeoutMs: 3000 }], 'x');
    expect(filesHolding(dataDir, URL_TOKEN)).toEqual([]);
  });

  it("an env value of a stdio server that the server prints when it fails is not written to disk", async () => {
    const dataDir = await durableAgent(
      [{ name: 'local', transport: 'stdio', command: process.execPath, args: ['-e', 'console.error("login failed for " + process.env.SVC_CRED); process.exit(3)'], env: { SVC_CRED: HEADER_KEY } }],
      'x',
    );
    expect(filesHolding(dataDir, HEADER_KEY)).toEqual([]);
  });
});
void z;
