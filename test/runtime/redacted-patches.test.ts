/**
 * A step's delta is redacted by the store as a value of its own, away from the value it patches: the recorded state
 * at every step must still be the live state as redacted, whichever entries a step changed or deleted and wherever
 * the keyframes fall (README "Redaction"). So a patch whose redaction would depend on what it does not hold is
 * stored as a replacement of the object (or array) it patches:
 * - deletes under a secret-named key, whose patch lists the deleted keys as text, which redaction blanks;
 * - an entry redacted by its siblings (a value a `name` field names a secret, a Basic credential under `auth`, a JSON
 *   Schema), or by the element before it (the value of a secret-named option appended after it).
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, encodeValue, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { makeTempDir } from '../support/temp.js';

const many = (n: number, skip = -1): Record<string, string> => {
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) if (i !== skip) out[`service${i}`] = `value-of-service-${i}`;
  return out;
};

/** Runs two steps packing `first`, then `second`, under `key`, and returns the recorded and the live (redacted) values at step 2. */
async function twoSteps(key: string, first: unknown, second: unknown, keyframeInterval = 1000): Promise<{ recorded: unknown; live: unknown; warnings: string[] }> {
  class First extends BackpackNode {
    override post(backpack: BackpackHandle): string {
      backpack.pack(key, first);
      return 'next';
    }
  }
  class Second extends BackpackNode {
    override post(backpack: BackpackHandle): undefined {
      backpack.pack(key, second);
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'app' });
  flow.addNode(First, { id: 'first' }).on('next', flow.addNode(Second, { id: 'second' }));
  const dataDir = makeTempDir('redacted-patches-', 'test');
  await expect(runFlow(flow, { dataDir, runId: 'r', keyframeInterval })).resolves.toMatchObject({ status: 'completed' });
  const point = await loadRunPoint({ dataDir, runId: 'r', step: 2 });
  return { recorded: point.state.items[key]!.value, live: redact({ [key]: encodeValue(second) }).value[key], warnings: point.warnings };
}

describe('a delete inside a value stored under a secret-named key', () => {
  it.each([1000, 1])('leaves no entry the live state deleted in the recorded state (keyframeInterval %i)', async (keyframeInterval) => {
    // One service revoked: its token is removed from the map.
    const tokens = await twoSteps('accessTokens', many(12), many(12, 3), keyframeInterval);
    expect(Object.keys(tokens.recorded as object)).toHaveLength(11);
    expect(tokens.recorded).not.toHaveProperty('service3');
    expect(tokens.recorded).toStrictEqual(tokens.live);
    expect(tokens.warnings).toEqual([]);
    // One level down: a secret-named key inside a plain item.
    const config = await twoSteps('config', { credentials: many(12), name: 'demo' }, { credentials: many(12, 3), name: 'demo' }, keyframeInterval);
    expect(Object.keys((config.recorded as { credentials: object }).credentials)).toHaveLength(11);
    expect(config.recorded).toStrictEqual(config.live);
  });
});

describe('a changed entry that redaction blanks by its context', () => {
  it('a value that a sibling names a secret is blanked in the recorded state', async () => {
    const { recorded, live } = await twoSteps(
      'env',
      { db: { name: 'DB_PASSWORD', value: 'hunter2-first', source: 'vault' }, region: 'eu' },
      { db: { name: 'DB_PASSWORD', value: 'hunter2-second', source: 'vault' }, region: 'eu' },
    );
    expect(JSON.stringify(recorded)).not.toContain('hunter2');
    expect(recorded).toStrictEqual(live);
  });

  it('renaming the field that names a value changes how the value is recorded', async () => {
    const { recorded, live } = await twoSteps('env', { db: { name: 'DB_PASSWORD', value: 'plain-text', n: 1 }, k: 1 }, { db: { name: 'DB_HOST', value: 'plain-text', n: 1 }, k: 1 });
    expect(recorded).toStrictEqual(live);
    expect((recorded as { db: { value: string } }).db.value).toBe('plain-text');
  });

  it('a Basic credential under auth is blanked in the recorded state', async () => {
    const { recorded, live } = await twoSteps('request', { auth: 'dXNlcjpwYXNzd29yZDE=', url: 'https://example.test' }, { auth: 'dXNlcjpwYXNzd29yZDI=', url: 'https://example.test' });
    expect(JSON.stringify(recorded)).not.toContain('dXNlcjpwYXNzd29yZDI');
    expect(recorded).toStrictEqual(live);
  });

  it('the value of a secret-named option appended after the option is blanked in the recorded state', async () => {
    const { recorded, live } = await twoSteps('args', ['serve', '--password'], ['serve', '--password', 'hunter2-appended']);
    expect(JSON.stringify(recorded)).not.toContain('hunter2');
    expect(recorded).toStrictEqual(live);
  });

  it('a changed JSON Schema is recorded as the schema rules redact it', async () => {
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { password: { type: 'string' }, n: { type: 'number' } } };
    const { recorded, live } = await twoSteps('schema', schema, { ...schema, properties: { ...schema.properties, password: { type: 'string', minLength: 12 } } });
    expect(recorded).toStrictEqual(live);
    expect((recorded as typeof schema).properties.password).toEqual({ type: 'string', minLength: 12 });
  });
});
