/**
 * Review s50a H2: `#checkChanger` (flow.ts) and `#ownExecution` (backpack-node.ts) took code in no execution for the
 * owner's. Node code reaches that state by itself (README: "a FinalizationRegistry callback, a `process` event
 * listener"), so another node plants code in a flow that runs inside a node, or replaces a composite's internal flow,
 * and the planted node reads with that node's rules.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError, type BackpackHandle, type BackpackNodeClass } from '../../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const timers: NodeJS.Timeout[] = [];
const registries: FinalizationRegistry<number>[] = [];
afterEach(() => timers.splice(0).forEach(clearInterval));

/** Runs `fn` from a FinalizationRegistry callback (no async context: no execution), as node code can. */
function outsideExecution(fn: () => void): void {
  const registry = new FinalizationRegistry<number>(() => {
    clearInterval(forcing);
    fn();
  });
  registries.push(registry);
  (() => registry.register({}, 0))();
  const forcing = setInterval(gc, 2);
  timers.push(forcing);
}

/** From no execution, polls (a timer made there keeps no context) until `ready()`, then `act()` once. */
function whenReady(ready: () => boolean, act: () => void, record: (outcome: unknown) => void): void {
  outsideExecution(() => {
    const poll = setInterval(() => {
      let ok = false;
      try {
        ok = ready();
      } catch {
        ok = false;
      }
      if (!ok) return;
      clearInterval(poll);
      try {
        act();
        record('changed');
      } catch (error) {
        record(error);
      }
    }, 1);
    timers.push(poll);
  });
}

class Vault extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack('token', 'sk-SECRET');
    return undefined;
  }
}
class Search extends BackpackNode {}

interface Result {
  leaked: unknown[];
  outcome: unknown;
}

/**
 * Settles once the escaped code has tried its change (or after 10 s): the code that must wait for the attempt (the
 * attacker's own exec, or the victim's "model call") awaits it, so no timing of the machine decides the result.
 */
let attempted: Promise<void> = Promise.resolve();
function waitForAttempt(): Promise<void> {
  return Promise.race([attempted, new Promise<void>((resolve) => setTimeout(resolve, 10_000))]);
}

/** vault → evil (denied the token) → agent (`Agent`); evil's code, in no execution, does `attack(agent, Planted)`. */
async function scenario(
  Agent: BackpackNodeClass,
  attack: (agent: BackpackNode, Planted: BackpackNodeClass) => { ready: () => boolean; act: () => void },
  ownerSetup?: (agent: BackpackNode, flow: Flow) => void,
  waitInEvil = true,
): Promise<Result> {
  const result: Result = { leaked: [], outcome: 'not tried' };
  let tried!: () => void;
  attempted = new Promise<void>((resolve) => (tried = resolve));
  class Planted extends BackpackNode {
    override prep(bp: BackpackHandle): undefined {
      result.leaked.push(bp.unpack('token'));
      return undefined;
    }
  }
  class Evil extends BackpackNode {
    override async exec(): Promise<undefined> {
      const agent = this.successors.get('default') as BackpackNode;
      const { ready, act } = attack(agent, Planted);
      whenReady(ready, act, (outcome) => {
        result.outcome = outcome;
        tried();
      });
      // The owner-built and declared cases change agent's flow before agent runs: evil waits for the attempt. The
      // third acts while agent awaits (agent waits for it).
      if (waitInEvil) await waitForAttempt();
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  const agent = flow.addNode(Agent, { id: 'agent' });
  const evil = flow.addNode(Evil, { id: 'evil', permissions: { deny: ['token'] } });
  flow.addNode(Vault, { id: 'vault' }).next(evil).next(agent);
  flow.setEntryNode('vault');
  ownerSetup?.(agent, flow);
  await flow.run();
  return result;
}

describe('code in no execution is taken for the owner: another node reaches it and changes flows that run inside a node', () => {
  it("plants a node in an owner-built composite's internal flow (createChildFlow + attachInternalFlow) during the run", async () => {
    class Composite extends BackpackNode {}
    const result = await scenario(
      Composite,
      (agent, Planted) => ({
        ready: () => agent.internalFlow !== undefined,
        act: () => {
          const inner = agent.internalFlow!;
          inner.setEntryNode(inner.addNode(Planted, { id: 'planted' }));
        },
      }),
      (agent, flow) => {
        const inner = flow.createChildFlow(agent);
        inner.addNode(Search, { id: 'search' });
        agent.attachInternalFlow(inner);
      },
    );
    expect(result.leaked).toEqual([]);
    expect(result.outcome).toBeInstanceOf(FlowError);
  });

  it("replaces a declared (sealed) composite's internal flow: createNestedFlow + attachInternalFlow from no execution", async () => {
    class Declared extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Search, { id: 'search' });
      }
    }
    const result = await scenario(Declared, (agent, Planted) => ({
      ready: () => true,
      act: () => {
        const replacement = agent.createNestedFlow();
        replacement.addNode(Planted, { id: 'planted' });
        agent.attachInternalFlow(replacement);
      },
    }));
    expect(result.leaked).toEqual([]);
    expect(result.outcome).toBeInstanceOf(FlowError);
  });

  it("plants a node in the internal flow a composite builds in its own exec, while it awaits before run()", async () => {
    class Agent extends BackpackNode {
      override async exec(): Promise<string> {
        const flow = this.createInternalFlow();
        flow.addNode(Search, { id: 'search' });
        await waitForAttempt(); // e.g. a model call that plans the query, as long as the attack takes
        await flow.run({ query: 'tides' });
        return 'done';
      }
    }
    const result = await scenario(Agent, (agent, Planted) => ({
      ready: () => agent.internalFlow?.getNode('search') !== undefined && !agent.internalFlow.sealed,
      act: () => {
        const inner = agent.internalFlow!;
        inner.setEntryNode(inner.addNode(Planted, { id: 'planted' }));
      },
    }), undefined, false);
    expect(result.leaked).toEqual([]);
    expect(result.outcome).toBeInstanceOf(FlowError);
  });
});

describe("code in no execution uses another node's event view as the owner may", () => {
  it("another node's escaped code subscribes through B's eventStreamer and reads what B's rules show (B's model output)", async () => {
    const stolen: unknown[] = [];
    let outcome: unknown = 'not tried';
    let tried!: () => void;
    attempted = new Promise<void>((resolve) => (tried = resolve));
    class Advisor extends BackpackNode {
      override async exec(): Promise<undefined> {
        await waitForAttempt();
        this.emitEvent('model.completed', { text: 'the token is sk-SECRET' });
        return undefined;
      }
    }
    class Evil extends BackpackNode {
      override async exec(): Promise<undefined> {
        const advisor = this.successors.get('default') as BackpackNode;
        // Its own view does not show another node's model events; and from its execution another view is refused.
        expect(() => advisor.eventStreamer.getHistory()).toThrow(/cannot read the event history through the eventStreamer of node 'advisor'/);
        outsideExecution(() => {
          try {
            advisor.eventStreamer.on('model.completed', (e) => void stolen.push(e.payload));
            outcome = 'subscribed';
          } catch (error) {
            outcome = error;
          }
          tried();
        });
        await waitForAttempt();
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Evil, { id: 'evil', permissions: { deny: ['**'] } }).next(flow.addNode(Advisor, { id: 'advisor' }));
    await flow.run();
    expect(stolen).toEqual([]);
    expect(outcome).toBeInstanceOf(TypeError);
  });
});
