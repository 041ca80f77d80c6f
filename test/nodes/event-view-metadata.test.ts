/**
 * Metadata of items a node may not read never reaches it through its event view, and an item rule's reader list is
 * never shown to a node, not even one it admits (D9). Found by the adversarial review of 2026-11-28.
 */
import { describe, expect, it } from 'vitest';
import type { BackpackHandle } from '../../src/backpack/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';

describe('metadata of items a node may not read', () => {
  it("an item rule's reader list is never shown to a node (D9), not even one the rule admits", async () => {
    let shown: unknown = 'not run';
    class Hr extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('salary', 100, { accessControl: { read: ['reader', 'ceo-private-channel'] } });
        return undefined;
      }
    }
    class Reader extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        shown = bp.getItem('salary')?.accessControl;
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Hr, { id: 'hr' }).next(flow.addNode(Reader, { id: 'reader' }));
    await flow.run();
    expect(shown).toBeUndefined();
  });

  it('the tags of a hidden (item-rule) version of a key reach a node through backpack.packed events once the key is readable', async () => {
    const seen: string[] = [];
    class Hr extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('doc', 'x', { tags: ['layoffs-2026-q3'], accessControl: { read: ['hr'] } });
        bp.pack('doc', 'public text');
        return undefined;
      }
    }
    class Reader extends BackpackNode {
      override post(): undefined {
        for (const e of this.eventStreamer.getHistory({ type: 'backpack.packed' })) seen.push(JSON.stringify(e.payload));
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Hr, { id: 'hr' }).next(flow.addNode(Reader, { id: 'reader' }));
    await flow.run();
    expect(seen.join('\n')).not.toContain('layoffs-2026-q3');
  });

  it('the reason a hidden item was quarantined reaches a node through backpack.quarantined once the key is readable again', async () => {
    const seen: string[] = [];
    class Hr extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('doc', 'ssn 123-45-6789', { accessControl: { read: ['hr'] } });
        bp.quarantine('doc', { reason: 'contains ssn 123-45-6789' });
        bp.pack('doc', 'public text');
        return undefined;
      }
    }
    class Reader extends BackpackNode {
      override post(): undefined {
        for (const e of this.eventStreamer.getHistory()) seen.push(JSON.stringify(e.payload));
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Hr, { id: 'hr' }).next(flow.addNode(Reader, { id: 'reader' }));
    await flow.run();
    expect(seen.join('\n')).not.toContain('123-45-6789');
  });

  it("a node that quarantined an item sees its own reason; a node's getItemsByNamespace and diff show no reader list either", async () => {
    const reasons: unknown[] = [];
    let listed: unknown[] = [];
    class Hr extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('doc', 'draft', { accessControl: { read: ['hr', 'reader', 'board-only'] } });
        bp.quarantine('doc', { reason: 'my own reason' });
        for (const e of this.eventStreamer.getHistory({ type: 'backpack.quarantined' })) reasons.push(e.payload.reason);
        bp.pack('memo', 'm', { accessControl: { read: ['hr', 'reader'] } });
        return undefined;
      }
    }
    class Reader extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        listed = bp.getItemsByNamespace('**').map((item) => item.accessControl);
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Hr, { id: 'hr' }).next(flow.addNode(Reader, { id: 'reader' }));
    await flow.run();
    expect(reasons).toEqual(['my own reason']);
    expect(listed).toEqual([undefined]);
    // The owner still sees the rule.
    expect(flow.backpack.getItem('memo')?.accessControl).toEqual({ read: ['hr', 'reader'] });
  });
});
