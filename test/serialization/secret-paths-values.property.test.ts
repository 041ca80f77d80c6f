/**
 * An export masks what the run's recorded flow config redacts: a param value the redaction catalogue finds a secret
 * in (an OpenAI key, a bearer token, a JWT, a GitHub token, also inside longer text) exports as `'***'` whatever its
 * name, at the same paths where the recorded config (masked by the node classes, then redacted, as the CLI records
 * a flow file) shows `[REDACTED]`; `includeSensitive` keeps it. A key that is a secret itself is written redacted, as
 * the recorded config writes it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, FlowLoader, MASK, REDACTED, isSecretParamName, normalizeFlowConfig, redact } from '../../src/index.js';

const token = (length: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9]{${length}}$`));
const b64url = (min: number, max: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9_-]{${min},${max}}$`));
const secretLooking = fc.oneof(
  token(48).map((t) => `sk-proj-${t}`),
  token(32).map((t) => `Bearer ${t}`),
  fc.tuple(b64url(12, 20), b64url(12, 30), b64url(24, 43)).map(([h, p, s]) => `eyJ${h}.eyJ${p}.${s}`),
  token(36).map((t) => `ghp_${t}`),
);
/** A secret-looking value, alone or inside prose. */
const secretValue = fc.tuple(secretLooking, fc.constantFrom('', 'use ', 'header: '), fc.constantFrom('', ' please')).map(([s, pre, post]) => ({ secret: s, text: `${pre}${s}${post}` }));
const plainText = fc.stringMatching(/^[a-w ]{0,12}$/);
const name = fc.stringMatching(/^[a-w]{1,6}$/).filter((n) => !isSecretParamName(n) && n !== 'id');

interface Params {
  value: unknown;
  secrets: string[];
}

const params: fc.Arbitrary<Params> = fc.letrec<{ value: Params }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    plainText.map((text) => ({ value: text, secrets: [] })),
    secretValue.map(({ secret, text }) => ({ value: text, secrets: [secret] })),
    fc.integer().map((n) => ({ value: n, secrets: [] })),
    fc.array(tie('value'), { maxLength: 3 }).map((all) => ({ value: all.map((p) => p.value), secrets: all.flatMap((p) => p.secrets) })),
    fc.uniqueArray(fc.tuple(name, tie('value')), { maxLength: 3, selector: ([n]) => n }).map((all) => ({
      value: Object.fromEntries(all.map(([n, p]) => [n, p.value])),
      secrets: all.flatMap(([, p]) => p.secrets),
    })),
    // Keys that are secrets themselves (a map of tokens), two of them at times, so that their redacted forms collide.
    // Not also secret-named (a random token can end in `…Pw` or `…Token`): a value under a secret-named key is masked
    // whole by an export and blanked leaf by leaf in the record, which the name-based tests check.
    fc.uniqueArray(fc.tuple(secretLooking.filter((n) => !isSecretParamName(n)), tie('value')), { minLength: 1, maxLength: 2, selector: ([n]) => n }).map((all) => ({
      value: Object.fromEntries(all.map(([n, p]) => [n, p.value])),
      secrets: all.flatMap(([n, p]) => [n, ...p.secrets]),
    })),
  ),
})).value;

const topParams = fc.uniqueArray(fc.tuple(name, params), { minLength: 1, maxLength: 4, selector: ([n]) => n }).map((all) => ({
  value: Object.fromEntries(all.map(([n, p]) => [n, p.value])) as Record<string, unknown>,
  secrets: all.flatMap(([, p]) => p.secrets),
}));

/** Each string leaf of `value`, by JSON pointer. */
function leaves(value: unknown, at = ''): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) for (const [path, leaf] of leaves(item, `${at}/${key}`)) out.set(path, leaf);
  } else out.set(at, value);
  return out;
}

class Plain extends BackpackNode {}

describe('values that look like secrets', () => {
  it('export as *** exactly where the recorded config shows [REDACTED], whatever their names; includeSensitive keeps them', async () => {
    const loader = new FlowLoader().register('Plain', Plain);
    await fc.assert(
      fc.asyncProperty(topParams, async ({ value, secrets }) => {
        const config = { version: '2.0.0', namespace: 'app', nodes: [{ type: 'Plain', id: 'p', params: value }], edges: [] };
        const flow = await loader.loadFlow(structuredClone(config));
        const exported = loader.exportFlow(flow);
        const text = JSON.stringify(exported);
        for (const secret of secrets) expect(text).not.toContain(secret);
        const recorded = redact(loader.maskConfigSecrets(structuredClone(config))).value as typeof config;
        // The recorded config and the export redact the same keys the same way: leaves are compared in order, each
        // at the path the recorded config has it (a secret key redacted), with the leaf the params had there.
        const was = [...leaves(value).values()];
        const out = leaves(exported.nodes[0]!.params);
        const recordedLeaves = [...leaves(recorded.nodes[0]!.params)];
        expect([...out.keys()]).toEqual(recordedLeaves.map(([path]) => path));
        for (const [i, [path, leaf]] of recordedLeaves.entries()) {
          const redacted = typeof leaf === 'string' && leaf.includes(REDACTED);
          expect(out.get(path), path).toEqual(redacted ? MASK : was[i]);
        }
        expect(loader.exportFlow(flow, { includeSensitive: true })).toEqual(normalizeFlowConfig(config));
      }),
      { numRuns: 150 },
    );
  });
});
