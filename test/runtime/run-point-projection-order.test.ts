/**
 * loadRunPoint of a run's last point compares the log with the run's projection, and a projection that counts more
 * than the log serves is a cut log. A live writer stores its projection after the events it counts: the projection
 * must be read before the log, or a step committed between the two reads looks like a cut log.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, loadRunPoint, runFlow } from '../../src/index.js';
import { FileRunStore, type RunStore } from '../../src/store/index.js';

class Step extends BackpackNode {
  override exec(): string {
    return 'ok';
  }
}

describe('loadRunPoint and a live writer', () => {
  it('reads the projection before the log: a step committed after the log was read is not taken for a cut log', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bf-point-order-'));
    const flow = new Flow();
    const [a, b] = ['a', 'b'].map((id) => flow.addNode(Step, { id }));
    a!.next(b!);
    await runFlow(flow, { dataDir, runId: 'live' });
    const store = new FileRunStore(dataDir);
    // The store as a reader sees it while a writer goes on: once the log has been read, the projection counts a step
    // more (the writer committed it and stored its projection meanwhile).
    let logRead = false;
    const live = new Proxy(store, {
      get(target, name, receiver) {
        if (name === 'readVerified') {
          return async function* (...args: Parameters<RunStore['readVerified']>) {
            yield* target.readVerified(...args);
            logRead = true;
          };
        }
        if (name === 'loadRunMeta') {
          return async (...args: Parameters<RunStore['loadRunMeta']>) => {
            const meta = await target.loadRunMeta(...args);
            return meta !== null && logRead ? { ...meta, lastSeq: meta.lastSeq + 8, eventCount: meta.eventCount + 8 } : meta;
          };
        }
        return Reflect.get(target, name, receiver) as unknown;
      },
    });
    const point = await loadRunPoint({ store: live, runId: 'live' });
    expect(logRead).toBe(true);
    expect(point).toMatchObject({ step: 2, position: [], warnings: [] });
  });
});
