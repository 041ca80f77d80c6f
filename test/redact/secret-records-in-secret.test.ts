/**
 * Inside a secret-named structure, what is a secret outside one stays a secret (review s34, findings 1 and 2): a value
 * named secret by its sibling (`{ name: 'db_password', value: n }`, the env-var and secret-manager list form) is
 * redacted in `secrets: [...]` and `credentials: {...}` too, and an object that only claims a codec tag
 * (`{ $bp: 'bigint', v: '<token>' }`) is walked as any object (only the codec's exact encoded forms keep their tag).
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { filesHolding } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

class Packs extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack('settings', [{ name: 'db_password', value: 11223344 }]); // control: redacted
    backpack.pack('secrets', [{ name: 'DB_PASSWORD', value: 61728394 }]);
    backpack.pack('credentials', { name: 'db_password', value: 48213377 });
    backpack.pack('vault', { secrets: [{ key: 'password', value: 77881122 }] });
    return undefined;
  }
}

describe('a value named secret by its sibling, inside a secret-named structure', () => {
  it.each([1, 100])('is not written in clear, nor read back (keyframe interval %i)', async (keyframeInterval) => {
    const dataDir = makeTempDir('bf-sibling-', 'test');
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(Packs, { id: 'n' });
    await runFlow(flow, { dataDir, runId: 'r', keyframeInterval });
    expect(filesHolding(dataDir, '11223344'), 'control').toEqual([]);
    const state = JSON.stringify((await loadRunPoint({ dataDir, runId: 'r', step: 1 })).state.items);
    const leaks = ['61728394', '48213377', '77881122'].filter((n) => state.includes(n) || filesHolding(dataDir, n).length > 0);
    expect(leaks).toEqual([]);
  });

  it('the object form agrees with the text form (which blanks it)', () => {
    const value = { secrets: [{ name: 'DB_PASSWORD', value: 61728394 }] };
    expect(JSON.stringify(redact({ t: JSON.stringify(value) }).value)).not.toContain('61728394');
    expect(JSON.stringify(redact(value).value)).not.toContain('61728394');
  });
});

const TOKEN = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

class Emits extends BackpackNode {
  override post(): undefined {
    this.emitEvent('custom', { note: { $bp: 'bigint', v: 'x', token: 'control-' + TOKEN } });
    this.emitEvent('custom', { credentials: { note: { $bp: 'bigint', v: '1', apiToken2: TOKEN.replace('ghp_A', 'ghp_B') } } });
    return undefined;
  }
}

describe('an object with a codec-like tag below a secret-named key', () => {
  it('redact(): a catalogue token in it is redacted as it is outside a secret-named key', () => {
    expect(JSON.stringify(redact({ note: { $bp: 'bigint', v: TOKEN } }).value)).not.toContain(TOKEN);
    expect(JSON.stringify(redact({ password: { note: { $bp: 'bigint', v: TOKEN } } }).value)).not.toContain(TOKEN);
    expect(JSON.stringify(redact({ credentials: { note: { $bp: 'number', v: 'Infinity', other: 'hunter2-plain-secret' } } }).value)).not.toContain('hunter2');
  });

  it('a custom event payload: not in events.jsonl', async () => {
    const dataDir = makeTempDir('bf-bp-event-', 'test');
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(Emits, { id: 'n' });
    await runFlow(flow, { dataDir, runId: 'r' });
    expect(filesHolding(dataDir, 'control-ghp_'), 'control').toEqual([]);
    expect(filesHolding(dataDir, 'ghp_B').map((f) => f.slice(dataDir.length))).toEqual([]);
  });
});
