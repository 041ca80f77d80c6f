/**
 * The payload a node emits is copied at emit (events/snapshot.ts), class instances and Proxies too (as their JSON
 * form, taken then): the node keeps no live object inside the event the owner's subscribers, the history and the
 * run's log hold, so it cannot rewrite the event after emit. Found by the review of the day's fixes, 2026-11-28.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

function allText(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out += allText(p);
    else out += readFileSync(p, 'utf8');
  }
  return out;
}

describe('a node rewrites its emitted event after emit', () => {
  it('a class instance in the payload is shared with the log: changed after emit, the log records the change', async () => {
    class Note {
      constructor(public text: string) {}
    }
    const seenByOwner: string[] = [];
    class Emitter extends BackpackNode {
      override post(): undefined {
        const note = new Note('as emitted');
        this.eventStreamer.emit({ type: 'custom', payload: { name: 'note', note } });
        note.text = 'REWRITTEN-AFTER-EMIT';
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Emitter, { id: 'e' });
    flow.eventStreamer.on('custom', (ev) => {
      queueMicrotask(() => seenByOwner.push(JSON.stringify(ev.payload)));
    });
    const dataDir = makeTempDir('event-copy-', 'test');
    await runFlow(flow, { dataDir, runId: 'r' });
    const disk = allText(dataDir);
    expect({ disk: disk.includes('REWRITTEN-AFTER-EMIT'), owner: seenByOwner.join() }).toEqual({ disk: false, owner: expect.not.stringContaining('REWRITTEN') });
  });

  it('a Proxy claiming a class prototype is kept as is, and its traps decide what the log records later', async () => {
    let phase = 'emit';
    class Emitter extends BackpackNode {
      override post(): undefined {
        class Tag {}
        const target = {} as Record<string, unknown>;
        const live = new Proxy(target, {
          getPrototypeOf: () => Tag.prototype,
          ownKeys: () => ['said'],
          getOwnPropertyDescriptor: () => ({ value: phase, enumerable: true, configurable: true, writable: true }),
          get: (_t, k) => (k === 'said' ? `said-at-${phase}` : undefined),
        });
        this.eventStreamer.emit({ type: 'custom', payload: { name: 'p', live } });
        phase = 'persist';
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Emitter, { id: 'e' });
    const dataDir = makeTempDir('event-copy-', 'test');
    await runFlow(flow, { dataDir, runId: 'r' });
    expect(allText(dataDir)).not.toContain('said-at-persist');
  });
});
