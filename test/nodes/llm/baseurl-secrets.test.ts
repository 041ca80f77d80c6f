/**
 * Credentials in an LLM node's `baseURL` (a gateway that takes its key in the path, written `${ENV}` in a flow file)
 * are the node's secrets, like its `apiKey` (review s32, finding 3): removed from everything the node emits, so an
 * endpoint's error that quotes the request path does not put the token in the run's log, its projection or the
 * terminal; masked in exports and for other nodes' code, as an MCP server's URL is.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../../src/nodes/index.js';
import { ChatNode, llmNodeTypes } from '../../../src/nodes/llm/index.js';
import { FlowLoader } from '../../../src/serialization/index.js';
import { runFlow } from '../../../src/runtime/durable.js';
import { makeTempDir } from '../../support/temp.js';
import { filesHolding } from '../../support/files.js';

const TOKEN = 'u9x2k7q4m1z8w3v6zz';
let http: Server;
let port = 0;
beforeAll(async () => {
  // An OpenAI-compatible endpoint that does not know the path: it says which path it was asked for.
  http = createServer((req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: 'not_found' } }));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  port = (http.address() as AddressInfo).port;
});
afterAll(() => void http.close());

describe('a token in an LLM node baseURL', () => {
  it('from ${ENV}: is not written to the run when the endpoint quotes the request path', async () => {
    const loader = new FlowLoader();
    for (const [type, NodeClass] of Object.entries(llmNodeTypes)) loader.register(type, NodeClass);
    const config = {
      version: '2.0.0',
      namespace: 'llm',
      nodes: [{ type: 'ChatNode', id: 'chat', params: { model: 'openai-compatible:m', baseURL: `http://127.0.0.1:${port}/k/\${LLM_TOKEN}/v1`, apiKey: 'local-key-0001', promptFrom: 'q', retry: { maxAttempts: 1 } } }],
    };
    const flow = await loader.loadFlow(config, {}, { env: { LLM_TOKEN: TOKEN } });
    const dataDir = makeTempDir('bf-llm-baseurl-', 'test');
    const error = await runFlow(flow, { dataDir, runId: 'r', input: { q: 'hi' } }).catch((e: unknown) => e as Error);
    expect(String(error)).toContain('no route POST');
    expect(filesHolding(dataDir, TOKEN)).toEqual([]);
  });

  it("is masked in an export and for another node's code (an export with includeSensitive gives it)", async () => {
    const seen: unknown[] = [];
    class Reader extends BackpackNode {
      override prep(): undefined {
        seen.push((this.successors.get('next') as BackpackNode).config['baseURL']);
        return undefined;
      }
      override post(): string {
        return 'next';
      }
    }
    const url = `https://gw.example.com/k/${TOKEN}/v1`;
    const flow = new Flow({ namespace: 'llm', onMissingRoute: 'end' });
    const reader = flow.addNode(Reader, { id: 'reader' });
    reader.on('next', flow.addNode(ChatNode, { id: 'chat', model: 'openai-compatible:m', baseURL: url, promptFrom: 'q' }));
    flow.setEntryNode(reader);
    const loader = new FlowLoader();
    expect(JSON.stringify(loader.exportFlow(flow))).not.toContain(TOKEN);
    expect(JSON.stringify(loader.exportFlow(flow))).toContain('https://gw.example.com/k/');
    await flow.run({}).catch(() => undefined);
    expect(String(seen[0])).not.toContain(TOKEN);
    expect(String(seen[0])).toContain('gw.example.com');
    expect(JSON.stringify(loader.exportFlow(flow, { includeSensitive: true }))).toContain(TOKEN);
  });
});
