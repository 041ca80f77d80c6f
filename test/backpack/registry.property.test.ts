/**
 * The registry's lookup by node id (an index of nodes registered one by one, and each flow's runs of reservations
 * searched by position) answers exactly what a walk of every registration in order answers, whatever the mix of
 * registrations, reservations, flows and namespaces (nodes of plain and other classes alternating make many runs).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Actor } from '../../src/backpack/actor.js';
import { NodeRegistry, type ReservedNodes } from '../../src/backpack/registry.js';
import { trials } from '../support/soak.js';

const IDS = ['a', 'b', 'c', 'd', 'e', 'f'];

/** A flow's reserved nodes as a flow answers for them: ids by position, reserved or not. */
function flowOf(registry: NodeRegistry, namespace: string): ReservedNodes & { reserved: Map<number, string> } {
  const reserved = new Map<number, string>();
  const actors = new Map<string, Actor>();
  const nodes = {
    namespace,
    parent: undefined,
    reserved,
    position: (id: string) => {
      const at = IDS.indexOf(id);
      return reserved.get(at) === id ? at : undefined;
    },
    idAt: (at: number) => reserved.get(at),
    actor: (id: string) => {
      let actor = actors.get(id);
      if (actor === undefined) actors.set(id, (actor = registry.adopt(nodes, id, 'Plain')));
      return actor;
    },
  };
  return nodes;
}

type Op = { kind: 'register'; id: string; namespace: string } | { kind: 'reserve'; flow: number; id: string };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('register' as const), id: fc.constantFrom(...IDS), namespace: fc.constantFrom('', 'a', 'b', 'x.y') }),
  fc.record({ kind: fc.constant('reserve' as const), flow: fc.integer({ min: 0, max: 2 }), id: fc.constantFrom(...IDS) }),
);

describe('NodeRegistry lookups by id (property)', () => {
  it('withId is the registrations with that id, in registration order, for any mix of registrations and runs of reservations', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const registry = new NodeRegistry();
        const flows = [flowOf(registry, 'a'), flowOf(registry, 'b'), flowOf(registry, '')];
        for (const step of ops) {
          try {
            if (step.kind === 'register') {
              const namespace = step.namespace === '' ? '' : step.namespace === 'x.y' ? 'x.y' : `${step.namespace}.${step.id}`;
              registry.register({ nodeId: step.id, nodeName: 'Built', namespace });
            } else {
              // A flow reserves its nodes in order: only a position past its last one.
              const flow = flows[step.flow]!;
              const at = IDS.indexOf(step.id);
              if ([...flow.reserved.keys()].some((p) => p >= at)) continue;
              // (A flow answers for a node once it is reserved: registered there already, it is not.)
              if (registry.reserve(flow, step.id, 'Plain', at)) flow.reserved.set(at, step.id);
            }
          } catch (error) {
            // A namespace another node holds: refused with nothing registered.
            expect((error as Error).message).toMatch(/would share the full namespace|already registered with this Backpack/);
          }
        }
        const all = [...registry.values()];
        for (const id of IDS) expect(registry.withId(id)).toEqual(all.filter((a) => a.nodeId === id));
      }),
      { numRuns: trials(300, 5000), seed: 1314 },
    );
  });
});
