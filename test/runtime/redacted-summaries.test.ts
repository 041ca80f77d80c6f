/**
 * The recorded state at every step (rebuilt from deltas, keyframeInterval large) is the live state as redacted
 * (README "Redaction"), and no secret reaches events.jsonl, a `backpack.packed` event's value summary included
 * (review s22g: a summary of `Object.entries(env)` or of an option-named key holding a list kept the secret, and two
 * item keys removed in one step, the first read as an option, kept the second in the record).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, encodeValue, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { makeTempDir } from '../support/temp.js';

type Edit = (backpack: BackpackHandle) => void;

/** Runs one node per edit; returns the state recorded at each step and the live state (redacted) after it. */
async function steps(edits: Edit[], keyframeInterval = 1000): Promise<{ recorded: unknown[]; live: unknown[]; dataDir: string }> {
  const live: unknown[] = [];
  const flow = new Flow({ namespace: 'app' });
  let previous: ReturnType<typeof flow.addNode> | undefined;
  edits.forEach((edit, i) => {
    class Step extends BackpackNode {
      override post(backpack: BackpackHandle): string | undefined {
        edit(backpack);
        const items: Record<string, unknown> = {};
        for (const key of backpack.keys()) items[key] = encodeValue(backpack.unpack(key));
        live.push(redact(items).value);
        return i < edits.length - 1 ? 'next' : undefined;
      }
    }
    const node = flow.addNode(Step, { id: `s${i}` });
    if (previous) previous.on('next', node);
    previous = node;
  });
  const dataDir = makeTempDir('s22g-', 'test');
  await expect(runFlow(flow, { dataDir, runId: 'r', keyframeInterval })).resolves.toMatchObject({ status: 'completed' });
  const recorded: unknown[] = [];
  for (let step = 1; step <= edits.length; step++) {
    const point = await loadRunPoint({ dataDir, runId: 'r', step });
    const items: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(point.state.items)) items[key] = item.value;
    recorded.push(items);
  }
  return { recorded, live, dataDir };
}

describe('deltas against the live state as redacted', () => {
  it('two item keys removed in one step, the first a secret-named option, are both gone from the recorded state', async () => {
    const { recorded, live } = await steps(
      [
        (b) => {
          b.pack('--api-key', 'x');
          b.pack('endpoint', 'https://api.example.test');
          b.pack('other', 1);
        },
        (b) => {
          b.delete('--api-key');
          b.delete('endpoint');
        },
      ],
      1000,
    );
    expect(recorded[1]).not.toHaveProperty('endpoint');
    expect(recorded[1]).toStrictEqual(live[1]);
  });

});

describe('no secret reaches events.jsonl that the recorded state blanks', () => {
  it.each([
    ['Object.entries of an env (pairs with a secret-named first element)', Object.entries({ DB_PASSWORD: 'S3cr3t-db-pass-6', HOST: 'db.local' }), 'S3cr3t-db-pass-6'],
    ['a secret-named option key holding a list', { '--token': ['S3cr3t-token-list-1'] }, 'S3cr3t-token-list-1'],
  ])('%s', async (_name, value, secret) => {
    const { recorded, dataDir } = await steps([(b) => b.pack('item', value)], 1000);
    // The recorded state blanks it (the pair rule / the key rule)...
    expect(JSON.stringify(recorded[0])).not.toContain(secret);
    // ...but backpack.packed's valueSummary, redacted only as text, carries it.
    const log = readFileSync(join(dataDir, 'sessions', 'default', 'runs', 'r', 'events.jsonl'), 'utf8');
    expect(log).not.toContain(secret);
  });
});
