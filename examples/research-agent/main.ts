/**
 * The research agent (PRD-004 composite: search → analysis → summary) from the command line.
 *
 *   tsx examples/research-agent/main.ts "Which battery suits grid storage?"
 *     uses RESEARCH_MODEL (default "openai:gpt-4o-mini"), RESEARCH_BASE_URL (for openai-compatible) and the
 *     provider's API key variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENAI_COMPATIBLE_API_KEY).
 *   tsx examples/research-agent/main.ts --loopback "..."
 *     runs against a local OpenAI-compatible test server with a scripted model (what CI runs).
 */
import { pathToFileURL } from 'node:url';
import { startOpenAIServer } from '../../test/llm/fixtures/openai-server.js';
import { researchResponder } from '../../test/llm/fixtures/research-responder.js';
import { StreamEventType } from '../../src/events/index.js';
import { createResearchFlow } from './research-agent.js';

/** Runs the research agent on `query` with `params` and returns the summary; prints the steps when `log` is set. */
export async function runResearch(query: string, params: Record<string, unknown>, log: (line: string) => void = () => {}): Promise<string> {
  const flow = createResearchFlow(params);
  flow.eventStreamer.on(StreamEventType.TOOL_CALL, (e) => log(`  tool ${String(e.payload.toolName)}(${JSON.stringify(e.payload.input)})`));
  flow.eventStreamer.on(StreamEventType.NODE_END, (e) => log(`  ${e.namespace} done`));
  await flow.run({ query });
  return flow.backpack.unpackRequired<string>('summary');
}

async function main(argv: string[]): Promise<void> {
  const loopback = argv.includes('--loopback');
  const query = argv.filter((a) => a !== '--loopback').join(' ') || 'Which battery technology suits grid storage?';
  if (loopback) {
    const server = await startOpenAIServer();
    server.respondWith(researchResponder);
    try {
      console.log(await runResearch(query, { model: 'openai-compatible:scripted', baseURL: server.baseURL }, console.log));
    } finally {
      await server.close();
    }
    return;
  }
  const model = process.env.RESEARCH_MODEL ?? 'openai:gpt-4o-mini';
  const baseURL = process.env.RESEARCH_BASE_URL;
  console.log(await runResearch(query, { model, ...(baseURL ? { baseURL } : {}) }, console.log));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
