/**
 * A node's identity is its flow's to give (DESIGN D4, D6, D9): its id, its namespace and the access rules the flow's
 * author gave it in addNode's config (or a flow file). A node class's constructor is node code: whatever it hands
 * `super`, and whatever it or the node's later code assigns, the node registers, packs, emits and is found under
 * the identity the flow chose, or is refused. (Review s23a, H1 and H2.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowError, FlowLoader, type BackpackHandle, type BackpackNodeConfig, type NodeContext, type StreamEvent } from '../../src/index.js';
import { trials } from '../support/soak.js';

describe('access rules given in the node config (H1)', () => {
  it("a node class cannot drop the permissions the flow author gave it in addNode's config", async () => {
    let stolen: unknown = 'not read';
    class Evil extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        const { permissions: _dropped, ...rest } = config;
        super(rest as BackpackNodeConfig, context);
      }
      override prep(bp: BackpackHandle): void {
        stolen = bp.unpack('secret');
      }
    }
    const flow = new Flow({ initialData: { secret: 'TOPSECRET', public: 'ok' } });
    const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: ['public'], deny: ['secret'] } });
    await flow.run();
    expect(stolen).toBeUndefined();
    expect(flow.backpack.getPermissions('evil')).toEqual({ read: ['public'], deny: ['secret'] });
    // What the node shows and exports is what its flow registered.
    expect(evil.config.permissions).toEqual({ read: ['public'], deny: ['secret'] });
  });

  it('a node class cannot widen its permissions by passing other rules to super', async () => {
    let stolen: unknown = 'not read';
    class Evil extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super({ ...config, permissions: { read: ['**'] } }, context);
      }
      override prep(bp: BackpackHandle): void {
        stolen = bp.unpack('secret');
      }
    }
    const flow = new Flow({ initialData: { secret: 'TOPSECRET' } });
    const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: ['public'] } });
    await flow.run();
    expect(stolen).toBeUndefined();
    expect(flow.backpack.getPermissions('evil')).toEqual({ read: ['public'] });
    expect(evil.config.permissions).toEqual({ read: ['public'] });
    expect(new FlowLoader().register('Evil', Evil).exportFlow(flow).nodes[0]!.permissions).toEqual({ read: ['public'] });
  });

  it("the caller's rules are copied before the constructor runs: changing the config object it was given changes nothing", async () => {
    let stolen: unknown = 'not read';
    class Evil extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        // Tries the caller's own objects too: the config and its rules.
        try {
          (config.permissions as { read: string[] }).read.push('**');
        } catch {
          // frozen: fine
        }
        delete (config as Partial<BackpackNodeConfig>).permissions;
        super(config, context);
      }
      override prep(bp: BackpackHandle): void {
        stolen = bp.unpack('secret');
      }
    }
    const flow = new Flow({ initialData: { secret: 'TOPSECRET' } });
    const rules = { read: ['public'] };
    const config = { id: 'evil', permissions: rules };
    flow.addNode(Evil, config);
    await flow.run();
    expect(stolen).toBeUndefined();
    expect(rules).toEqual({ read: ['public'] });
    expect(config.permissions).toBe(rules);
  });

  it('a flow file: a node class drops the permissions of its node in the file, and they hold', async () => {
    let stolen: unknown = 'not read';
    class Evil extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super({ ...config, permissions: undefined }, context);
      }
      override prep(bp: BackpackHandle): void {
        stolen = bp.unpack('secret');
      }
    }
    const loader = new FlowLoader().register('Evil', Evil);
    const flow = await loader.loadFlow({ version: '2.0.0', namespace: 'app', nodes: [{ type: 'Evil', id: 'evil', params: {}, permissions: { read: ['public'] } }], edges: [] });
    await flow.run({ secret: 'TOPSECRET' });
    expect(stolen).toBeUndefined();
    expect(loader.exportFlow(flow).nodes[0]!.permissions).toEqual({ read: ['public'] });
  });

  it('a class that parses its config (dropping what it does not know) still runs with the rules its author gave', async () => {
    class Parsing extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super({ id: config.id, model: config['model'] ?? 'default-model' }, context);
      }
      override prep(bp: BackpackHandle): unknown {
        return bp.unpack('secret');
      }
      override post(bp: BackpackHandle, seen: unknown): undefined {
        bp.pack('seen', seen === undefined ? 'nothing' : 'secret');
        return undefined;
      }
    }
    const flow = new Flow({ initialData: { secret: 'TOPSECRET' } });
    const node = flow.addNode(Parsing, { id: 'p', permissions: { read: ['public'], write: ['seen'] }, namespaceSegment: 'parsing' });
    await flow.run();
    expect(flow.backpack.unpack('seen')).toBe('nothing');
    expect(node.params).toEqual({ model: 'default-model' });
    expect(node.config.namespaceSegment).toBe('parsing');
    expect(node.namespace).toBe('parsing');
  });

  it('without rules in the config, the rules a class declares (in its config to super, a field or static) apply as before', async () => {
    class Declaring extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super({ ...config, permissions: { read: ['public'] } }, context);
      }
    }
    class Static extends BackpackNode {
      static permissions = { read: ['other'] };
    }
    const flow = new Flow();
    flow.addNode(Declaring, { id: 'd' });
    flow.addNode(Static, { id: 's' });
    expect(flow.backpack.getPermissions('d')).toEqual({ read: ['public'] });
    expect(flow.backpack.getPermissions('s')).toEqual({ read: ['other'] });
  });
});

describe('id and namespace (H2)', () => {
  it("a node class cannot take another node's id (provenance sourceNodeId stays its own)", () => {
    class Verifier extends BackpackNode {}
    class Evil extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super({ ...config, id: 'verifier' }, context);
      }
    }
    const flow = new Flow();
    const v = flow.addNode(Verifier, { id: 'verifier' });
    expect(() => flow.addNode(Evil, { id: 'evil' })).toThrow(FlowError);
    expect(() => flow.addNode(Evil, { id: 'evil' })).toThrow(/node 'evil' of class Evil does not have the identity its flow gave it \(its id is "verifier", not 'evil'/);
    expect(flow.getNode('verifier')).toBe(v);
    expect(flow.getNode('evil')).toBeUndefined();
  });

  it("a node class cannot claim another node's namespace (and with it that node's private events)", () => {
    class Evil extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super(config, { ...context, namespace: 'app' });
      }
    }
    const flow = new Flow({ namespace: 'app' });
    expect(() => flow.addNode(Evil, { id: 'evil' })).toThrow(/its namespace is "app", not 'app.evil'/);
  });

  it('a constructor that assigns id or namespace after super, or makes them accessors, is refused', () => {
    class Assigns extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super(config, context);
        (this as { namespace: string }).namespace = 'app';
      }
    }
    class Accessor extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super(config, context);
        let reads = 0;
        Object.defineProperty(this, 'namespace', { get: () => (reads++ === 0 ? context.namespace : 'app'), configurable: true, enumerable: true });
      }
    }
    class ProxyNode extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super(config, context);
        return new Proxy(this, {});
      }
    }
    const flow = new Flow({ namespace: 'app' });
    expect(() => flow.addNode(Assigns, { id: 'a' })).toThrow(/its namespace is "app", not 'app.a'/);
    expect(() => flow.addNode(Accessor, { id: 'b' })).toThrow(/its 'namespace' is not a plain field/);
    expect(() => flow.addNode(ProxyNode, { id: 'c' })).toThrow(/returned a Proxy/);
  });

  it("a node cannot rewrite its own namespace or id after addNode to see other nodes' events", async () => {
    const seen: StreamEvent[] = [];
    const refused: string[] = [];
    class Secretive extends BackpackNode {
      override post(): undefined {
        this.eventStreamer.emit({ type: 'custom', payload: { note: 'PRIVATE-TO-SECRETIVE' } });
        return undefined;
      }
    }
    class Evil extends BackpackNode {
      override post(): undefined {
        for (const [key, value] of [['namespace', 'app'], ['id', 'secretive']] as const) {
          try {
            (this as unknown as Record<string, string>)[key] = value;
          } catch (error) {
            refused.push(`${key}: ${(error as Error).name}`);
          }
        }
        seen.push(...this.eventStreamer.getHistory());
        this.eventStreamer.emit({ type: 'custom', payload: { from: 'evil' } });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const evil = flow.addNode(Secretive, { id: 'secretive' }).next(flow.addNode(Evil, { id: 'evil' }));
    await flow.run();
    expect(refused).toEqual(['namespace: TypeError', 'id: TypeError']);
    expect(JSON.stringify(seen)).not.toContain('PRIVATE-TO-SECRETIVE');
    expect(evil.namespace).toBe('app.evil');
    expect(evil.id).toBe('evil');
    const custom = flow.eventStreamer.getHistory({ type: 'custom' });
    expect(custom.map((e) => [e.nodeId, e.namespace])).toEqual([
      ['secretive', 'app.secretive'],
      ['evil', 'app.evil'],
    ]);
  });

  it("a node cannot rewrite another node's config, retry settings or identity before it runs", async () => {
    const refused: string[] = [];
    class Target extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('endpoint', String(this.params['baseURL']));
        bp.pack('headers', JSON.stringify(this.config['headers']));
        return undefined;
      }
    }
    class Evil extends BackpackNode {
      override prep(): void {
        const next = this.successors.get('default') as BackpackNode;
        const tries: [string, () => void][] = [
          ['config', () => ((next as unknown as { config: unknown }).config = { ...next.config, baseURL: 'http://attacker.example' })],
          ['nested', () => ((next.config['headers'] as Record<string, string>)['x-to'] = 'attacker')],
          ['params nested', () => ((next.params['headers'] as Record<string, string>)['x-to'] = 'attacker')],
          ['maxRetries', () => ((next as unknown as { maxRetries: number }).maxRetries = 1000)],
          ['id', () => ((next as unknown as { id: string }).id = 'other')],
          ['namespace', () => ((next as unknown as { namespace: string }).namespace = 'other')],
        ];
        for (const [name, attempt] of tries) {
          try {
            attempt();
          } catch {
            refused.push(name);
          }
        }
      }
    }
    const flow = new Flow();
    const target = flow.addNode(Target, { id: 'target', baseURL: 'https://api.openai.com', headers: { accept: 'json' } });
    flow.addNode(Evil, { id: 'evil' }).next(target);
    flow.setEntryNode('evil');
    await flow.run();
    expect(refused).toEqual(['config', 'nested', 'params nested', 'maxRetries', 'id', 'namespace']);
    expect(flow.backpack.unpack('endpoint')).toBe('https://api.openai.com');
    expect(flow.backpack.unpack('headers')).toBe('{"accept":"json"}');
    expect(target.maxRetries).toBe(1);
  });
});

/** What a hostile constructor may do to the identity it was handed. */
type Tamper =
  | { kind: 'none' }
  | { kind: 'config-id'; id: string }
  | { kind: 'context-namespace'; namespace: string }
  | { kind: 'assign-id'; id: string }
  | { kind: 'assign-namespace'; namespace: string }
  | { kind: 'drop-permissions' }
  | { kind: 'permissions'; read: string[] }
  | { kind: 'segment'; segment: string | undefined };

const name = fc.constantFrom('a', 'b', 'c', 'app', 'other');
const tamper: fc.Arbitrary<Tamper> = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  name.map((id) => ({ kind: 'config-id' as const, id })),
  fc.constantFrom('app', 'app.a', 'app.b', 'other', 'app.x.y').map((namespace) => ({ kind: 'context-namespace' as const, namespace })),
  name.map((id) => ({ kind: 'assign-id' as const, id })),
  fc.constantFrom('app', 'app.a', 'app.b', 'other').map((namespace) => ({ kind: 'assign-namespace' as const, namespace })),
  fc.constant({ kind: 'drop-permissions' as const }),
  fc.subarray(['**', 'secret', 'public']).map((read) => ({ kind: 'permissions' as const, read })),
  fc.option(name, { nil: undefined }).map((segment) => ({ kind: 'segment' as const, segment })),
);

function hostileClass(t: Tamper): typeof BackpackNode {
  return class Hostile extends BackpackNode {
    constructor(config: BackpackNodeConfig, context: NodeContext) {
      let c: BackpackNodeConfig = config;
      let ctx: NodeContext = context;
      if (t.kind === 'config-id') c = { ...config, id: t.id };
      if (t.kind === 'context-namespace') ctx = { ...context, namespace: t.namespace };
      if (t.kind === 'drop-permissions') c = { ...config, permissions: undefined };
      if (t.kind === 'permissions') c = { ...config, permissions: { read: t.read } };
      if (t.kind === 'segment') c = { ...config, namespaceSegment: t.segment };
      super(c, ctx);
      if (t.kind === 'assign-id') (this as { id: string }).id = t.id;
      if (t.kind === 'assign-namespace') (this as { namespace: string }).namespace = t.namespace;
    }
    override post(bp: BackpackHandle): undefined {
      bp.pack(`by-${this.id}`, true);
      return undefined;
    }
  };
}

describe('no node registers, packs or is found under an identity other than the one its flow gave it', () => {
  it('property: whatever a constructor does, addNode refuses the node or it has exactly its flow-given identity and rules', async () => {
    await fc.assert(
      fc.asyncProperty(
        tamper,
        fc.option(fc.subarray(['public', 'secret']), { nil: undefined }),
        fc.option(fc.constantFrom('seg', 'x'), { nil: undefined }),
        async (t, read, segment) => {
          const flow = new Flow({ namespace: 'app', initialData: { secret: 'S', public: 'P' } });
          class Other extends BackpackNode {}
          const other = flow.addNode(Other, { id: 'b' });
          const config: BackpackNodeConfig = { id: 'a' };
          if (read !== undefined) config.permissions = { read, write: ['by-a'] };
          if (segment !== undefined) config.namespaceSegment = segment;
          const namespace = `app.${segment ?? 'a'}`;
          let node: BackpackNode;
          try {
            node = flow.addNode(hostileClass(t), config);
          } catch (error) {
            // Refused: only for a changed id or namespace, and nothing of it stays.
            expect(error).toBeInstanceOf(FlowError);
            expect(['config-id', 'context-namespace', 'assign-id', 'assign-namespace']).toContain(t.kind);
            expect(flow.getNode('a')).toBeUndefined();
            expect(flow.getNode('b')).toBe(other);
            return;
          }
          // Accepted: a change of id or namespace that changed nothing, or of what the flow puts back.
          expect(node.id).toBe('a');
          expect(node.namespace).toBe(namespace);
          expect(node.config.id).toBe('a');
          expect(node.config.namespaceSegment).toBe(segment);
          expect(flow.getNode('a')).toBe(node);
          expect(flow.getNode('b')).toBe(other);
          const classRules = t.kind === 'permissions' ? { read: t.read } : undefined;
          const expected = read !== undefined ? { read, write: ['by-a'] } : classRules;
          expect(flow.backpack.getPermissions('a')).toEqual(expected);
          expect(node.config.permissions).toEqual(expected);
          for (const key of ['id', 'namespace', 'config']) expect(() => ((node as unknown as Record<string, unknown>)[key] = 'x')).toThrow(TypeError);
          flow.setEntryNode(node);
          await flow.run().catch(() => undefined);
          const item = flow.backpack.getItem('by-a');
          if (item !== undefined) {
            expect(item.metadata.sourceNodeId).toBe('a');
            expect(item.metadata.sourceNamespace).toBe(namespace);
          }
          expect(flow.eventStreamer.getHistory({ type: 'node.started' }).map((e) => [e.nodeId, e.namespace])).toEqual([['a', namespace]]);
        },
      ),
      { numRuns: trials(150, 1500) },
    );
  });
});

describe("a node's class name is the one it was registered under", () => {
  it('node code that renames its class (or answers another name later) changes no event nor provenance', async () => {
    let reads = 0;
    class Shifty extends BackpackNode {
      // Answers 'Shifty' when the flow registers it, then another name on every later read.
      static override get name(): string {
        return reads++ === 0 ? 'Shifty' : 'LlmNode';
      }
      override prep(bp: BackpackHandle): void {
        bp.pack('before', 1);
        // Nor can it redefine the name: its class is locked once a flow added it (see lockNodeClass).
        for (const target of [Shifty, BackpackNode]) {
          try {
            Object.defineProperty(target, 'name', { value: 'Impostor', configurable: true });
          } catch (error) {
            refused.push((error as Error).name);
          }
        }
      }
      override post(bp: BackpackHandle): undefined {
        bp.pack('after', 2);
        this.eventStreamer.emit({ type: 'custom', payload: { note: 'hello' } });
        return undefined;
      }
    }
    const refused: string[] = [];
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Shifty, { id: 's' });
    await flow.run();
    expect(refused).toEqual(['TypeError', 'TypeError']);
    expect(Shifty.name).toBe('LlmNode');
    const names = flow.eventStreamer.getHistory().filter((e) => e.nodeId === 's' && e.nodeName !== undefined).map((e) => `${e.type}:${e.nodeName}`);
    expect(names.length).toBeGreaterThanOrEqual(5);
    for (const entry of names) expect(entry).toMatch(/:Shifty$/);
    expect(flow.backpack.getItem('after')!.metadata.sourceNodeName).toBe('Shifty');
  });
});
