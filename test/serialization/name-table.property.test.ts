import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, FlowLoader, type ConfigProblem } from '../../src/index.js';
import { trials } from '../support/soak.js';

class Plain extends BackpackNode {}
const loader = new FlowLoader().register('Plain', Plain);

const name = fc.constantFrom('a', 'b', 'c');
const node = fc.record({ id: name, namespaceSegment: fc.option(name, { nil: undefined }) }).map(({ id, namespaceSegment }) => ({ type: 'Plain', id, ...(namespaceSegment ? { namespaceSegment } : {}) }));
const config = fc.record({
  nodes: fc.array(node, { maxLength: 6 }),
  subflows: fc.array(name, { maxLength: 2 }),
  edges: fc.array(fc.record({ from: name, to: name }), { maxLength: 2 }),
  entry: fc.option(name, { nil: undefined }),
});

/** The id and namespace problems as two maps of first takers give them (the reference). */
function expected(cfg: { nodes: { id: string; namespaceSegment?: string }[]; subflows: string[]; edges: { from: string; to: string }[]; entry?: string }): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const ids = new Map<string, string>();
  const namespaces = new Map<string, string>();
  cfg.nodes.forEach((n, i) => {
    const at = `/nodes/${i}`;
    if (ids.has(n.id)) problems.push({ path: `${at}/id`, message: `duplicate node id '${n.id}' (also ${ids.get(n.id)})` });
    else ids.set(n.id, at);
    const ns = `top.${n.namespaceSegment ?? n.id}`;
    if (namespaces.has(ns)) problems.push({ path: `${at}/namespaceSegment`, message: `namespace '${ns}' is also taken by ${namespaces.get(ns)}: give this node its own namespaceSegment` });
    else namespaces.set(ns, at);
  });
  cfg.subflows.forEach((sub, k) => {
    const at = `/subflows/${k}`;
    if (ids.has(sub)) problems.push({ path: `${at}/namespace`, message: `subflow '${sub}' has the id of ${ids.get(sub)}` });
    else {
      ids.set(sub, at);
      // A subflow's nodes may not sit under a node's namespace, nor under (or over) another subflow's.
      const taker = namespaces.get(`top.${sub.split('.')[0]}`);
      const earlier = cfg.subflows.findIndex((other, j) => j < k && (other === sub || other.startsWith(`${sub}.`) || sub.startsWith(`${other}.`)));
      if (taker !== undefined || earlier >= 0) {
        const what = taker ?? `the subflow at /subflows/${earlier} ('top.${cfg.subflows[earlier]}')`;
        problems.push({ path: `${at}/namespace`, message: `subflow namespace 'top.${sub}' overlaps ${what}: namespaces are unique within a flow, and one's nodes may not sit under another's; give the subflow another namespace` });
      }
    }
  });
  cfg.edges.forEach((edge, j) => {
    for (const end of ['from', 'to'] as const) if (!ids.has(edge[end])) problems.push({ path: `/edges/${j}/${end}`, message: `edge ${end} '${edge[end]}': no node or subflow with that id in this flow` });
  });
  if (cfg.entry !== undefined && !ids.has(cfg.entry)) problems.push({ path: '/entry', message: `entry '${cfg.entry}': no node or subflow with that id` });
  return problems;
}

describe('validateConfig: ids and namespaces of a flow', () => {
  it('reports every duplicate id, shared namespace, unknown edge end and entry, naming the first taker, as two maps of takers would', () => {
    fc.assert(
      fc.property(config, (cfg) => {
        const input = {
          version: '2.0.0',
          namespace: 'top',
          nodes: cfg.nodes,
          // each subflow has one node of its own, so that it is valid in itself
          subflows: cfg.subflows.map((namespace) => ({ version: '2.0.0', namespace, nodes: [{ type: 'Plain', id: 'x' }] })),
          edges: cfg.edges,
          ...(cfg.entry ? { entry: cfg.entry } : {}),
        };
        const relevant = loader.validateConfig(input).errors.filter((p) => /\/(id|namespaceSegment|namespace|from|to|entry)$/.test(p.path) && !p.path.includes('/subflows/') || /^\/subflows\/\d+\/namespace$/.test(p.path));
        expect(relevant).toEqual(expected(cfg));
      }),
      { numRuns: trials(300, 3000) },
    );
  });
});

describe('NameTable', () => {
  it('answers for thousands of nodes as a map of first takers does, whatever their ids, segments and subflows', async () => {
    const { NameTable } = await import('../../src/serialization/name-table.js');
    const id = fc.stringMatching(/^[a-c]{1,6}$/);
    fc.assert(
      fc.property(
        fc.array(fc.record({ id, segment: fc.option(id, { nil: undefined }) }), { maxLength: 3000 }),
        fc.array(id, { maxLength: 5 }),
        fc.array(id, { maxLength: 50 }),
        (nodes, subflows, asked) => {
          const table = new NameTable((i) => nodes[i]?.id, nodes.length);
          const ids = new Map<string, number | string>();
          const segments = new Map<string, number>();
          nodes.forEach((n, i) => {
            table.claimNode(n.id, n.segment ?? n.id, i);
            if (!ids.has(n.id)) ids.set(n.id, i);
            if (!segments.has(n.segment ?? n.id)) segments.set(n.segment ?? n.id, i);
          });
          subflows.forEach((name, k) => {
            table.claimId(name, `/subflows/${k}`);
            if (!ids.has(name)) ids.set(name, `/subflows/${k}`);
          });
          for (const name of [...asked, ...nodes.map((n) => n.id)]) {
            expect(table.idHolder(name)).toBe(ids.get(name));
            expect(table.segmentHolder(name)).toBe(segments.get(name));
          }
        },
      ),
      { numRuns: trials(40, 400) },
    );
  });
});
