/**
 * Review s42: the studio's live stream of a run on files wakes only when the log's size changes (src/studio/tail.ts
 * watchLog). The writer reserves zeros after the last line (src/store/log-writer.ts), now with durability 'never' too:
 * a step appended into that space leaves the size as it was, so the stream sends nothing of a running run's later
 * steps until the reserve grows (64 KB on) or the writer closes.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { makeTempDir } from '../support/temp.js';
import { openStream } from '../studio/helpers.js';

let dataDir = '';
let studio: StudioServer;

beforeAll(async () => {
  dataDir = makeTempDir('audit-stream-', 'test');
  studio = await startStudio({ dataDir, port: 0, tail: { pollMs: 50 } });
});

afterAll(async () => {
  await studio?.close();
});

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe.each(['never', 'batch'] as const)('studio live stream, durability %s', (durability) => {
  it("sends a running run's next step while the writer is still open", async () => {
    const runId = `live-${durability}`;
    const second = gate();
    const third = gate();
    const atSecond = gate();
    const atThird = gate();
    class One extends BackpackNode {
      override post(b: BackpackHandle): undefined {
        b.pack('one', 1);
        return undefined;
      }
    }
    class Two extends BackpackNode {
      override async exec(): Promise<void> {
        atSecond.open();
        await second.opened;
      }
      override post(b: BackpackHandle): undefined {
        b.pack('two', 2);
        return undefined;
      }
    }
    class Three extends BackpackNode {
      override async exec(): Promise<void> {
        atThird.open();
        await third.opened;
      }
    }
    const flow = new Flow({ namespace: 'live' });
    flow.addNode(One, { id: 'one' }).next(flow.addNode(Two, { id: 'two' })).next(flow.addNode(Three, { id: 'three' }));
    const running = runFlow(flow, { dataDir, runId, durability });
    await atSecond.opened;
    const stream = await openStream(studio.port, `/api/runs/${runId}/stream`);
    try {
      await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'checkpoint.saved' && JSON.parse(m.data).payload.step === 1, 5_000);
      second.open();
      await atThird.opened;
      // Step 2 is in the log (the writer appended it) and the run is still running: the stream must send it.
      await stream.waitFor((m) => m.event === 'event' && JSON.parse(m.data).type === 'checkpoint.saved' && JSON.parse(m.data).payload.step === 2, 3_000);
    } finally {
      third.open();
      await running;
      stream.close();
    }
  });
});
