/**
 * Review s52a H1 and H2: a tool registered on a tool node runs as that node, so no other node's code reaches it: the
 * `tools` getter refuses another node's code (it handed out the registered objects, whose `execute` or schema's
 * `safeParse` another node then rewrote), the node keeps a frozen copy of what it calls, and code in no execution
 * cannot register or read tools once the flow has run (escaped node code would pass for the owner).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, LlmError, ToolExecutionNode, defineTool, type BackpackHandle } from '../../../src/index.js';

class Vault extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack('token', 'sk-SECRET');
    bp.pack('toolCalls', [{ toolCallId: 'c1', toolName: 'lookup', input: { q: 'tides' } }]);
    return undefined;
  }
}

function flowWith(Evil: typeof BackpackNode): { flow: Flow; runner: ToolExecutionNode; tool: ReturnType<typeof defineTool> } {
  const flow = new Flow({ namespace: 'app' });
  const vault = flow.addNode(Vault, { id: 'vault' });
  const evil = flow.addNode(Evil, { id: 'evil', permissions: { deny: ['token'] } });
  const runner = flow.addNode(ToolExecutionNode, { id: 'tools', permissions: { read: ['token', 'toolCalls'], write: ['toolResults', 'toolCalls', 'tools.**'] } });
  const tool = defineTool({ description: 'looks up', inputSchema: z.object({ q: z.string() }), execute: async ({ q }: { q: string }) => `tide table for ${q}` });
  runner.registerTool('lookup', tool);
  vault.next(evil).next(runner);
  return { flow, runner, tool };
}

describe("another node's code and a tool node's tools", () => {
  it('reading them is refused; the tool runs as registered', async () => {
    const outcomes: unknown[] = [];
    class Evil extends BackpackNode {
      override exec(): undefined {
        try {
          outcomes.push((this.successors.get('default') as ToolExecutionNode).tools);
        } catch (error) {
          outcomes.push(error);
        }
        return undefined;
      }
    }
    const { flow } = flowWith(Evil as typeof BackpackNode);
    await flow.run();
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toBeInstanceOf(LlmError);
    expect((outcomes[0] as Error).message).toBe("Node 'evil' cannot read the tools of node 'tools': they run as that node");
    expect(flow.backpack.unpack('toolResults')).toEqual([{ toolCallId: 'c1', toolName: 'lookup', output: 'tide table for tides', attempts: 1 }]);
  });

  it("the caller's own object changed after registerTool changes nothing the node calls", async () => {
    class Idle extends BackpackNode {}
    const { flow, tool } = flowWith(Idle as typeof BackpackNode);
    (tool as { execute: unknown }).execute = async () => 'rewritten';
    await flow.run();
    expect(flow.backpack.unpack('toolResults')).toEqual([{ toolCallId: 'c1', toolName: 'lookup', output: 'tide table for tides', attempts: 1 }]);
  });

  it('code in no execution reads and registers tools before the first run, not after', async () => {
    class Idle extends BackpackNode {}
    const { flow, runner } = flowWith(Idle as typeof BackpackNode);
    expect([...runner.tools.keys()]).toEqual(['lookup']);
    await flow.run();
    expect(() => runner.tools).toThrow(/cannot read the tools of node 'tools' once its flow's first run has started/);
    expect(() => runner.registerTool('more', defineTool({ description: 'd', inputSchema: z.object({}), execute: async () => 'x' }))).toThrow(
      /cannot register a tool on node 'tools' once its flow's first run has started/,
    );
  });
});
