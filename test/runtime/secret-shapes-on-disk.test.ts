/**
 * Audit s21 (findings 1-4), end to end on the file store: data shapes that held secrets the redactor did not know
 * (plural secret names, records naming their value in another field, credential files in a tool result, a passphrase
 * cut short in a value summary) reach no file of the data directory. Each test searches the bytes of every file
 * written (events, keyframes, projection, flow.json, memory items and index) for the secret.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentNode, BackpackNode, Flow, MemoryStore, StreamEventType, defineTool, openNewRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { startOpenAIServer, type OpenAIServer } from '../llm/fixtures/openai-server.js';
import { tempDir } from '../store/helpers.js';

const PLAIN_PW = 'hunter2passQ7x';
const PLAIN_KEY = 'plainvalueZ9k4m';

/** Every file under `dir` whose bytes hold `needle`, with the text around it. */
function filesHolding(dir: string, needle: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) {
        const buf = readFileSync(p);
        const at = buf.indexOf(needle);
        if (at >= 0) out.push(`${p}: …${buf.subarray(Math.max(0, at - 80), at + needle.length + 40).toString('latin1')}…`);
      }
    }
  };
  walk(dir);
  return out;
}

function holding(dir: string, needles: readonly string[]): string[] {
  return needles.flatMap((n) => filesHolding(dir, n));
}

const dirs: (() => void)[] = [];
function dataDir(): string {
  const tmp = tempDir();
  dirs.push(tmp.cleanup);
  return tmp.dir;
}
afterEach(() => {
  for (const cleanup of dirs.splice(0)) cleanup();
});

function oneNode(post: (node: BackpackNode, backpack: BackpackHandle) => void): Flow {
  class N extends BackpackNode {
    override async post(backpack: BackpackHandle) {
      post(this, backpack);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'audit' });
  flow.addNode(N, { id: 'n' });
  return flow;
}

describe('a durable run writes no secret of these shapes', () => {
  it('a custom event with plural secret keys (`secrets`, `passwords`, `apiKeys`)', async () => {
    const dir = dataDir();
    const flow = oneNode((node) => {
      node.eventStreamer.emit({ type: StreamEventType.CUSTOM, payload: { secrets: { db: PLAIN_PW }, passwords: [`${PLAIN_PW}a`], apiKeys: [PLAIN_KEY] } });
    });
    await runFlow(flow, { dataDir: dir, runId: 'plural-1' });
    expect(holding(dir, [PLAIN_PW, PLAIN_KEY])).toEqual([]);
  });

  it('plural secret keys and name/value lists packed into the Backpack (state, value summary, keyframe)', async () => {
    const dir = dataDir();
    const flow = oneNode((_node, backpack) => {
      backpack.pack('config', { secrets: { db: PLAIN_PW } });
      backpack.pack('deployment', { env: [{ name: 'DB_PASSWORD', value: `${PLAIN_PW}b` }, { name: 'OPENAI_API_KEY', value: PLAIN_KEY }] });
    });
    await runFlow(flow, { dataDir: dir, runId: 'pairs-1', keyframeInterval: 1 });
    expect(holding(dir, [PLAIN_PW, PLAIN_KEY])).toEqual([]);
  });

  it('a passphrase with blanks under `password`, cut short by the 80-character value summary', async () => {
    const dir = dataDir();
    const flow = oneNode((_node, backpack) => {
      backpack.pack('login', { user: 'bob', note: 'x'.repeat(30), password: 'correct horse battery staple' });
    });
    await runFlow(flow, { dataDir: dir, runId: 'summary-1' });
    expect(holding(dir, ['horse', 'battery', 'staple'])).toEqual([]);
  });

  it('flow.json recorded with a run: node params with a plural secret key and a name/value header list', async () => {
    const dir = dataDir();
    const config = {
      namespace: 'audit',
      nodes: [{ id: 'call', type: 'HttpNode', params: { secrets: { db: PLAIN_PW }, headers: [{ name: 'X-Api-Key', value: PLAIN_KEY }] } }],
    };
    const run = await openNewRun({ dataDir: dir, runId: 'doc-1' });
    await run.saveDocument('flow', config);
    await run.release();
    expect(holding(dir, [PLAIN_PW, PLAIN_KEY])).toEqual([]);
  });

  it('memory item metadata with a plural secret key and a name/value env list (items and keyword index)', async () => {
    const dir = dataDir();
    const store = new MemoryStore({ dataDir: dir });
    await store.write({ id: 'm1', content: 'deploy notes', keywords: ['deploy'], metadata: { secrets: { db: PLAIN_PW }, env: [{ name: 'OPENAI_API_KEY', value: PLAIN_KEY }] } });
    expect(holding(dir, [PLAIN_PW, PLAIN_KEY])).toEqual([]);
  });
});

describe("an agent's tool traffic writes no credential of these formats", () => {
  let server: OpenAIServer;
  beforeAll(async () => (server = await startOpenAIServer()));
  afterAll(() => server.close());

  async function agentRun(dir: string, runId: string, toolResult: unknown, toolArgs: Record<string, unknown>): Promise<void> {
    const tool = defineTool({ description: 'read a file or call an API', inputSchema: z.object({}).passthrough(), execute: () => toolResult });
    const flow = new Flow({ namespace: 'audit' });
    const agent = flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', model: 'openai-compatible:test-model', baseURL: server.baseURL, apiKey: 'sk-agent-0123456789', retry: { baseDelayMs: 1 } });
    agent.registerTool('fetch', tool);
    server.enqueue({ kind: 'tool_calls', calls: [{ id: 'call_1', name: 'fetch', arguments: toolArgs }] }, { kind: 'text', text: 'done' });
    await runFlow(flow, { dataDir: dir, runId, input: { question: 'go' }, keyframeInterval: 1 });
  }

  it('tool-call arguments with headers as a name/value list (HAR, fetch-tool style)', async () => {
    const dir = dataDir();
    await agentRun(dir, 'tool-args', { status: 200 }, { url: 'https://api.example.com', headers: [{ name: 'X-Api-Key', value: PLAIN_KEY }] });
    expect(holding(dir, [PLAIN_KEY])).toEqual([]);
  });

  it('a tool result holding ~/.docker/config.json (auths.*.auth = base64 user:password)', async () => {
    const dir = dataDir();
    const auth = Buffer.from(`bob:${PLAIN_PW}`).toString('base64');
    await agentRun(dir, 'tool-docker', { text: JSON.stringify({ auths: { 'https://index.docker.io/v1/': { auth } } }), parsed: { auths: { 'ghcr.io': { auth } } } }, { path: '~/.docker/config.json' });
    expect(holding(dir, [auth])).toEqual([]);
  });

  it('a tool result holding a kubeconfig (client-key-data = base64 PEM private key)', async () => {
    const dir = dataDir();
    const keyData = Buffer.from('-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzXk\n-----END RSA PRIVATE KEY-----\n').toString('base64');
    await agentRun(dir, 'tool-kube', { text: `apiVersion: v1\nusers:\n- name: admin\n  user:\n    client-key-data: ${keyData}\n` }, { path: '~/.kube/config' });
    expect(holding(dir, [keyData.slice(0, 40)])).toEqual([]);
  });

  it('a tool result holding ~/.netrc (`password <value>`, blank-separated)', async () => {
    const dir = dataDir();
    await agentRun(dir, 'tool-netrc', { text: `machine api.example.com login bob password ${PLAIN_PW}\n` }, { path: '~/.netrc' });
    expect(holding(dir, [PLAIN_PW])).toEqual([]);
  });
});

