/**
 * Review s42: "one Flow, one run at a time" (src/nodes/flow.ts run / #takeTopLevel) is checked only when no node
 * execution is current. Called from inside any node's prep/exec/post, `flow.run(input)` of another top-level Flow
 * (one with its own Backpack, not built on the node's handle) takes the nested path (`if (parent)`): no claim, no
 * FlowError. The caller's input is packed, as the owner, into the Backpack of the run under way, and the flow's nodes
 * run a second time at once on that state: exactly the sharing the guard exists to refuse.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError, type BackpackHandle } from '../../src/index.js';

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** A flow (namespace qa) that answers its `question` after `wait`, saying which other keys it saw. */
function answering(wait?: Promise<void>): Flow {
  class Answer extends BackpackNode {
    override async post(backpack: BackpackHandle): Promise<undefined> {
      await wait;
      const seen = backpack.keys().filter((k) => k !== 'question' && k !== 'answer');
      backpack.pack('answer', `answer to ${String(backpack.unpack('question'))}; also saw [${seen.join(',')}]`);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'qa' });
  flow.addNode(Answer, { id: 'answer' });
  return flow;
}

describe('a second run of a Flow started from node code', () => {
  it('is refused while the Flow runs, and its input never reaches that run', async () => {
    const g = gate();
    const shared = answering(g.opened);
    const alice = shared.run({ question: 'alice' }, { runId: 'alice' });

    let outcome: unknown = 'not called';
    class CallsSharedFlow extends BackpackNode {
      override async post(): Promise<undefined> {
        try {
          outcome = await shared.run({ injected: 'from another request' });
        } catch (error) {
          outcome = error;
        }
        return undefined;
      }
    }
    const other = new Flow({ namespace: 'other' });
    other.addNode(CallsSharedFlow, { id: 'caller' });
    const bob = other.run({});
    await new Promise((resolve) => setTimeout(resolve, 20));
    g.open();
    await bob;
    await alice;

    expect(outcome).toBeInstanceOf(FlowError);
    expect(shared.backpack.peek('injected')).toBeUndefined();
    expect(shared.backpack.peek('answer')).toBe('answer to alice; also saw []');
  });
});
