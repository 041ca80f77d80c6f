/**
 * Review s49a L1: a node files the events of a child it registers under another node's span (D11: each node execution
 * is a span; D6: a handle acts as its own node). `NodeBinding.withContext` refuses a span other than that of the execution that registered the child.
 */
import { describe, expect, it } from 'vitest';
import type { BackpackHandle } from '../../src/backpack/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import type { StreamEvent } from '../../src/events/index.js';

describe("a node files events under another node's span", () => {
  it("registerChild(...).withContext({ spanId }) with the victim span is refused: nothing lands in the victim span", async () => {
    let victimSpan: string | undefined;
    const events: StreamEvent[] = [];
    class Victim extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('v', 1);
        return undefined;
      }
    }
    class Attacker extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        victimSpan = this.eventStreamer.getHistory({ type: 'node.started' }).find((e) => e.nodeId === 'victim')?.spanId;
        const child = bp.registerChild({ nodeId: 'victim', nodeName: 'Victim', namespace: `${this.namespace}.x` });
        const forged = child.withContext({ spanId: victimSpan });
        forged.pack('forged', 'x');
        forged.quarantine('forged', { reason: 'looks like the victim did this' });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.eventStreamer.on('*', (e) => void events.push(e));
    flow.addNode(Victim, { id: 'victim' }).next(flow.addNode(Attacker, { id: 'attacker' }));
    await flow.run().catch(() => undefined);
    expect(victimSpan).toBeDefined();
    // Correct: a handle's events carry its own execution's span (or one under it), never another execution's span.
    const inVictimSpan = events.filter((e) => e.spanId === victimSpan && e.namespace !== 'app.victim');
    expect(inVictimSpan.map((e) => `${e.type} ${e.nodeId} ${e.namespace}`)).toEqual([]);
  });
});
