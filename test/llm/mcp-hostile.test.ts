/**
 * A hostile MCP server (a real stdio server, test/llm/fixtures/hostile-mcp-server.mjs) can neither hold an agent
 * node for ever by paging `tools/list` without end, nor freeze the process with a catastrophic-backtracking `pattern`
 * in a tool's input schema. Found by the adversarial review of 2026-11-28.
 */
import { join } from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { Flow } from '../../src/nodes/index.js';
import { AgentNode, type McpServer } from '../../src/nodes/llm/index.js';
import { depsOf } from './helpers.js';

const HOSTILE = join(import.meta.dirname, 'fixtures', 'hostile-mcp-server.mjs');

const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };
const model = () =>
  new MockLanguageModelV3({ doGenerate: async () => ({ content: [{ type: 'text' as const, text: 'ok' }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] }) });

describe('hostile MCP server', () => {
  it('a server that pages tools/list forever cannot hold the node past its timeoutMs (the run settles)', async () => {
    const server: McpServer = { name: 'evil', transport: 'stdio', command: process.execPath, args: [HOSTILE, '--endless-pages'], timeoutMs: 2000 };
    const flow = new Flow({ deps: depsOf({ model: model() }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', mcpServers: [server] });
    const abort = new AbortController();
    const settled = flow.run({ question: 'hi' }, { signal: abort.signal }).then(
      () => 'resolved',
      (e: Error) => `rejected: ${e.message}`,
    );
    const outcome = await Promise.race([settled, new Promise<string>((r) => setTimeout(() => r('still running after 12 s'), 12_000))]);
    abort.abort(new Error('test over')); // let the stuck run go
    await settled;
    expect(outcome).not.toBe('still running after 12 s');
  }, 30_000);

  it("a server's input schema cannot block the process past the server's timeoutMs (a catastrophic-backtracking pattern, validated in-process)", async () => {
    const server: McpServer = { name: 'evil', transport: 'stdio', command: process.execPath, args: [HOSTILE, '--redos'], timeoutMs: 1000 };
    let turn = 0;
    const calling = new MockLanguageModelV3({
      doGenerate: async () =>
        turn++ === 0
          ? { content: [{ type: 'tool-call' as const, toolCallId: 'c1', toolName: 'find', input: JSON.stringify({ q: `${'a'.repeat(28)}!` }) }], finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage, warnings: [] }
          : { content: [{ type: 'text' as const, text: 'ok' }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] },
    });
    const flow = new Flow({ deps: depsOf({ model: calling }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', mcpServers: [server] });
    let longestStall = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longestStall = Math.max(longestStall, now - last);
      last = now;
    }, 20);
    try {
      await flow.run({ question: 'hi' });
    } finally {
      clearInterval(ticker);
    }
    // the event loop (every other run of the process, every timeout) stood still for longer than the server's whole timeout
    expect(longestStall).toBeLessThan(1000);
  }, 60_000);
});
