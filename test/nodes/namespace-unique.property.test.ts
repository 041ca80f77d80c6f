import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError } from '../../src/index.js';
import { trials } from '../support/soak.js';

class Plain extends BackpackNode {}
class Fixed extends BackpackNode {
  static override namespaceSegment = 'b';
}

const name = fc.constantFrom('a', 'b', 'c', 'd');
const addition = fc.record({ id: name, segment: fc.option(name, { nil: undefined }), fixed: fc.boolean() });

describe('namespaces within a flow stay unique (the flow keeps only the segments nodes chose)', () => {
  it('addNode refuses exactly the nodes whose id or namespace is taken, naming the holder', () => {
    fc.assert(
      fc.property(fc.constantFrom('', 'top'), fc.array(addition, { maxLength: 8 }), (namespace, additions) => {
        const flow = new Flow({ namespace });
        const ids = new Set<string>();
        const holders = new Map<string, string>();
        for (const { id, segment, fixed } of additions) {
          const own = segment ?? (fixed ? 'b' : id);
          const full = namespace ? `${namespace}.${own}` : own;
          const config = segment === undefined ? { id } : { id, namespaceSegment: segment };
          const add = () => flow.addNode(fixed ? Fixed : Plain, config);
          if (ids.has(id)) expect(add).toThrow(`already has a node with id '${id}'`);
          else if (holders.has(full)) expect(add).toThrow(new FlowError(`Nodes '${holders.get(full)}' and '${id}' of flow '${flow.id}' would share namespace '${full}': give one of them its own segment with config.namespaceSegment`));
          else {
            expect(add().namespace).toBe(full);
            ids.add(id);
            holders.set(full, id);
          }
        }
        expect(flow.getAllNodes().map((n) => n.id)).toEqual([...ids]);
      }),
      { numRuns: trials(300, 3000) },
    );
  });
});
