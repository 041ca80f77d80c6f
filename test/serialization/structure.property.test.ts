import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FlowConfigSchema } from '../../src/serialization/schema.js';
import { pointer, type ConfigProblem } from '../../src/serialization/errors.js';
import { checkFlowStructure } from '../../src/serialization/structure.js';
import { trials } from '../support/soak.js';

/** Sometimes a value of the right kind, sometimes anything (so that every field can be wrong). */
const maybe = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: fc.anything({ maxDepth: 1 }) });
const optional = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined, freq: 2 });
const text = fc.constantFrom('a', 'b', 'n1', '', 'x.y', 'default');

const permissions = fc.record({ read: maybe(fc.array(text, { maxLength: 2 })), deny: optional(maybe(fc.array(text, { maxLength: 2 }))) }, { requiredKeys: [] });

const edge = maybe(
  fc.record(
    { from: maybe(text), to: maybe(text), condition: optional(maybe(text)), mappings: optional(maybe(fc.dictionary(text, maybe(text), { maxKeys: 2 }))), extra: optional(fc.constant(1)) },
    { requiredKeys: ['from', 'to'] },
  ),
);

/** A flow config as a user might write it, right or wrong anywhere, nested up to `depth` levels. */
function flow(depth: number): fc.Arbitrary<unknown> {
  const node = maybe(
    fc.record(
      {
        type: maybe(text),
        id: maybe(text),
        params: optional(maybe(fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }))),
        namespaceSegment: optional(maybe(text)),
        maxRetries: optional(maybe(fc.integer({ min: 0, max: 3 }))),
        retryDelayMs: optional(maybe(fc.integer({ min: -1, max: 5 }))),
        permissions: optional(maybe(permissions)),
        internalFlow: depth > 0 ? optional(flow(depth - 1)) : fc.constant(undefined),
        unknownKey: optional(fc.constant(true)),
      },
      { requiredKeys: ['type', 'id'] },
    ),
  );
  return maybe(
    fc.record(
      {
        version: maybe(fc.constantFrom('2.0.0', '1.0.0', 'two')),
        namespace: optional(maybe(text)),
        nodes: maybe(fc.array(node, { maxLength: 4 })),
        edges: optional(maybe(fc.array(edge, { maxLength: 3 }))),
        dependencies: optional(maybe(fc.dictionary(text, maybe(text), { maxKeys: 2 }))),
        subflows: depth > 0 ? optional(maybe(fc.array(flow(depth - 1), { maxLength: 2 }))) : fc.constant(undefined),
        entry: optional(maybe(text)),
        maxSteps: optional(maybe(fc.integer({ min: 0, max: 9 }))),
        onMissingRoute: optional(maybe(fc.constantFrom('end', 'warn', 'throw', 'never'))),
        other: optional(fc.constant('x')),
      },
      { requiredKeys: ['version', 'nodes'] },
    ),
  );
}

/** What zod says of the whole config in one parse: the reference the node-by-node check must agree with. */
function wholeParse(config: unknown): { problems: ConfigProblem[]; data?: unknown } {
  const parsed = FlowConfigSchema.safeParse(config);
  if (parsed.success) return { problems: [], data: parsed.data };
  return { problems: parsed.error.issues.map((issue) => ({ path: pointer(issue.path), message: issue.message })) };
}

describe('the node-by-node structural check of a flow config', () => {
  it('reports exactly the problems of a whole-config zod parse, in its order, and on success returns the same normalized config', () => {
    fc.assert(
      fc.property(flow(2), (config) => {
        const expected = wholeParse(config);
        const problems: ConfigProblem[] = [];
        const normalized = checkFlowStructure(config, '', problems);
        expect(problems).toEqual(expected.problems);
        expect(normalized).toEqual(expected.data);
      }),
      { numRuns: trials(400, 5000) },
    );
  });

  it('a valid config is held once: its node and params objects are the input objects, not copies', () => {
    const nodes = Array.from({ length: 3 }, (_, i) => ({ type: 'Put', id: `n${i}`, params: { key: 'k', value: [i] } }));
    const problems: ConfigProblem[] = [];
    const normalized = checkFlowStructure({ version: '2.0.0', nodes, edges: [{ from: 'n0', to: 'n1', condition: 'default' }] }, '', problems);
    expect(problems).toEqual([]);
    expect(normalized!.nodes[1]).toBe(nodes[1]);
    expect(normalized!.nodes[1]!.params).toBe(nodes[1]!.params);
    // defaults are filled where they are missing
    expect(normalized!.namespace).toBe('');
    expect(normalized!.dependencies).toEqual({});
  });
});
