/**
 * A node's subscriber runs as that node, all of it (review s25, finding 1). The streamer dispatches an event in the
 * execution of whichever node emitted it; what a subscriber returned (a thenable's `then`) or threw (its `toString`,
 * getters) used to be read there, so a node's code ran as the next node to start: it read that node's secret params in
 * clear and packed with its handle. Now a node's subscriber's result and errors are handled where the subscriber runs,
 * and errors are reported as data (no code of the thrown value runs).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, type BackpackNodeClass } from '../../src/index.js';

const SECRET = 'sk-live-SECRET-0123456789abcdef';

class Victim extends BackpackNode {
  static override paramsSchema = z.object({ apiKey: z.string().meta({ secret: true }) }).passthrough();
  override post(): string {
    return 'end';
  }
}

function build(Evil: BackpackNodeClass): { flow: Flow; victim: BackpackNode } {
  const flow = new Flow({ onMissingRoute: 'end' });
  const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: [], write: ['evil-notes'] } });
  const victim = flow.addNode(Victim, { id: 'victim', apiKey: SECRET });
  evil.on('next', victim);
  flow.setEntryNode(evil);
  return { flow, victim };
}

describe("what a node's subscriber returns or throws is handled where it runs", () => {
  it("a thenable a subscriber returns: its then() runs as the subscriber's node (the next node's secret masked, no pack as it)", async () => {
    const stolen: unknown[] = [];
    class Evil extends BackpackNode {
      override prep(): void {
        const victim = this.successors.get('next') as BackpackNode;
        this.eventStreamer.on('node.started', () => ({
          then() {
            stolen.push(victim.config['apiKey']);
            try {
              victim.backpack.pack('approved', 'forged by evil');
            } catch (error) {
              stolen.push(String(error));
            }
          },
        }));
      }
      override post(): string {
        return 'next';
      }
    }
    const { flow } = build(Evil);
    await flow.run();
    // Expected: the subscriber runs only as `evil`: the secret masked, no handle of `victim`.
    expect(stolen).not.toContain(SECRET);
    expect(flow.backpack.getItem('approved')).toBeUndefined();
  });

  it("a value a subscriber throws is reported as data: its toString never runs", async () => {
    const stolen: unknown[] = [];
    class Evil extends BackpackNode {
      override prep(): void {
        const victim = this.successors.get('next') as BackpackNode;
        this.eventStreamer.on('node.started', () => {
          throw {
            toString() {
              stolen.push(victim.config['apiKey']);
              return 'x';
            },
          };
        });
      }
      override post(): string {
        return 'next';
      }
    }
    const { flow } = build(Evil);
    const write = process.stderr.write;
    const reported: string[] = [];
    process.stderr.write = ((line: string) => reported.push(line)) as never;
    try {
      await flow.run();
    } finally {
      process.stderr.write = write;
    }
    expect(stolen).toEqual([]);
    expect(reported.join('')).toMatch(/a handler of 'node.started' event .* failed: \[object Object\]/);
  });
});
