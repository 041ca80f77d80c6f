import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FlowLoader, normalizeFlowConfig, type FlowConfigInput } from '../../src/index.js';
import { register } from '../../examples/flows/nodes.js';

const loader = new FlowLoader();
register(loader);

const ident = fc.stringMatching(/^[a-z][a-z0-9_-]{0,7}$/);
const action = fc.constantFrom('default', 'complete', 'error', 'retry', 'found');

/** A valid flow config: unique node ids, edges between its own nodes, composites nested up to `depth` levels. */
function flowConfig(namespace: string, depth: number): fc.Arbitrary<FlowConfigInput> {
  return fc.uniqueArray(ident, { minLength: 1, maxLength: 5 }).chain((ids) => {
    const node = (id: string) =>
      depth > 0
        ? fc.oneof(
            fc.record({ type: fc.constant('TextSource'), id: fc.constant(id), params: fc.record({ key: ident, text: fc.string({ maxLength: 20 }) }) }),
            flowConfig(`${namespace}.${id}`, depth - 1).map((internalFlow) => ({ type: 'Pipeline', id, params: {}, internalFlow })),
          )
        : fc.record({ type: fc.constant('TextSource'), id: fc.constant(id), params: fc.record({ key: ident, text: fc.string({ maxLength: 20 }) }) });
    const edges = fc.uniqueArray(fc.record({ from: fc.constantFrom(...ids), to: fc.constantFrom(...ids), condition: action }), {
      maxLength: 6,
      selector: (e) => `${e.from}/${e.condition}`,
    });
    return fc.record({
      version: fc.constant('2.0.0'),
      namespace: fc.constant(namespace),
      nodes: fc.tuple(...ids.map(node)),
      edges,
      entry: fc.option(fc.constantFrom(...ids), { nil: undefined }),
      maxSteps: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined }),
    });
  }).map((cfg) => {
    const out: FlowConfigInput = { version: cfg.version, namespace: cfg.namespace, nodes: cfg.nodes, edges: cfg.edges };
    // exportFlow writes `entry` only when it is not the first node (the default), so the generator does the same
    if (cfg.entry !== undefined && cfg.entry !== cfg.nodes[0]!.id) out.entry = cfg.entry;
    if (cfg.maxSteps !== undefined) out.maxSteps = cfg.maxSteps;
    return out;
  });
}

describe('round trip (property)', () => {
  it('exportFlow(loadFlow(config)) deep-equals the normalized config, nested flows included', async () => {
    await fc.assert(
      fc.asyncProperty(flowConfig('app', 2), async (config) => {
        expect(loader.validateConfig(config).errors).toEqual([]);
        expect(loader.exportFlow(await loader.loadFlow(config))).toEqual(normalizeFlowConfig(config));
      }),
      { numRuns: 60, seed: 4004 },
    );
  });
});
