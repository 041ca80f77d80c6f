import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runResearch } from '../../examples/research-agent/main.js';
import { createResearchFlow, ResearchAgentNode } from '../../examples/research-agent/research-agent.js';
import { searchCorpus } from '../../examples/research-agent/search-tool.js';
import { promptText, startOpenAIServer, type OpenAIServer } from './fixtures/openai-server.js';
import { researchResponder } from './fixtures/research-responder.js';

let server: OpenAIServer;
beforeAll(async () => (server = await startOpenAIServer()));
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
  server.respondWith(researchResponder);
});

describe('research-agent example', () => {
  it('searches the local corpus with distinct query terms, best first', () => {
    expect(searchCorpus('grid storage batteries').map((h) => h.id)).toEqual(['grid-1', 'sol-2', 'h2-1']);
    expect(searchCorpus('quantum chromodynamics')).toEqual([]);
  });

  it('runs search → analysis → summary against the loopback server', async () => {
    const lines: string[] = [];
    const summary = await runResearch('Which battery suits grid storage?', { model: 'openai-compatible:scripted', baseURL: server.baseURL }, (l) => lines.push(l));
    expect(summary).toBe('Summary: Analysis of Sodium-ion batteries [sol-2]; Grid storage economics [grid-1]; Electric vehicle charging [ev-1]. The sources agree that cost decides.');
    expect(server.requests).toHaveLength(4);
    const [plan, withResults, analysis, final] = server.requests;
    expect(plan!.body.tools?.map((t) => t.function.name)).toEqual(['search_corpus']);
    expect(promptText(withResults!)).toContain('Sodium-ion batteries use abundant sodium');
    expect(promptText(analysis!)).toContain('Context:\\nquery: Which battery suits grid storage?');
    expect(analysis!.body.tools).toBeUndefined();
    expect(promptText(final!)).toContain('Summary step');
    expect(lines).toContain('  tool search_corpus({"query":"Which battery suits grid storage?"})');
    expect(lines.at(-1)).toBe('  app.research done');
  });

  it('is a composite whose internal flow exists before any run, and packs each step under its namespace', async () => {
    const flow = createResearchFlow({ model: 'openai-compatible:scripted', baseURL: server.baseURL });
    const node = flow.getNode('researcher') as ResearchAgentNode;
    expect(node.isComposite()).toBe(true);
    await flow.run({ query: 'recycling lithium' });
    expect(flow.backpack.getItem('summary')?.metadata.sourceNamespace).toBe('app.research.summary');
    expect(flow.backpack.getItem('findings')?.metadata.sourceNamespace).toBe('app.research.search');
    expect(flow.backpack.unpack('findings')).toContain('Battery recycling [recycle-1]');
  });
});
