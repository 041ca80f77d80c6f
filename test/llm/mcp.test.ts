/**
 * AgentNode with the tools of real MCP server processes (test/fixtures/mcp-server.mjs, the SDK's own server): over
 * stdio, and over streamable HTTP on 127.0.0.1. The model is the AI SDK's mock model, scripted to call the tools.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamEventType } from '../../src/events/index.js';
import { Flow } from '../../src/nodes/index.js';
import { AgentNode, llmNodeTypes, McpServerError, type McpServer, type ToolResultRecord } from '../../src/nodes/llm/index.js';
import { FlowLoader } from '../../src/serialization/index.js';
import { depsOf, failureOf, recordingStreamer } from './helpers.js';

/** The McpServerError in an error's cause chain (a flow wraps a node's error; it keeps the transport's as its cause). */
function mcpError(error: Error & { cause?: unknown }): McpServerError {
  for (let e: unknown = error; e instanceof Error; e = (e as { cause?: unknown }).cause) if (e instanceof McpServerError) return e;
  throw new Error(`no McpServerError in the cause chain of ${error.message}`);
}

const SERVER = join(import.meta.dirname, '..', 'fixtures', 'mcp-server.mjs');
const REFUSING_SERVER = join(import.meta.dirname, '..', 'fixtures', 'mcp-refusing-server.mjs');
const stdio: McpServer = { name: 'fixture', transport: 'stdio', command: process.execPath, args: [SERVER] };

type Call = { toolCallId: string; toolName: string; input: Record<string, unknown> };

/** A mock model that makes the given tool calls on its first turn, then answers with the tool results it was shown. */
function toolCallingModel(calls: Call[]): { model: MockLanguageModelV3; toolsSeen: string[][] } {
  const toolsSeen: string[][] = [];
  let turn = 0;
  const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      toolsSeen.push((options.tools ?? []).map((t) => t.name));
      if (turn++ === 0) {
        return {
          content: calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.toolName, input: JSON.stringify(c.input) })),
          finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      const results = options.prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content);
      return { content: [{ type: 'text' as const, text: `done: ${JSON.stringify(results.map((r) => (r as { output: unknown }).output))}` }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] };
    },
  });
  return { model, toolsSeen };
}

async function runAgent(servers: McpServer[], calls: Call[], params: Record<string, unknown> = {}) {
  const { streamer, events } = recordingStreamer();
  const { model, toolsSeen } = toolCallingModel(calls);
  const flow = new Flow({ eventStreamer: streamer, deps: depsOf({ model }) });
  flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', mcpServers: servers, ...params });
  await flow.run({ question: 'compute' });
  return { flow, events, toolsSeen };
}

// Each test starts its own server processes and model: they run side by side.
describe.concurrent('AgentNode with MCP servers', () => {
  it('stdio: the model sees the server tools; each call is a tool.called / tool.result event naming the server', async () => {
    const { flow, events, toolsSeen } = await runAgent([stdio], [
      { toolCallId: 'c1', toolName: 'add', input: { a: 2, b: 40 } },
      { toolCallId: 'c2', toolName: 'broken', input: {} },
    ]);
    expect(toolsSeen[0]!.sort()).toEqual(['add', 'broken', 'shout']);
    const results = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
    expect(results[0]).toEqual({ toolCallId: 'c1', toolName: 'add', output: { sum: 42 }, attempts: 1 });
    expect(results[1]).toMatchObject({ toolCallId: 'c2', toolName: 'broken', error: "Tool 'broken' failed: the disk is on fire" });
    const toolEvents = events.filter((e) => e.type === StreamEventType.TOOL_CALL || e.type === StreamEventType.TOOL_RESULT);
    expect(toolEvents.map((e) => [e.type, e.payload.toolName, e.payload.mcpServer, e.payload.mcpTool])).toEqual([
      [StreamEventType.TOOL_CALL, 'add', 'fixture', 'add'],
      [StreamEventType.TOOL_RESULT, 'add', 'fixture', 'add'],
      [StreamEventType.TOOL_CALL, 'broken', 'fixture', 'broken'],
      [StreamEventType.TOOL_RESULT, 'broken', 'fixture', 'broken'],
    ]);
    expect(flow.backpack.unpack('answer')).toContain('"sum":42');
  });

  it('a call that times out fails, and the server that kept it is stopped when the node ends, without the SDK\'s 2 s grace', async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'mcp-stall-')), 'pid');
    // Long enough to connect on a loaded machine (the limit is also the connection's): 1.5 s was not, at times, with
    // the suite's other workers and this file's other servers starting at once on two cores.
    const server: McpServer = { ...stdio, args: [SERVER, '--stall'], env: { STALL_PID_FILE: pidFile }, timeoutMs: 3_000 };
    const { flow, events } = await runAgent([server], [{ toolCallId: 's1', toolName: 'stall', input: {} }]);
    const ended = Date.now();
    const [result] = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
    expect(result!.error).toMatch(/MCP server 'fixture' .*: call of 'stall' failed: .*timed out/i);
    // The server process is gone by the time the node has ended.
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
    // From the failed call to the end of the run: the model's second turn and closing the server. The SDK alone
    // ends a server's input and waits a fixed 2,000 ms for it to exit before it sends SIGTERM.
    const failedAt = events.find((e) => e.type === StreamEventType.TOOL_RESULT)!.timestamp;
    expect(ended - failedAt).toBeLessThan(1_500);
  });

  it("a server that answers a call at once with its own error code -32001 (the SDK's timeout code) is closed gracefully, not signalled", async () => {
    const markFile = join(mkdtempSync(join(tmpdir(), 'mcp-refusing-')), 'mark');
    const server: McpServer = { name: 'refusing', transport: 'stdio', command: process.execPath, args: [REFUSING_SERVER], env: { REFUSING_MARK_FILE: markFile }, timeoutMs: 5_000 };
    const { flow } = await runAgent([server], [{ toolCallId: 'r1', toolName: 'lookup', input: {} }]);
    const [result] = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
    expect(result!.error).toMatch(/MCP server 'refusing' .*: call of 'lookup' failed: .*record not found/);
    expect(readFileSync(markFile, 'utf8')).toBe('closed gracefully');
  });

  it('validates the model input against the tool schema the server listed, before calling the server', async () => {
    const { flow } = await runAgent([{ ...stdio, tools: ['add'], prefix: 'calc_' }], [{ toolCallId: 'c1', toolName: 'calc_add', input: { a: 'two', b: 1 } }]);
    const [result] = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
    expect(result!.error).toMatch(/^Invalid input for tool 'calc_add': a: /);
    expect(result!.attempts).toBe(0);
  });

  describe('streamable HTTP on 127.0.0.1', () => {
    let child: ChildProcess;
    let url = '';
    beforeAll(async () => {
      child = spawn(process.execPath, [SERVER, '--http'], { stdio: ['ignore', 'pipe', 'inherit'] });
      url = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => {
          const port = /listening (\d+)/.exec(d.toString())?.[1];
          if (port) resolve(`http://127.0.0.1:${port}/mcp`);
        });
        child.on('exit', (code) => reject(new Error(`MCP fixture server exited ${code}`)));
      });
    });
    afterAll(() => void child.kill());

    it('calls the tools of an HTTP server, declared in a flow file; the declaration exports back as written', async () => {
      const loader = new FlowLoader();
      for (const [type, NodeClass] of Object.entries(llmNodeTypes)) loader.register(type, NodeClass);
      const server = { name: 'remote', transport: 'http', url, tools: ['shout'], headers: { Authorization: 'Bearer not-a-real-token-123' } };
      const config = { version: '2.0.0', namespace: 'mcp', nodes: [{ type: 'AgentNode', id: 'agent', params: { promptFrom: 'question', mcpServers: [server] } }] };
      const { model, toolsSeen } = toolCallingModel([{ toolCallId: 'h1', toolName: 'shout', input: { text: 'tides' } }]);
      const flow = await loader.loadFlow(config, { model });
      await flow.run({ question: 'shout' });
      expect(toolsSeen[0]).toEqual(['shout']);
      expect(flow.backpack.unpack<ToolResultRecord[]>('toolResults')).toEqual([{ toolCallId: 'h1', toolName: 'shout', output: [{ type: 'text', text: 'TIDES' }], attempts: 1 }]);
      const exported = loader.exportFlow(flow);
      expect(exported.nodes[0]!.params.mcpServers).toEqual([{ ...server, headers: { Authorization: '***' } }]);
      expect(loader.exportFlow(flow, { includeSensitive: true }).nodes[0]!.params.mcpServers).toEqual([server]);
    });
  });

  it('a bad declaration in a flow file is reported at its JSON path', () => {
    const loader = new FlowLoader();
    loader.register('AgentNode', AgentNode);
    const report = loader.validateConfig({
      version: '2.0.0',
      nodes: [{ type: 'AgentNode', id: 'agent', params: { promptFrom: 'q', mcpServers: [{ name: 'ok', transport: 'stdio', command: 'x' }, { name: 'web', transport: 'http', url: 'ftp://host/mcp' }, { name: 'bad name', transport: 'carrier-pigeon' }] } }],
    });
    expect(report.valid).toBe(false);
    const paths = report.errors.map((e) => e.path);
    expect(paths).toContain('/nodes/0/params/mcpServers/1/url');
    expect(paths.some((p) => p.startsWith('/nodes/0/params/mcpServers/2'))).toBe(true);
    expect(paths.some((p) => p.startsWith('/nodes/0/params/mcpServers/0'))).toBe(false);
  });

  it('connection failures name the server and how it was reached', async () => {
    const [missing, crashing, refused, unknownTool] = await Promise.all([
      failureOf(runAgent([{ name: 'ghost', transport: 'stdio', command: '/nonexistent/mcp-server' }], [])),
      failureOf(runAgent([{ name: 'crash', transport: 'stdio', command: process.execPath, args: ['-e', 'console.error("no config file"); process.exit(3)'] }], [])),
      failureOf(runAgent([{ name: 'down', transport: 'http', url: 'http://127.0.0.1:9/mcp', timeoutMs: 5000 }], [])),
      failureOf(runAgent([{ ...stdio, tools: ['nope'] }], [])),
    ]);
    expect(mcpError(missing).message).toMatch(/^node 'agent': MCP server 'ghost' \(stdio: \/nonexistent\/mcp-server\): could not connect: /);
    expect(mcpError(crashing).message).toMatch(/MCP server 'crash' \(stdio: .*\): could not connect: .*it wrote: no config file/);
    expect(mcpError(refused).message).toMatch(/^node 'agent': MCP server 'down' \(http: http:\/\/127\.0\.0\.1:9\/mcp\): could not connect: /);
    expect(mcpError(unknownTool).message).toMatch(/MCP server 'fixture' \(stdio: .*\): has no tool 'nope': it lists add, shout, broken/);
  });

  it("a failure's message holds no secret of the server's command line or of what it printed (audit-interop F6)", async () => {
    const secret = 'hunter2-Correct-Horse';
    const token = 'ghp_Zq8Wm3Kt7Rx2Vn5Bp9Lc4Hd6Fj1Gs0Ty3Ua';
    const failed = await failureOf(
      runAgent([{ name: 'leaky', transport: 'stdio', command: process.execPath, args: ['-e', `console.error("token ${token} rejected"); process.exit(3)`, '--', '--password', secret] }], []),
    );
    const message = mcpError(failed).message;
    expect(message).toMatch(/MCP server 'leaky' \(stdio: .*\): could not connect: .*it wrote: token \[REDACTED\] rejected/);
    expect(message).not.toContain(secret);
    expect(message).not.toContain(token);
  });
});
