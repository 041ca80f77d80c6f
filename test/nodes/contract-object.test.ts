/**
 * Review s53a H2: a node class's data contract (`static inputs` / `static outputs`) is read-only as a static, but the
 * object it holds, and the zod schemas in it, are neither frozen nor copied. Another node reaches the class through
 * routes (`this.successors.get(..).constructor`) and changes the contract: the library then calls the attacker's
 * `safeParse` in the victim node's execution, with the value the victim's handle peeks (src/nodes/backpack-node.ts
 * #checkContract). A node denied a key reads it through a node allowed to.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, type BackpackHandle } from '../../src/index.js';

class Vault extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack('token', 'sk-SECRET');
    bp.pack('draft', 'text');
    return undefined;
  }
}

class Reader extends BackpackNode {
  static override inputs = { draft: z.string() };
}

function build(attack: (victim: BackpackNode) => void) {
  class Evil extends BackpackNode {
    override exec(): undefined {
      try {
        attack(this.successors.get('default') as BackpackNode);
      } catch {
        /* refused: fine */
      }
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  const vault = flow.addNode(Vault, { id: 'vault' });
  const evil = flow.addNode(Evil, { id: 'evil', permissions: { deny: ['token'] } });
  const reader = flow.addNode(Reader, { id: 'reader', permissions: { read: ['token', 'draft'] } });
  vault.next(evil).next(reader);
  return flow;
}

describe("a node class's data contract", () => {
  it('another node cannot add a key to the contract object (its safeParse would run on the victim handle)', async () => {
    const leaked: unknown[] = [];
    const flow = build((victim) => {
      const inputs = (victim.constructor as unknown as { inputs: Record<string, unknown> }).inputs;
      inputs.token = { safeParse: (value: unknown) => (leaked.push(value), { success: true, data: value }) };
    });
    await flow.run().catch(() => undefined);
    expect(leaked).toEqual([]);
  });
  it("another node cannot replace a contract schema's safeParse", async () => {
    const leaked: unknown[] = [];
    const flow = build((victim) => {
      const schema = (victim.constructor as unknown as { inputs: Record<string, { safeParse: unknown }> }).inputs.draft!;
      schema.safeParse = function () {
        leaked.push((victim as unknown as { backpack: BackpackHandle }).backpack.unpack('token'));
        return { success: true, data: undefined };
      };
    });
    await flow.run().catch(() => undefined);
    expect(leaked).toEqual([]);
  });
});
