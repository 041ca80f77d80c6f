/**
 * Params a node class's schema marks secret (`.meta({ secret: true })`) are masked wherever the mark sits: under
 * wrappers (optional, nullable, default, catch, readonly, pipe, lazy), inside nested objects, records, arrays, tuples
 * and union members, and on a wrapper or container itself. Neither `exportFlow` nor what a run records of its flow
 * file (flow.json, through `maskConfigSecrets` and the run's redaction, as the CLI records it) holds the secret
 * text, while an `includeSensitive` export keeps it; and exporting a loaded config gives the config back with only
 * the secret paths masked.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z, type ZodType } from 'zod';
import { BackpackNode, FlowLoader, MASK, isSecretParamName, normalizeFlowConfig, openNewRun, runFlow } from '../../src/index.js';
import { recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { trials } from '../support/soak.js';

/** A wrapper put around a schema. */
type Wrapper = 'optional' | 'nullable' | 'default' | 'catch' | 'readonly' | 'pipe' | 'lazy' | 'union';

/** A schema to build, with where it is marked secret: on the schema itself (`before` wrappers in) or not at all. */
type Spec = { marked: boolean; before: Wrapper[]; after: Wrapper[] } & (
  | { kind: 'leaf' }
  | { kind: 'object'; fields: [string, Spec][] }
  | { kind: 'array'; element: Spec }
  | { kind: 'record'; value: Spec }
  | { kind: 'tuple'; items: Spec[] }
);

const wrapper = fc.constantFrom<Wrapper>('optional', 'nullable', 'default', 'catch', 'readonly', 'pipe', 'lazy', 'union');
const wrappers = fc.array(wrapper, { maxLength: 3 });
/** Field names no name rule or reserved setting applies to (`x` and digits stay out of plain text: see plainText). */
const fieldName = fc.stringMatching(/^[a-w]{1,5}$/).filter((name) => !isSecretParamName(name) && name !== 'id');
/** Text that holds no secret text and that no secret holds: letters only, at most 6. */
const plainText = fc.stringMatching(/^[a-w]{1,6}$/);
/** A secret: `pin` and digits and letters, longer than any plain text, and nothing the redaction catalogue knows. */
const secretText = fc.stringMatching(/^pin[0-9][a-w0-9]{8,12}$/);

/** Containers are marked whole now and then; leaves half the time. */
const containerMark = fc.nat(9).map((n) => n === 0);

const spec: fc.Arbitrary<Spec> = fc.letrec<{ spec: Spec }>((tie) => ({
  spec: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constant('leaf' as const), marked: fc.boolean(), before: wrappers, after: wrappers }),
    fc.record({
      kind: fc.constant('object' as const),
      marked: containerMark,
      before: wrappers,
      after: wrappers,
      fields: fc.uniqueArray(fc.tuple(fieldName, tie('spec')), { maxLength: 3, selector: ([name]) => name }),
    }),
    fc.record({ kind: fc.constant('array' as const), marked: containerMark, before: wrappers, after: wrappers, element: tie('spec') }),
    fc.record({ kind: fc.constant('record' as const), marked: containerMark, before: wrappers, after: wrappers, value: tie('spec') }),
    fc.record({ kind: fc.constant('tuple' as const), marked: containerMark, before: wrappers, after: wrappers, items: fc.array(tie('spec'), { minLength: 1, maxLength: 3 }) }),
  ),
})).spec;

/** The params of a node: an object schema, never marked whole (params are an object). */
const paramsSpec: fc.Arbitrary<Spec> = fc.record({
  kind: fc.constant('object' as const),
  marked: fc.constant(false),
  before: wrappers,
  after: wrappers,
  fields: fc.uniqueArray(fc.tuple(fieldName, spec), { minLength: 1, maxLength: 4, selector: ([name]) => name }),
});

function wrap(schema: ZodType, how: Wrapper): ZodType {
  const s = schema as z.ZodTypeAny;
  switch (how) {
    case 'optional':
      return s.optional();
    case 'nullable':
      return s.nullable();
    case 'default':
      return s.default('d' as never);
    case 'catch':
      return s.catch('c' as never);
    case 'readonly':
      return s.readonly();
    case 'pipe':
      return s.transform((v: unknown) => v);
    case 'lazy':
      return z.lazy(() => s);
    case 'union':
      return z.union([z.number(), s]);
  }
}

function schemaOf(spec: Spec): ZodType {
  let base: ZodType;
  if (spec.kind === 'leaf') base = z.string();
  else if (spec.kind === 'object') base = z.object(Object.fromEntries(spec.fields.map(([name, field]) => [name, schemaOf(field)])));
  else if (spec.kind === 'array') base = z.array(schemaOf(spec.element));
  else if (spec.kind === 'record') base = z.record(z.string(), schemaOf(spec.value));
  else base = z.tuple(spec.items.map(schemaOf) as [ZodType, ...ZodType[]]);
  let schema = spec.before.reduce(wrap, base);
  if (spec.marked) schema = (schema as z.ZodTypeAny).meta({ secret: true });
  return spec.after.reduce(wrap, schema);
}

/** A value of `spec`: as written, as exported (secrets masked), and the secret texts in it. */
interface Sample {
  value: unknown;
  masked: unknown;
  secrets: string[];
}

/** A value of `spec`; under a marked schema (`secret`) every text is a secret. */
function sampleOf(spec: Spec, secret = false): fc.Arbitrary<Sample> {
  const inSecret = secret || spec.marked;
  let sample: fc.Arbitrary<Sample>;
  if (spec.kind === 'leaf') {
    sample = inSecret ? secretText.map((text) => ({ value: text, masked: text, secrets: [text] })) : plainText.map((text) => ({ value: text, masked: text, secrets: [] }));
  } else if (spec.kind === 'array' || spec.kind === 'tuple') {
    const items = spec.kind === 'array' ? fc.array(sampleOf(spec.element, inSecret), { maxLength: 3 }) : fc.tuple(...spec.items.map((item) => sampleOf(item, inSecret)));
    sample = items.map((all) => ({ value: all.map((s) => s.value), masked: all.map((s) => s.masked), secrets: all.flatMap((s) => s.secrets) }));
  } else {
    const entries =
      spec.kind === 'object'
        ? fc.tuple(...spec.fields.map(([name, field]) => sampleOf(field, inSecret).map((s) => [name, s] as const)))
        : fc.uniqueArray(fc.tuple(fieldName, sampleOf(spec.value, inSecret)), { maxLength: 3, selector: ([name]) => name });
    sample = entries.map((all) => ({
      value: Object.fromEntries(all.map(([name, s]) => [name, s.value])),
      masked: Object.fromEntries(all.map(([name, s]) => [name, s.masked])),
      secrets: all.flatMap(([, s]) => s.secrets),
    }));
  }
  return spec.marked ? sample.map((s) => ({ ...s, masked: MASK })) : sample;
}

/** A node class with params schema `spec`'s, its config's params, and what an export of them must give. */
const case_ = paramsSpec.chain((params) =>
  fc.array(sampleOf(params), { minLength: 1, maxLength: 2 }).map((samples) => ({ spec: params, samples })),
);

function setup(spec: Spec, samples: Sample[]) {
  class Vault extends BackpackNode {
    static override paramsSchema = schemaOf(spec);
    override post(): undefined {
      return undefined;
    }
  }
  const loader = new FlowLoader().register('Vault', Vault);
  const nodes = samples.map((s, i) => ({ type: 'Vault', id: `n${i}`, params: s.value as Record<string, unknown> }));
  const edges = nodes.slice(1).map((node, i) => ({ from: `n${i}`, to: node.id, condition: 'default' }));
  const config = { version: '2.0.0', namespace: 'app', nodes, edges };
  const masked = { ...config, nodes: samples.map((s, i) => ({ ...nodes[i]!, params: s.masked as Record<string, unknown> })) };
  return { loader, config, masked, secrets: samples.flatMap((s) => s.secrets) };
}

/** The text of every file under `dir`. */
function filesUnder(dir: string): { path: string; text: string }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return { path, text: readFileSync(path, 'latin1') };
    });
}

describe('params a schema marks secret, wherever the mark sits', () => {
  it('export masks exactly the marked paths (round trip), and includeSensitive keeps them', async () => {
    await fc.assert(
      fc.asyncProperty(case_, async ({ spec, samples }) => {
        const { loader, config, masked, secrets } = setup(spec, samples);
        const flow = await loader.loadFlow(structuredClone(config));
        const exported = loader.exportFlow(flow);
        expect(exported).toEqual(normalizeFlowConfig(masked));
        const text = JSON.stringify(exported);
        for (const secret of secrets) expect(text).not.toContain(secret);
        expect(loader.exportFlow(flow, { includeSensitive: true })).toEqual(normalizeFlowConfig(config));
      }),
      { numRuns: trials(50, 600) },
    );
  });

  it('no file a run writes holds a marked secret (its recorded flow.json included)', async () => {
    await fc.assert(
      fc.asyncProperty(
        case_.filter(({ samples }) => samples.some((s) => s.secrets.length > 0)),
        async ({ spec, samples }) => {
          const { loader, config, secrets } = setup(spec, samples);
          const dataDir = mkdtempSync(join(tmpdir(), 'bpf-secret-paths-'));
          try {
            const newRun = await openNewRun({ dataDir, runId: 'r' });
            // As the CLI's `run` records a flow file: the parsed config, masked by the node classes, then redacted.
            const flow = await loader.loadFlow(JSON.stringify(config), undefined, {
              beforeBuild: async (given) => {
                await recordRunFlow(newRun, { v: 1, flow: { kind: 'config' }, modules: [] }, loader.maskConfigSecrets(given));
              },
            });
            const result = await runFlow(flow, { newRun });
            expect(result.status).toBe('completed');
            const files = filesUnder(dataDir);
            expect(files.map((f) => f.path).some((path) => path.endsWith('flow.json'))).toBe(true);
            for (const { path, text } of files) for (const secret of secrets) expect(text, path).not.toContain(secret);
          } finally {
            rmSync(dataDir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
