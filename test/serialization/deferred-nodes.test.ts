/**
 * Nodes built on first use (issue 13: a large flow costs a few times its size): a flow loaded from text (or a shared
 * config) holds its plain nodes as their checked configs and builds each when asked for. Nothing may tell the
 * difference: the same export, node order, registrations, errors and run as a flow whose nodes were all built at load.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Backpack, BackpackNode, FlowLoader, type BackpackHandle, type Flow, type FlowConfigInput, type StreamEvent } from '../../src/index.js';
import { constructsPlainly } from '../../src/serialization/plain-class.js';
import { trials } from '../support/soak.js';

let schemaReads = 0;

/** A plain node: no constructor, no fields. Packs `params.value` under `params.key`, returns `params.action`. */
class Put extends BackpackNode {
  // Read once per check of a node, once when the class is judged (once per load, and again before a node is built on
  // first use), once per node created: it counts creations.
  static override get paramsSchema(): undefined {
    schemaReads++;
    return undefined;
  }
  override post(backpack: BackpackHandle): string | undefined {
    backpack.pack(this.config.key as string, this.config.value);
    return this.config.action as string | undefined;
  }
}

/** Another plain class, a subclass of a plain one. */
class Echo extends Put {}

/** Not plain: a constructor of its own (it could throw, or count). */
class Tagged extends BackpackNode {
  readonly tag: string;
  constructor(config: { id: string; [key: string]: unknown }, context: ConstructorParameters<typeof BackpackNode>[1]) {
    super(config, context);
    if (config.id === 'boom') throw new Error('this node refuses the id boom');
    this.tag = `tag:${config.id}`;
  }
  override post(backpack: BackpackHandle): undefined {
    backpack.pack(`tag-${this.id}`, this.tag);
    return undefined;
  }
}

/** Not plain: access rules declared as a field. */
class Reader extends BackpackNode {
  override readonly permissions = { read: ['in'], write: ['out'] };
}

function loaderWith(): FlowLoader {
  return new FlowLoader().register('Put', Put).register('Echo', Echo).register('Tagged', Tagged).register('Reader', Reader);
}

describe('which node classes are built on first use', () => {
  it('a class whose creation is BackpackNode\'s alone is plain; a constructor, an instance field or access rules make it not', () => {
    expect(constructsPlainly(Put)).toBe(true);
    expect(constructsPlainly(Echo)).toBe(true);
    expect(constructsPlainly(Tagged)).toBe(false);
    expect(constructsPlainly(Reader)).toBe(false);
    class WithPrivate extends BackpackNode {
      #seen = 0;
      override post(): string {
        return String(++this.#seen);
      }
    }
    class WithStatic extends BackpackNode {
      static readonly label = 'static members run once, at definition';
      static {
        void WithStatic.label;
      }
      override post(): string {
        return '{ constructor() {} }';
      }
    }
    class UnderTagged extends Tagged {}
    class Segmented extends BackpackNode {
      static override namespaceSegment = 'seg';
    }
    class Loadable extends BackpackNode {
      static fromConfig(): never {
        throw new Error('not called');
      }
    }
    class RulesGetter extends BackpackNode {
      override get permissions() {
        return { read: ['x'] };
      }
    }
    expect(constructsPlainly(WithPrivate)).toBe(false);
    expect(constructsPlainly(WithStatic)).toBe(true);
    expect(constructsPlainly(UnderTagged)).toBe(false);
    expect(constructsPlainly(Segmented)).toBe(false);
    expect(constructsPlainly(Loadable)).toBe(false);
    expect(constructsPlainly(RulesGetter)).toBe(false);
    // An instance accessor could run the class's code while the node is built (the constructors set `this.id`).
    let setterRan = false;
    class IdSetter extends BackpackNode {
      // @ts-expect-error an accessor over BackpackNode's id property, as plain JavaScript could write it
      set id(value: string) {
        setterRan = true;
        Object.defineProperty(this, 'id', { value, enumerable: true });
      }
    }
    expect(constructsPlainly(IdSetter)).toBe(false);
    expect(setterRan).toBe(false);
    class MessageGetter extends BackpackNode {
      get message(): string {
        return 'a getter of its own';
      }
    }
    expect(constructsPlainly(MessageGetter)).toBe(false);
    // A class that is not `class` source (compiled to a function, or a proxy) cannot be read: not plain.
    expect(constructsPlainly(new Proxy(Put, {}))).toBe(false);
  });
});

describe('nodes built on first use', () => {
  const chain = (n: number): FlowConfigInput => ({
    version: '2.0.0',
    namespace: 'big',
    nodes: Array.from({ length: n }, (_, i) => ({ type: 'Put', id: `n${i}`, params: { key: `k${i}`, value: i } })),
    edges: [{ from: 'n0', to: 'n1' }],
  });

  it('loading builds the entry and the routed nodes only; a node is built when asked for, once, and stays the same node', async () => {
    const loader = loaderWith();
    const config = chain(50);
    schemaReads = 0;
    await loader.loadFlow(config);
    const eagerReads = schemaReads;
    schemaReads = 0;
    const flow = await loader.loadFlow(JSON.stringify(config));
    // The check reads the schema of every node in both loads; only the eager one created all 50. The other judged the
    // class once, created the entry, and built the node it routes to on first use (the class judged again, then created).
    // The eager load also locked the class, which reads its schema once (rememberSchema).
    expect(eagerReads - schemaReads).toBe(50 - 1 - 1 - 2 + 1);
    schemaReads = 0;
    const n7 = flow.getNode('n7');
    expect(schemaReads).toBe(2);
    expect(flow.getNode('n7')).toBe(n7);
    expect(flow.getNode('n1')).toBe(flow.getNode('n0')!.getNextNode());
    expect(schemaReads).toBe(2);
    expect(flow.getNode('n50')).toBeUndefined();
  });

  it('errors of a node are reported at load, with the same message and path, built on first use or not', async () => {
    const loader = loaderWith();
    const config: FlowConfigInput = {
      version: '2.0.0',
      nodes: [
        { type: 'Put', id: 'first', params: {} },
        { type: 'Put', id: 'has space', params: {} },
        { type: 'Tagged', id: 'boom', params: {} },
        { type: 'Put', id: 'fine', params: {} },
      ],
    };
    const errorOf = (load: Promise<Flow>) => load.then(() => undefined, (error: { errors: unknown }) => error.errors);
    // An id that is no namespace segment is the check's problem (issue 13: `validate` finds it too), as addNode words it.
    const eager = await errorOf(loader.loadFlow(config));
    expect(eager).toEqual([{ path: '/nodes/1/id', message: expect.stringContaining("Namespace segment of node 'has space' must be one segment") }]);
    expect(await errorOf(loader.loadFlow(JSON.stringify(config)))).toEqual(eager);
    expect(loader.validateConfig(config).errors).toEqual(eager);
    // What only creating a node finds: reported at load, built on first use or not.
    const built = { ...config, nodes: config.nodes.filter((node) => node.id !== 'has space') };
    const failed = await errorOf(loader.loadFlow(built));
    expect(failed).toEqual([{ path: '/nodes/1', message: "could not create node 'boom': this node refuses the id boom" }]);
    expect(await errorOf(loader.loadFlow(JSON.stringify(built)))).toEqual(failed);
  });

  it('on a shared Backpack, a namespace held by a node not built yet is refused to another node, and given again to the same one, as at load', async () => {
    const loader = loaderWith();
    const config = chain(4);
    const intruder: FlowConfigInput = { version: '2.0.0', namespace: 'big', nodes: [{ type: 'Put', id: 'other', namespaceSegment: 'n3', params: {} }] };
    const seen: unknown[] = [];
    for (const text of [false, true]) {
      const backpack = new Backpack();
      const first = await loader.loadFlow(text ? JSON.stringify(config) : config, undefined, { backpack });
      // The same nodes again (a second flow of the same config): registered again, in place.
      const again = await loader.loadFlow(text ? JSON.stringify(config) : config, undefined, { backpack });
      const refused = await loader.loadFlow(JSON.stringify(intruder), undefined, { backpack }).catch((error: { errors: unknown }) => error.errors);
      let registerError: unknown;
      try {
        backpack.registerNode({ nodeId: 'x', nodeName: 'X', namespace: 'big.n2' });
      } catch (error) {
        registerError = (error as Error).message;
      }
      seen.push({
        refused,
        registerError,
        nodes: backpack.toJSON().nodes,
        permissions: backpack.getPermissions('n3'),
        identity: backpack.forNode({ nodeId: 'n3', nodeName: 'Put', namespace: 'big.n3' }).identity,
        built: [first.getNode('n3')?.id, again.getNode('n2')?.id],
      });
    }
    expect(seen[0]).toMatchObject({ refused: [{ path: '/nodes/0', message: expect.stringContaining("Nodes 'n3' and 'other' would share the full namespace 'big.n3'") }] });
    expect(seen[1]).toEqual(seen[0]);
  });
});

// ---------------------------------------------------------------- the same flow, built at load or on first use

const ident = fc.stringMatching(/^[a-z][a-z0-9_]{0,5}$/);

/** A flow config mixing plain nodes, nodes that are not plain, a composite and a subflow, with random routes. */
type NodeInput = FlowConfigInput['nodes'][number];

const mixedFlow: fc.Arbitrary<FlowConfigInput> = fc.uniqueArray(ident, { minLength: 1, maxLength: 12 }).chain((ids) => {
  const node = (id: string, i: number): fc.Arbitrary<NodeInput> =>
    fc.oneof(
      { weight: 6, arbitrary: fc.record({ type: fc.constantFrom('Put', 'Echo'), id: fc.constant(id), params: fc.record({ key: fc.constant(`k-${id}`), value: fc.integer(), action: fc.constantFrom('default', 'next') }) }) as fc.Arbitrary<NodeInput> },
      { weight: 1, arbitrary: fc.constant<NodeInput>({ type: 'Tagged', id, params: {} }) },
      { weight: 1, arbitrary: fc.constant<NodeInput>({ type: 'Put', id, params: { key: `r-${id}`, value: i }, maxRetries: 2, retryDelayMs: 0 }) },
      { weight: 1, arbitrary: fc.constant<NodeInput>({ type: 'Put', id, namespaceSegment: `s${i}`, params: { key: `s-${id}`, value: i } }) },
      {
        weight: 1,
        arbitrary: fc.constant<NodeInput>({
          type: 'Put',
          id,
          params: { key: `c-${id}`, value: i },
          internalFlow: { version: '2.0.0', nodes: [{ type: 'Put', id: 'inner', params: { key: `i-${id}`, value: 1 } }, { type: 'Echo', id: 'inner2', params: { key: `j-${id}`, value: 2 } }], edges: [{ from: 'inner', to: 'inner2' }] },
        }),
      },
    );
  const edges = fc.uniqueArray(fc.record({ from: fc.constantFrom(...ids), to: fc.constantFrom(...ids), condition: fc.constantFrom('default', 'next') }), {
    maxLength: 8,
    selector: (e) => `${e.from}/${e.condition}`,
  });
  return fc.record({
    nodes: fc.tuple(...ids.map(node)),
    edges,
    sub: fc.boolean(),
    asked: fc.subarray(ids),
  }).map(({ nodes, edges, sub, asked }) => {
    const config: FlowConfigInput & { asked?: string[] } = { version: '2.0.0', namespace: 'app', nodes, edges, maxSteps: 30, onMissingRoute: 'end' };
    if (sub) config.subflows = [{ version: '2.0.0', namespace: 'side', nodes: [{ type: 'Put', id: 'x', params: { key: 'side', value: 0 } }, { type: 'Put', id: 'y', params: { key: 'side2', value: 0 } }] }];
    return Object.assign(config, { asked }) as FlowConfigInput;
  });
});

/** What a run shows: every event but its times and ids of run and span. */
function runView(events: StreamEvent[]): unknown[] {
  return events.map((e) => {
    const payload = { ...(e.payload as Record<string, unknown>) };
    delete payload['durationMs'];
    return { type: e.type, nodeId: e.nodeId, nodeName: e.nodeName, namespace: e.namespace, payload };
  });
}

describe('a flow loaded with nodes built on first use (property)', () => {
  it('exports, lists, registers and runs exactly as the same flow built at load, whatever is asked for first', async () => {
    const loader = loaderWith();
    await fc.assert(
      fc.asyncProperty(mixedFlow, async (generated) => {
        const { asked, ...config } = generated as FlowConfigInput & { asked: string[] };
        const loaded = await Promise.allSettled([loader.loadFlow(config), loader.loadFlow(JSON.stringify(config))]);
        if (loaded[0].status === 'rejected') {
          // (A generated segment may be another node's id: the same problems, either way.)
          expect(loaded[1]).toEqual(loaded[0]);
          return;
        }
        const eager = loaded[0].value;
        const lazy = (loaded[1] as PromiseFulfilledResult<Flow>).value;
        // Some nodes asked for first, in a random order: the rest are built later, by whatever needs them.
        for (const id of asked) expect(lazy.getNode(id)?.id).toBe(eager.getNode(id)?.id);
        expect(lazy.backpack.toJSON().nodes).toEqual(eager.backpack.toJSON().nodes);
        expect(lazy.getAllNodes().map((n) => [n.id, n.constructor.name])).toEqual(eager.getAllNodes().map((n) => [n.id, n.constructor.name]));
        expect(loader.exportFlow(lazy)).toEqual(loader.exportFlow(eager));
        expect(lazy.getStats()).toEqual(eager.getStats());
        const runs = await Promise.all(
          [eager, lazy].map(async (flow) => {
            const events: StreamEvent[] = [];
            flow.eventStreamer.on('*', (event) => void events.push(event));
            const action = await flow.run({}).catch((error: Error) => `failed: ${error.message}`);
            return { action, events: runView(events), state: flow.backpack.toJSON().nodes?.length, keys: flow.backpack.keys().sort() };
          }),
        );
        expect(runs[1]).toEqual(runs[0]);
        // Lookups by id (the registry's index and runs of reservations) answer the same, in registration order.
        const lookups = (flow: Flow) =>
          [...config.nodes.map((n) => n.id), 'inner', 'inner2', 'x', 'y'].map((id) => {
            try {
              return { id, permissions: flow.backpack.getPermissions(id), actor: flow.backpack.toJSON().nodes?.filter((n) => n.nodeId === id) };
            } catch (error) {
              return { id, error: (error as Error).message };
            }
          });
        expect(lookups(lazy)).toEqual(lookups(eager));
        for (const id of config.nodes.map((n) => n.id)) {
          const named = (flow: Flow) => {
            try {
              return flow.backpack.unpack('nothing', id) ?? 'resolved';
            } catch (error) {
              return (error as Error).message;
            }
          };
          expect(named(lazy)).toEqual(named(eager));
        }
      }),
      { numRuns: trials(40, 400), seed: 1313 },
    );
  });
});

describe('naming the nodes of a flow with nodes not built yet', () => {
  it('setEntryNode with an unknown id lists every node, loaded and added later, in order', async () => {
    const loader = loaderWith();
    const config: FlowConfigInput = { version: '2.0.0', nodes: ['a', 'b', 'c'].map((id) => ({ type: 'Put', id, params: {} })) };
    const messages = await Promise.all(
      [config, JSON.stringify(config)].map(async (given) => {
        const flow = await loader.loadFlow(given);
        flow.addNode(Put, { id: 'later' });
        try {
          flow.setEntryNode('nope');
        } catch (error) {
          return (error as Error).message;
        }
        return 'no error';
      }),
    );
    expect(messages[0]).toBe("Flow 'flow': no node with id 'nope' to make the entry node (nodes: a, b, c, later)");
    expect(messages[1]).toBe(messages[0]);
  });
});

describe('registrations of nodes built on first use, looked up by id', () => {
  it('two flows on one Backpack with the same ids, plain and not plain alternating: every lookup by id answers as for flows built at load, in registration order', async () => {
    const loader = loaderWith();
    const flowOf = (namespace: string): FlowConfigInput => ({
      version: '2.0.0',
      namespace,
      nodes: Array.from({ length: 10 }, (_, i) => ({ type: i % 2 === 0 ? 'Reader' : 'Put', id: `n${i}`, params: { key: `k${i}`, value: i } })),
    });
    const views = await Promise.all(
      [false, true].map(async (text) => {
        const backpack = new Backpack();
        for (const namespace of ['a', 'b']) await loader.loadFlow(text ? JSON.stringify(flowOf(namespace)) : flowOf(namespace), undefined, { backpack });
        return Array.from({ length: 11 }, (_, i) => {
          const id = `n${i}`;
          let named: unknown;
          try {
            named = backpack.registerPermissions(id, { read: ['x'] });
          } catch (error) {
            named = (error as Error).message;
          }
          return { id, permissions: backpack.getPermissions(id), named, b: backpack.forNode({ nodeId: id, nodeName: i % 2 === 0 ? 'Reader' : 'Put', namespace: `b.${id}` }).identity };
        });
      }),
    );
    expect(views[1]).toEqual(views[0]);
    // The flow registered first answers first; an id two flows hold names both, in that order.
    expect(views[0]![0]).toMatchObject({ permissions: { read: ['in'], write: ['out'] }, named: "Node id 'n0' names 2 registered nodes (namespaces 'a.n0', 'b.n0'): pass its namespace too" });
    expect(views[0]![1]).toMatchObject({ permissions: undefined, named: "Node id 'n1' names 2 registered nodes (namespaces 'a.n1', 'b.n1'): pass its namespace too" });
    expect(views[0]![10]).toMatchObject({ permissions: { read: ['x'] }, named: undefined, b: { nodeId: 'n10', namespace: 'b.n10' } });
  });
});

describe('a node built on first use whose registration another flow replaces', () => {
  /** What a Backpack shows of node n3 and what its handle may do: its rules, registrations, reads and writes. */
  const view = async (backpack: Backpack, first: Flow) => {
    const handle = backpack.forNode({ nodeId: 'n3', nodeName: backpack.getPermissions('n3') ? 'Reader' : 'Put', namespace: 'big.n3' });
    const attempt = (what: () => unknown): string => {
      try {
        what();
        return 'allowed';
      } catch (error) {
        return `${(error as Error).name}: ${(error as Error).message}`;
      }
    };
    const events: StreamEvent[] = [];
    first.eventStreamer.on('*', (event) => void events.push(event));
    const action = await first.run({}).catch((error: Error) => `failed: ${error.message}`);
    return {
      permissions: backpack.getPermissions('n3'),
      nodes: backpack.toJSON().nodes,
      reads: [attempt(() => handle.unpackRequired('in')), attempt(() => handle.unpackRequired('secret'))],
      writes: [attempt(() => handle.pack('out', 1)), attempt(() => handle.pack('elsewhere', 1))],
      run: { action, events: runView(events), keys: backpack.keys().sort() },
    };
  };
  const chained: FlowConfigInput = {
    version: '2.0.0',
    namespace: 'big',
    nodes: Array.from({ length: 4 }, (_, i) => ({ type: 'Put', id: `n${i}`, params: { key: `k${i}`, value: i } })),
    edges: [0, 1, 2].map((i) => ({ from: `n${i}`, to: `n${i + 1}` })),
  };
  const reader: FlowConfigInput = { version: '2.0.0', namespace: 'big', nodes: [{ type: 'Reader', id: 'n3', params: {} }] };

  it('gets exactly the rules, and the denied reads and writes, of a node built at load', async () => {
    const loader = loaderWith();
    const seen = await Promise.all(
      [false, true].map(async (text) => {
        const backpack = new Backpack({ in: 'visible', secret: 'hidden' });
        const first = await loader.loadFlow(text ? JSON.stringify(chained) : chained, undefined, { backpack });
        await loader.loadFlow(reader, undefined, { backpack });
        return view(backpack, first);
      }),
    );
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]!.permissions).toEqual({ read: ['in'], write: ['out'] });
    expect(seen[0]!.reads[0]).toBe('allowed');
    expect(seen[0]!.reads[1]).toMatch(/^AccessDeniedError: .*node 'n3' may not read key 'secret'/);
    expect(seen[0]!.writes[0]).toBe('allowed');
    expect(seen[0]!.writes[1]).toMatch(/^AccessDeniedError: .*node 'n3' may not write key 'elsewhere'/);
    // The first flow's n3 acts as it was registered by that flow (no rules), built at load or on first use alike.
    expect(seen[0]!.run.keys).toContain('k3');
  });

  it('registered by another flow first, it is built at load and its rules (none) replace the other flow\'s, as at load', async () => {
    const loader = loaderWith();
    const seen = await Promise.all(
      [false, true].map(async (text) => {
        const backpack = new Backpack({ in: 'visible', secret: 'hidden' });
        await loader.loadFlow(reader, undefined, { backpack });
        const first = await loader.loadFlow(text ? JSON.stringify(chained) : chained, undefined, { backpack });
        return view(backpack, first);
      }),
    );
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]!.permissions).toBeUndefined();
    expect(seen[0]!.reads).toEqual(['allowed', 'allowed']);
  });
});

describe('a class changed after it was judged plain', () => {
  const config = (type: string): FlowConfigInput => ({
    version: '2.0.0',
    namespace: 'm',
    // n2 and n3 are on no route: built when asked for (or by a run reaching them through setEntryNode, below). They
    // alone are of the class changed: a class is locked once a node of it is added (see lockNodeClass).
    nodes: Array.from({ length: 4 }, (_, i) => ({ type: i < 2 ? 'Routed' : type, id: `n${i}`, params: { key: `k${i}`, value: i } })),
    edges: [{ from: 'n0', to: 'n1' }],
  });
  /** A fresh plain class per test (the changes below are not undone). */
  const fresh = () => {
    class Fresh extends Put {}
    class Routed extends Put {}
    return { Fresh, loader: new FlowLoader().register('Fresh', Fresh).register('Routed', Routed) };
  };
  const shown = async (flow: Flow) => {
    const events: StreamEvent[] = [];
    flow.eventStreamer.on('*', (event) => void events.push(event));
    const action = await flow.run({}).catch((error: Error) => `failed: ${error.message}`);
    return { permissions: flow.backpack.getPermissions('n2'), nodes: flow.backpack.toJSON().nodes, action, events: runView(events), keys: flow.backpack.keys().sort() };
  };

  it('static permissions assigned after the load: a node built later keeps the rules registered at load (none), as one built then', async () => {
    const { Fresh, loader } = fresh();
    expect(constructsPlainly(Fresh)).toBe(true);
    const lazy = await loader.loadFlow(JSON.stringify(config('Fresh')));
    (Fresh as unknown as { permissions: unknown }).permissions = { read: ['nothing'], write: ['nothing'] };
    const seen = await shown(lazy);
    expect(seen.permissions).toBeUndefined();
    expect(seen.keys).toEqual(['k0', 'k1']);
    expect(lazy.getNode('n3')?.id).toBe('n3');
    // A class a node was added of is locked: the change is refused from then on (built at load, as n2 is now).
    expect(() => ((Fresh as unknown as { permissions: unknown }).permissions = { read: ['k0'] })).toThrow(TypeError);
    const { Fresh: Other, loader: eagerLoader } = fresh();
    const eager = await eagerLoader.loadFlow(config('Fresh'));
    expect(() => ((Other as unknown as { permissions: unknown }).permissions = { read: ['nothing'] })).toThrow(TypeError);
    expect(await shown(eager)).toEqual(seen);
  });

  it('static permissions assigned before another load: that load registers them, from text as from an object', async () => {
    const { Fresh, loader } = fresh();
    await loader.loadFlow(JSON.stringify(config('Fresh')));
    (Fresh as unknown as { permissions: unknown }).permissions = { read: ['k0'], write: ['k0', 'k1', 'k2', 'k3'] };
    expect(constructsPlainly(Fresh)).toBe(false);
    const seen = [await shown(await loader.loadFlow(config('Fresh'))), await shown(await loader.loadFlow(JSON.stringify(config('Fresh'))))];
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]!.permissions).toEqual({ read: ['k0'], write: ['k0', 'k1', 'k2', 'k3'] });
  });

  it('a getter put on the prototype after the load: building a node then is an error naming the class and the change; later loads build every node at load', async () => {
    const { Fresh, loader } = fresh();
    const lazy = await loader.loadFlow(JSON.stringify(config('Fresh')));
    let getterRuns = 0;
    Object.defineProperty(Fresh.prototype, 'label', {
      get() {
        getterRuns++;
        return 'label';
      },
    });
    expect(constructsPlainly(Fresh)).toBe(false);
    expect(() => lazy.getNode('n2')).toThrow(
      "Node 'n2' was to be built on first use, but its class Fresh changed since the flow was loaded (the prototype of Fresh has a getter or setter 'label'): it cannot be built as it would have been at load",
    );
    expect(getterRuns).toBe(0);
    const seen = [await loader.loadFlow(config('Fresh')), await loader.loadFlow(JSON.stringify(config('Fresh')))];
    expect(loader.exportFlow(seen[1]!)).toEqual(loader.exportFlow(seen[0]!));
    expect(await shown(seen[1]!)).toEqual(await shown(seen[0]!));
  });

  it('a paramsSchema assigned, or a class with a constructor put into the chain, after the load: the same error', async () => {
    for (const change of ['schema', 'chain'] as const) {
      const { Fresh, loader } = fresh();
      const lazy = await loader.loadFlow(JSON.stringify(config('Fresh')));
      if (change === 'schema') {
        Object.defineProperty(Fresh, 'paramsSchema', { value: { safeParse: () => ({ success: true }) }, configurable: true });
      } else {
        Object.setPrototypeOf(Fresh, Tagged);
        Object.setPrototypeOf(Fresh.prototype, Tagged.prototype);
      }
      expect(constructsPlainly(Fresh)).toBe(false);
      expect(() => lazy.getAllNodes()).toThrow(
        change === 'schema' ? "(it has a static 'paramsSchema')" : '(class Tagged declares a constructor or an instance field, or its source cannot be read)',
      );
    }
  });
});
