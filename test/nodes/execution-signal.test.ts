/**
 * A node's `scope.signal` is its own (review s26, finding 2): aborted with the run's signal and reason, its listeners
 * run in the node's own execution, and the run's signal (the owner's object) never reaches node code. The run's
 * signal itself was handed to every node: a listener node code added to it ran wherever the owner called `abort()`
 * (in no execution, or in another node's live execution, as that node), and a getter defined on it ran where the
 * library read it (in a failing node's execution).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, type BackpackHandle, type BackpackNodeClass, type RunScope } from '../../src/index.js';

const SECRET = 'sk-live-SECRET-0123456789abcdef';

class Victim extends BackpackNode {
  static override paramsSchema = z.object({ apiKey: z.string().meta({ secret: true }) }).passthrough();
  override async prep(bp: BackpackHandle): Promise<void> {
    bp.pack('victim-progress', 'started');
    await new Promise((r) => setTimeout(r, 20));
  }
  override post(): string {
    return 'end';
  }
}

/** A flow of an `evil` node (no reads, no writes) routed by 'next' to a `victim` holding a secret param. */
function evilThenVictim(Evil: BackpackNodeClass, VictimClass: BackpackNodeClass = Victim): Flow {
  const flow = new Flow({ onMissingRoute: 'end' });
  const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: [], write: [] } });
  evil.on('next', flow.addNode(VictimClass, { id: 'victim', apiKey: SECRET }));
  flow.setEntryNode(evil);
  return flow;
}

describe("a node's scope.signal", () => {
  it("owner aborts while a node waits: its listener runs as that node, not as the owner (another node's events stay closed)", async () => {
    const stolen: unknown[] = [];
    class Evil extends BackpackNode {
      override async prep(_bp: BackpackHandle, scope: RunScope): Promise<void> {
        const victim = this.successors.get('next') as BackpackNode;
        stolen.push(victim.config['apiKey']); // masked here, as it should be
        // Still running when the owner aborts, so the listener is live and runs. Run as the owner (the code that
        // called abort), it could subscribe to the victim's events, as only the owner and the victim may.
        await new Promise<void>((resolve) =>
          scope.signal!.addEventListener('abort', () => {
            stolen.push(victim.config['apiKey']);
            try {
              victim.eventStreamer.on('*', (event) => stolen.push(event));
              stolen.push('subscribed');
            } catch (error) {
              stolen.push((error as Error).message);
            }
            resolve();
          }),
        );
      }
      override post(): string {
        return 'next';
      }
    }
    const flow = evilThenVictim(Evil);
    const controller = new AbortController();
    const run = flow.run(undefined, { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 5));
    controller.abort(new Error('stop'));
    await run.catch(() => undefined);
    expect(stolen).toEqual(['***', '***', expect.stringMatching(/Node 'evil' cannot subscribe to events through the eventStreamer of node 'victim'/)]);
  });

  it("owner aborts from an event handler (in another node's execution): a node's listener never acts as that node", async () => {
    class Evil extends BackpackNode {
      override prep(_bp: BackpackHandle, scope: RunScope): void {
        const victim = this.successors.get('next') as BackpackNode;
        scope.signal!.addEventListener('abort', () => {
          try {
            victim.backpack.pack('approved', 'forged by evil');
          } catch {
            // refused: good
          }
        });
      }
      override post(): string {
        return 'next';
      }
    }
    const flow = evilThenVictim(Evil);
    const controller = new AbortController();
    // An ordinary owner pattern: stop the run when something shows up in the event stream.
    flow.eventStreamer.on('backpack.packed', (e) => {
      if ((e.payload as { key?: string } | undefined)?.key === 'victim-progress') controller.abort(new Error('budget'));
    });
    await flow.run(undefined, { signal: controller.signal }).catch(() => undefined);
    expect(flow.backpack.getItem('approved')).toBeUndefined();
  });

  it("an `aborted` getter a node defines on its signal never runs in another node's execution (the library reads the run's signal)", async () => {
    class Evil extends BackpackNode {
      override prep(_bp: BackpackHandle, scope: RunScope): void {
        const victim = this.successors.get('next') as BackpackNode;
        Object.defineProperty(scope.signal!, 'aborted', {
          get() {
            try {
              victim.backpack.pack('approved', 'forged by evil');
            } catch {
              // refused: good
            }
            return false;
          },
        });
      }
      override post(): string {
        return 'next';
      }
    }
    class Failing extends Victim {
      override async prep(): Promise<void> {
        throw new Error('victim fails');
      }
    }
    const flow = evilThenVictim(Evil, Failing);
    await flow.run(undefined, { signal: new AbortController().signal }).catch(() => undefined);
    expect(flow.backpack.getItem('approved')).toBeUndefined();
  });

  it('is aborted with the run (same reason), and its listeners run as the node: its own backpack, others\' secrets masked', async () => {
    const seen: unknown[] = [];
    const reason = new Error('stop');
    class Waiter extends BackpackNode {
      override async prep(bp: BackpackHandle, scope: RunScope): Promise<void> {
        const victim = this.successors.get('next') as BackpackNode;
        await new Promise<void>((resolve) => {
          scope.signal!.addEventListener('abort', () => {
            seen.push(scope.signal!.reason === reason, victim.config['apiKey']);
            bp.pack('noticed', true);
            resolve();
          });
        });
      }
      override post(): string {
        return 'next';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const waiter = flow.addNode(Waiter, { id: 'waiter', permissions: { read: [], write: ['noticed'] } });
    waiter.on('next', flow.addNode(Victim, { id: 'victim', apiKey: SECRET }));
    flow.setEntryNode(waiter);
    const controller = new AbortController();
    const run = flow.run(undefined, { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 5));
    controller.abort(reason);
    await expect(run).rejects.toBe(reason);
    expect(seen).toEqual([true, '***']);
    expect(flow.backpack.getItem('noticed')?.metadata.sourceNodeId).toBe('waiter');
  });
});
