/**
 * A Map, Set, BigInt or escaped object stored under a secret-named key is redacted in the codec's encoded form so that
 * it still decodes to a value of its kind (review s33, finding 10): its tag kept, its strings blanked. Before, the
 * tag itself was blanked (`{ "$bp": "[REDACTED]", v }`), and a resumed node's `secrets.get(…)` threw on a plain
 * object. A BigInt right under the key is the secret itself, read back as the marker.
 */
import { describe, expect, it } from 'vitest';
import { decodeValue } from '../../src/backpack/index.js';
import { BackpackNode, Flow, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { filesHolding } from '../support/files.js';
import { makeTempDir } from '../support/temp.js';

class Packs extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack('secrets', new Map<string, unknown>([['db', 'hunter2hunter2'], ['pin', 48213377]]));
    backpack.pack('apiKeys', new Set(['k-one-0001', 'k-two-0002']));
    backpack.pack('password', 12345678901234567890n);
    backpack.pack('vaultSecret', { $bp: 'user field', token: 'tok-0000000001' });
    return undefined;
  }
}

describe('encoded values under a secret-named key', () => {
  it.each([1, 100])('decode to values of their kind, their secrets blanked (keyframe interval %i)', async (keyframeInterval) => {
    const dataDir = makeTempDir('bf-encoded-', 'test');
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(Packs, { id: 'n' });
    await runFlow(flow, { dataDir, runId: 'r', keyframeInterval, redaction: { secretKeys: ['pin'] } });
    for (const secret of ['hunter2hunter2', '48213377', 'k-one-0001', '12345678901234567890', 'tok-0000000001']) expect(filesHolding(dataDir, secret)).toEqual([]);
    const { items } = (await loadRunPoint({ dataDir, runId: 'r', step: 1 })).state;
    const secrets = decodeValue(items['secrets']!.value as never);
    expect(secrets).toEqual(new Map([['[REDACTED]', '[REDACTED]'], ['[REDACTED]', '[REDACTED]']]));
    expect(decodeValue(items['apiKeys']!.value as never)).toEqual(new Set(['[REDACTED]']));
    expect(decodeValue(items['password']!.value as never)).toBe('[REDACTED]');
    expect(decodeValue(items['vaultSecret']!.value as never)).toEqual({ $bp: '[REDACTED]', token: '[REDACTED]' });
  });
});
