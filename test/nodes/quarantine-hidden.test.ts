/**
 * Review s49a M1 (D9, D10): a node that may write a key but not read it, quarantining it, sees the same whether the
 * key existed or not: the answer false and no `backpack.quarantined` event, in its history or to its subscribers.
 * The owner still sees the event, marked `hidden`.
 */
import { describe, expect, it } from 'vitest';
import type { BackpackHandle, ItemAccessControl, NodePermissions } from '../../src/backpack/index.js';
import type { StreamEvent } from '../../src/events/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';

interface Seen {
  answer: boolean;
  history: unknown[];
  live: unknown[];
}

async function probeQuarantine(present: boolean, hide: { acl?: ItemAccessControl; permissions?: NodePermissions }): Promise<{ seen: Seen; owner: StreamEvent[] }> {
  let seen: Seen | undefined;
  class Vault extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      if (present) bp.pack('salary', 100, hide.acl ? { accessControl: hide.acl } : undefined);
      return undefined;
    }
  }
  class Probe extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      const live: unknown[] = [];
      this.eventStreamer.on('backpack.quarantined', (e) => void live.push(e.payload));
      const answer = bp.quarantine('salary', { reason: 'probe' });
      seen = { answer, history: this.eventStreamer.getHistory({ type: 'backpack.quarantined' }).map((e) => e.payload), live };
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  flow.addNode(Vault, { id: 'hr' }).next(flow.addNode(Probe, { id: 'probe', ...(hide.permissions ? { permissions: hide.permissions } : {}) }));
  await flow.run();
  return { seen: seen!, owner: flow.eventStreamer.getHistory({ type: 'backpack.quarantined' }) };
}

describe('quarantine of a key the node may not read', () => {
  it.each([
    ['an item rule (read by app.hr only)', { acl: { read: ['app.hr'] } }],
    ['its own key rules (reads pub only, writes anything)', { permissions: { read: ['pub'], write: ['**'] } }],
  ] as const)('hidden by %s: the node sees the same with or without the key; the owner sees the event, marked hidden', async (_name, hide) => {
    const withKey = await probeQuarantine(true, hide);
    const without = await probeQuarantine(false, hide);
    expect(withKey.seen).toEqual({ answer: false, history: [], live: [] });
    expect(withKey.seen).toEqual(without.seen);
    expect(withKey.owner.map((e) => e.payload)).toEqual([{ key: 'salary', reason: 'probe', hidden: true }]);
    expect(without.owner).toEqual([]);
  });

  it('a key the node may read: it sees its own quarantine, with its reason, and no hidden mark', async () => {
    const { seen } = await probeQuarantine(true, {});
    expect(seen).toEqual({ answer: true, history: [{ key: 'salary', reason: 'probe' }], live: [{ key: 'salary', reason: 'probe' }] });
  });

  it('quarantined while hidden, then packed by the node itself (now it may read the key): its own hidden quarantine stays out of its view (review s50a M1)', async () => {
    const probe = async (present: boolean): Promise<unknown[]> => {
      let seen: unknown[] = [];
      class Hr extends BackpackNode {
        override post(bp: BackpackHandle): undefined {
          if (present) bp.pack('salary', 100, { accessControl: { read: ['app.hr'] } });
          return undefined;
        }
      }
      class Probe extends BackpackNode {
        override post(bp: BackpackHandle): undefined {
          expect(bp.quarantine('salary', { reason: 'probe' })).toBe(false);
          bp.pack('salary', 0);
          seen = this.eventStreamer.getHistory({ type: 'backpack.quarantined' }).map((e) => e.payload);
          return undefined;
        }
      }
      const flow = new Flow({ namespace: 'app' });
      flow.addNode(Hr, { id: 'hr' }).next(flow.addNode(Probe, { id: 'probe' }));
      await flow.run();
      return seen;
    };
    expect(await probe(true)).toEqual([]);
    expect(await probe(false)).toEqual([]);
  });
});
