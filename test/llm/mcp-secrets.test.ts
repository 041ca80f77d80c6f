/**
 * What of an MCP server declaration counts as a credential (mcpServerSecrets), how its URL is shown in messages
 * (maskedMcpUrl, describeMcpServer), and that a flow's export and its recorded config mask header and env values
 * whatever their names (audit-s23b F1, F5), and the credentials of a server URL (review s24, finding 3).
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { AgentNode, describeMcpServer, llmNodeTypes } from '../../src/nodes/llm/index.js';
import { mcpServerSecrets } from '../../src/nodes/llm/mcp-secrets.js';
import { maskedMcpUrl } from '../../src/nodes/llm/index.js';
import { paramsOf } from '../../src/nodes/backpack-node.js';
import { FlowLoader } from '../../src/serialization/index.js';
import { scriptedModel } from './helpers.js';

describe('mcpServerSecrets', () => {
  it('takes every header value but plain ones, and the credential of a `Scheme credential` value on its own', () => {
    const secrets = mcpServerSecrets({
      name: 'gw',
      transport: 'http',
      url: 'http://127.0.0.1:3000/mcp',
      headers: { 'X-Auth': 'opaque-gateway-value', Authorization: 'Bearer tok-12345678', Accept: 'application/json', 'User-Agent': 'backpackflow/1' },
    });
    expect(secrets.sort()).toEqual(['Bearer tok-12345678', 'opaque-gateway-value', 'tok-12345678'].sort());
  });

  it('takes every env value of a stdio server; short values only under a secret-looking name', () => {
    const secrets = mcpServerSecrets({ name: 'local', transport: 'stdio', command: 'node', env: { SVC_CRED: 'gw-live-7f3a9c2e', LOG_LEVEL: 'info', DEBUG: '1', DB_PASSWORD: 'pw42' } });
    expect(secrets.sort()).toEqual(['gw-live-7f3a9c2e', 'pw42'].sort());
  });

  it('takes the user name and password, query values and token-like path segments of the URL, decoded and as written', () => {
    const secrets = mcpServerSecrets({ name: 'hosted', transport: 'http', url: 'https://user%40corp:p%40ss-word@mcp.example.com/s/u9x2k7q4m1z8w3v6/production-gateway/mcp?api_key=k3y9&access=ab%2Bcd%2Fef%3D12&format=json' });
    expect(secrets.sort()).toEqual(['user%40corp', 'user@corp', 'p%40ss-word', 'p@ss-word', 'u9x2k7q4m1z8w3v6', 'k3y9', 'ab%2Bcd%2Fef%3D12', 'ab+cd/ef=12'].sort());
  });
});

describe('the URL in messages', () => {
  it('shows scheme, host and path, with token-like path segments and every query value masked, and no userinfo', () => {
    expect(maskedMcpUrl('https://me:pw@mcp.example.com/s/u9x2k7q4m1z8w3v6/mcp?access=tok&format=json#frag')).toBe('https://mcp.example.com/s/***/mcp?access=***&format=***');
    expect(maskedMcpUrl('http://127.0.0.1:3000/mcp')).toBe('http://127.0.0.1:3000/mcp');
    expect(describeMcpServer({ name: 'h', transport: 'http', url: 'http://127.0.0.1:9/a-very-long-but-plain-name/mcp' })).toBe('http: http://127.0.0.1:9/a-very-long-but-plain-name/mcp');
  });

  it('describes a stdio server without its env values, should its command line repeat one', () => {
    expect(describeMcpServer({ name: 's', transport: 'stdio', command: 'srv', args: ['--login', 'gw-live-7f3a9c2e'], env: { SVC_CRED: 'gw-live-7f3a9c2e' } })).toBe('stdio: srv --login ***');
  });
});

describe('a flow with MCP credentials under names that do not look secret', () => {
  const server = { name: 'gw', transport: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'X-Auth': 'opaque-gateway-value' } };
  const stdio = { name: 'local', transport: 'stdio', command: 'node', env: { SVC_CRED: 'svc-cred-value-1', TOKEN_FROM_ENV: '${SVC_TOKEN}' } };
  const config = { version: '2.0.0', namespace: 'mcp', nodes: [{ type: 'AgentNode', id: 'agent', params: { promptFrom: 'q', mcpServers: [server, stdio] } }] };

  function loader(): FlowLoader {
    const l = new FlowLoader();
    for (const [type, NodeClass] of Object.entries(llmNodeTypes)) l.register(type, NodeClass);
    return l;
  }

  it('exports header and env values as *** (with includeSensitive: as written)', async () => {
    const l = loader();
    const flow = await l.loadFlow(config, { model: scriptedModel(['ok']).model }, { env: { SVC_TOKEN: 'resolved-token-value' } });
    const servers = l.exportFlow(flow).nodes[0]!.params.mcpServers as Array<Record<string, unknown>>;
    expect(servers[0]!.headers).toEqual({ 'X-Auth': '***' });
    expect(servers[1]!.env).toEqual({ SVC_CRED: '***', TOKEN_FROM_ENV: '***' });
    expect((l.exportFlow(flow, { includeSensitive: true }).nodes[0]!.params.mcpServers as unknown[])[1]).toEqual(stdio);
  });

  it('records them masked, keeping ${ENV} references as written', () => {
    const recorded = JSON.stringify(loader().maskConfigSecrets(config));
    expect(recorded).not.toContain('opaque-gateway-value');
    expect(recorded).not.toContain('svc-cred-value-1');
    expect(recorded).toContain('"TOKEN_FROM_ENV":"${SVC_TOKEN}"');
  });
});

describe('credentials in other places of a URL (review s26, finding 7)', () => {
  const BARE = 'u9x2k7q4m1z8w3v6p0';
  const HOST = 'q7w8e9r0t1y2u3i4';
  const LOWER = 'kqzvhtpwmxbnrjdfyglc';
  it('a bare query token, a token host label and a long run of lower-case letters in the path are masked and scrubbed; names are not', () => {
    expect(maskedMcpUrl(`https://mcp.example.com/mcp?${BARE}`)).toBe('https://mcp.example.com/mcp?***');
    expect(maskedMcpUrl(`https://${HOST}.mcp.example.com:8443/mcp`)).toBe('https://***.mcp.example.com:8443/mcp');
    expect(maskedMcpUrl(`https://mcp.example.com/s/${LOWER}/mcp`)).toBe('https://mcp.example.com/s/***/mcp');
    expect(maskedMcpUrl('https://eu-west.gateway.example.com/production-gateway/mcp?debug')).toBe('https://eu-west.gateway.example.com/production-gateway/mcp?debug');
    expect(maskedMcpUrl('http://127.0.0.1:3000/mcp')).toBe('http://127.0.0.1:3000/mcp');
    // Parameter names, even long ones, are names (review s28, finding 3).
    const signed = 'https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F2024&X-Amz-SignedHeaders=host';
    expect(maskedMcpUrl(signed)).toBe('https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=***&X-Amz-Credential=***&X-Amz-SignedHeaders=***');
    expect(mcpServerSecrets({ name: 's3', transport: 'http', url: signed }).filter((value) => value.startsWith('X-'))).toEqual([]);
    // Parameter names in camelCase are names (review s30, finding 2).
    expect(maskedMcpUrl('https://mcp.example.com/sse?includeDeprecatedTools=1&MaxResultsPerPage=5')).toBe('https://mcp.example.com/sse?includeDeprecatedTools=***&MaxResultsPerPage=***');
    // A token name of digits alone, or of letters alone (review s29, finding 2).
    expect(maskedMcpUrl('https://mcp.example.com/sse?83920174650193847561029384')).toBe('https://mcp.example.com/sse?***');
    expect(maskedMcpUrl('https://mcp.example.com/sse?qHzWbTkRmXvNpLcJdFgYsAeUoIrQ=1')).toBe('https://mcp.example.com/sse?***=***');
    // A token used as a query name, with a value or without (review s27, finding 6).
    expect(maskedMcpUrl(`https://mcp.example.com/mcp?${BARE}=1&mode=x`)).toBe('https://mcp.example.com/mcp?***=***&mode=***');
    expect(maskedMcpUrl(`https://mcp.example.com/mcp?${BARE}=`)).toBe('https://mcp.example.com/mcp?***=***');
    for (const [url, token] of [[`https://mcp.example.com/mcp?${BARE}`, BARE], [`https://mcp.example.com/mcp?${BARE}=1`, BARE], [`https://mcp.example.com/mcp?=${BARE}`, BARE], [`https://${HOST}.mcp.example.com/mcp`, HOST], [`https://mcp.example.com/s/${LOWER}/mcp`, LOWER]] as const) {
      expect(mcpServerSecrets({ name: 'hosted', transport: 'http', url })).toContain(token);
    }
  });
});

describe('the credentials of an MCP server URL are secret params (review s24, finding 3)', () => {
  const PATH_TOKEN = 'pA7x9Qk2Lm4Zt8Rw';
  const QUERY_TOKEN = 'u9x2k7q4m1z8w3v6';
  const url = `https://user:pw-0d9f8e7c@mcp.example.com/s/${PATH_TOKEN}/mcp?access=${QUERY_TOKEN}`;
  const masked = 'https://mcp.example.com/s/***/mcp?access=***';
  const params = { promptFrom: 'q', model: 'openai-compatible:m', baseURL: 'http://127.0.0.1:9', mcpServers: [{ name: 'hosted', transport: 'http', url }] };

  function loader(): FlowLoader {
    const l = new FlowLoader();
    for (const [type, NodeClass] of Object.entries(llmNodeTypes)) l.register(type, NodeClass);
    return l;
  }

  it("another node reads the URL without them (host and path shown), the agent's own code as written", async () => {
    const seen: unknown[] = [];
    class Reader extends BackpackNode {
      override prep(): void {
        const agent = this.successors.get('ask') as BackpackNode;
        seen.push((agent.config['mcpServers'] as Array<{ url: string }>)[0]!.url, (agent.params['mcpServers'] as Array<{ url: string }>)[0]!.url);
      }
      override post(): string {
        return 'end';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const reader = flow.addNode(Reader, { id: 'reader' });
    const agent = flow.addNode(AgentNode, { id: 'agent', ...params });
    reader.on('ask', agent);
    flow.setEntryNode(reader);
    await flow.run({ q: 'hi' });
    expect(seen).toEqual([masked, masked]);
    // The agent itself holds it as given.
    expect((paramsOf(agent)['mcpServers'] as Array<{ url: string }>)[0]!.url).toBe(url);
  });

  it('exportFlow writes the URL without them (with includeSensitive: as written); a recorded flow file keeps ${ENV} references', async () => {
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(AgentNode, { id: 'agent', ...params });
    const l = loader();
    const exported = (l.exportFlow(flow).nodes[0]!.params.mcpServers as Array<{ url: string }>)[0]!.url;
    expect(exported).toBe(masked);
    expect((l.exportFlow(flow, { includeSensitive: true }).nodes[0]!.params.mcpServers as Array<{ url: string }>)[0]!.url).toBe(url);
    const file = { version: '2.0.0', namespace: 'mcp', nodes: [{ type: 'AgentNode', id: 'agent', params: { ...params, mcpServers: [{ name: 'a', transport: 'http', url }, { name: 'b', transport: 'http', url: '${MCP_URL}' }] } }] };
    const recorded = JSON.stringify(l.maskConfigSecrets(file));
    expect(recorded).not.toContain(PATH_TOKEN);
    expect(recorded).not.toContain(QUERY_TOKEN);
    expect(recorded).not.toContain('pw-0d9f8e7c');
    expect(recorded).toContain('"url":"${MCP_URL}"');
  });
});
