/**
 * A node whose `toConfig()` returns its params (resolved at load) exports them as written: each `${ENV}` reference
 * in place of its value, so an export never holds a value from the environment (a secret), and loading it again
 * with the same environment gives the node the same params.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, FlowLoader } from '../../src/index.js';
import { paramsAsWritten, resolveEnvRefs } from '../../src/serialization/secrets.js';

const envName = fc.constantFrom('A', 'B', 'API_KEY', 'PIN');
const plain = fc.stringMatching(/^[a-w ]{0,8}$/);
/** A string as written: plain text with references between. */
const writtenText = fc.array(fc.oneof(plain, envName.map((n) => `\${${n}}`)), { minLength: 1, maxLength: 3 }).map((parts) => parts.join(''));
const name = fc.stringMatching(/^[a-w]{1,5}$/);
/** Params as written: strings with references, in lists and objects. */
const written: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(
  name,
  fc.oneof(writtenText, fc.integer(), fc.array(writtenText, { maxLength: 2 }), fc.dictionary(name, writtenText, { maxKeys: 2 })),
  { minKeys: 1, maxKeys: 4 },
);
const env = fc.record({ A: fc.stringMatching(/^va[0-9]{6}$/), B: fc.stringMatching(/^vb[0-9]{6}$/), API_KEY: fc.stringMatching(/^vk[0-9]{6}$/), PIN: fc.stringMatching(/^vp[0-9]{6}$/) });

class ToConfig extends BackpackNode {
  toConfig(): { params: Record<string, unknown> } {
    return { params: { ...this.params } };
  }
}

describe('params as written', () => {
  it('puts the references back in place of resolved values; the result resolves to the same params', () => {
    fc.assert(
      fc.property(written, env, (raw, vars) => {
        const resolved = resolveEnvRefs(raw, '', vars, []);
        const out = paramsAsWritten(structuredClone(resolved), resolved, raw);
        const text = JSON.stringify(out);
        for (const value of Object.values(vars)) expect(text).not.toContain(value);
        expect(resolveEnvRefs(out, '', vars, [])).toEqual(resolved);
      }),
      { numRuns: 200 },
    );
  });

  it('puts a reference back inside a longer string a node composed from a resolved value', () => {
    expect(paramsAsWritten({ prompt: 'use realsecret', apiKey: 'realsecret', note: 'said: use realsecret!' }, { prompt: 'use realsecret', apiKey: 'realsecret' }, { prompt: 'use ${S}', apiKey: '${S}' })).toEqual({
      prompt: 'use ${S}',
      apiKey: '${S}',
      note: 'said: use ${S}!',
    });
  });

  // Needs FlowLoader.#exportNode to pass a toConfig's params through paramsAsWritten (see the report of this change).
  it('exportFlow of a node whose toConfig returns its params writes the references, never the resolved values', async () => {
    const loader = new FlowLoader().register('TC', ToConfig);
    const flow = await loader.loadFlow({ version: '2.0.0', nodes: [{ type: 'TC', id: 'a', params: { prompt: 'use ${S}', apiKey: '${S}', list: ['${S}'] } }] }, undefined, {
      env: { S: 'realsecret' },
    });
    for (const includeSensitive of [false, true]) {
      const params = loader.exportFlow(flow, { includeSensitive }).nodes[0]!.params;
      expect(JSON.stringify(params)).not.toContain('realsecret');
      expect(params).toEqual({ prompt: 'use ${S}', apiKey: includeSensitive ? '${S}' : '***', list: ['${S}'] });
    }
  });
});
