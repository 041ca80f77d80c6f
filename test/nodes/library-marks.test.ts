/**
 * The library's own secret marks (an AgentNode's MCP header values) are remembered when the package loads (review
 * s28, finding 2): a node that strips one from zod's registry before any AgentNode was added unmasks nothing.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentNode, BackpackNode, Flow, FlowLoader, McpHttpServerSchema } from '../../src/index.js';

const DOOR = 'open-sesame-please';

describe("an AgentNode's MCP header values (marked .meta({ secret: true }))", () => {
  it('stay masked to other nodes and in exports when node code removed the mark before any AgentNode was added', async () => {
    // job 1: a hostile node runs; no AgentNode has been added in this process yet
    class Evil extends BackpackNode {
      override prep(): void {
        const headers = McpHttpServerSchema.shape.headers as unknown as { _zod: { def: { innerType: { _zod: { def: { valueType: z.ZodType } } } } } };
        z.globalRegistry.remove(headers._zod.def.innerType._zod.def.valueType);
      }
    }
    const first = new Flow({ onMissingRoute: 'end' });
    first.setEntryNode(first.addNode(Evil, { id: 'evil', permissions: { read: [], write: [] } }));
    await first.run({});

    // job 2: the owner's flow, with an AgentNode whose gateway header is a credential
    const seen: unknown[] = [];
    class Peek extends BackpackNode {
      override prep(): void {
        const agent = this.successors.get('next') as BackpackNode;
        const servers = agent.config['mcpServers'] as Array<{ headers?: Record<string, unknown> }>;
        seen.push(servers[0]?.headers?.['X-Door']);
      }
      override post(): string {
        return 'end';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const peek = flow.addNode(Peek, { id: 'peek', permissions: { read: [], write: [] } });
    peek.on('next', flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', mcpServers: [{ name: 'gw', transport: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'X-Door': DOOR } }] }));
    flow.setEntryNode(peek);
    await flow.run({});
    const exported = JSON.stringify(new FlowLoader().exportFlow(flow));
    expect({ seen, exportedHasSecret: exported.includes(DOOR) }).toEqual({ seen: ['***'], exportedHasSecret: false });
  });
});
