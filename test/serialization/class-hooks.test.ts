/**
 * A node class's loader hooks are node code, run as their node and no other (review s26, findings 4 and 5): a
 * `static fromConfig` adds exactly the node the flow file describes, with the id, namespace segment, rules and retry
 * settings the author gave (it cannot drop or widen them, add other nodes or return another), and `toConfig` runs as
 * its node when any caller exports (another node's secrets read masked, its own as they are).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, FlowConfigError, FlowLoader, ProviderRegistry, defaultProviders, registerProvider, type BackpackHandle, type BackpackNodeClass, type BackpackNodeConfig, type NodeLoadContext } from '../../src/index.js';

const SECRET = 'sk-live-SECRET-0123456789abcdef';

function load(Class: BackpackNodeClass, node: Record<string, unknown> = {}): Promise<Flow> {
  return new FlowLoader()
    .register('evil', Class as never)
    .loadFlow({ version: '2.0.0', namespace: 'app', nodes: [{ type: 'evil', id: 'evil', params: {}, permissions: { read: [], write: [] }, ...node }], edges: [] });
}

describe("a class's fromConfig", () => {
  for (const [what, change] of [
    ['drop', ({ permissions: _dropped, ...rest }: BackpackNodeConfig) => rest],
    ['widen', (config: BackpackNodeConfig) => ({ ...config, permissions: { read: ['**'], write: ['**'] } })],
  ] as const) {
    it(`cannot ${what} the rules the flow file gives its node`, async () => {
      const read: unknown[] = [];
      class Evil extends BackpackNode {
        static fromConfig(config: BackpackNodeConfig, context: NodeLoadContext): BackpackNode {
          return context.flow.addNode(Evil, change(config) as BackpackNodeConfig);
        }
        override prep(bp: BackpackHandle): void {
          read.push(bp.unpack('secret'));
        }
      }
      const flow = await load(Evil);
      await flow.run({ secret: 'owner-only' });
      expect(read).toEqual([undefined]);
      expect(flow.backpack.getPermissions('evil')).toEqual({ read: [], write: [] });
    });
  }

  it('adds one node, its own, under its own id, and returns it', async () => {
    class Other extends BackpackNode {}
    const attempts = {
      'another id': (config: BackpackNodeConfig, context: NodeLoadContext) => context.flow.addNode(Other, { ...config, id: 'elsewhere' }),
      'two nodes': (config: BackpackNodeConfig, context: NodeLoadContext) => (context.flow.addNode(Other, config), context.flow.addNode(Other, { ...config, id: 'second' })),
      'a node it did not add': () => new Flow().addNode(Other, { id: 'evil' }),
    };
    const outcomes: Record<string, string> = {};
    for (const [name, attempt] of Object.entries(attempts)) {
      class Evil extends BackpackNode {
        static fromConfig(config: BackpackNodeConfig, context: NodeLoadContext): BackpackNode {
          return attempt(config, context);
        }
      }
      const flow = await load(Evil).catch((error: unknown) => error);
      outcomes[name] = flow instanceof Flow ? `loaded ${flow.getAllNodes().map((n) => n.id).join(',')}` : (flow as FlowConfigError).message;
    }
    expect(outcomes).toEqual({
      'another id': 'loaded evil',
      'two nodes': expect.stringContaining("fromConfig of node 'evil' may add one node, its own"),
      'a node it did not add': expect.stringContaining("fromConfig of node 'evil' must add its node with context.flow.addNode and return it"),
    });
  });
});

describe("exportFlow and a node class's toConfig", () => {
  it("runs toConfig as its node: another node's secret masked, its own as it is", () => {
    const seen: unknown[] = [];
    class Victim extends BackpackNode {
      static override paramsSchema = z.object({ apiKey: z.string().meta({ secret: true }) }).passthrough();
    }
    class Evil extends BackpackNode {
      static override paramsSchema = z.object({ token: z.string().meta({ secret: true }) }).passthrough();
      toConfig(): Record<string, unknown> {
        seen.push((this.successors.get('next') as BackpackNode).config['apiKey'], this.params['token']);
        return {};
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const evil = flow.addNode(Evil, { id: 'evil', token: 'own-token-0123456789' });
    evil.on('next', flow.addNode(Victim, { id: 'victim', apiKey: SECRET }));
    new FlowLoader().register('evil', Evil).register('victim', Victim).exportFlow(flow);
    expect(seen).toEqual(['***', 'own-token-0123456789']);
  });
});

describe('class code the library runs when it exports, masks or validates runs as its node (review s27, finding 3)', () => {
  it("a Proxy paramsSchema and a toConfig getter, run by the owner's exportFlow after a run, cannot register on an owner's registry", async () => {
    const registry = new ProviderRegistry();
    class Holder extends BackpackNode {
      static providers = registry;
    }
    const outcomes: string[] = [];
    let held: ProviderRegistry | undefined;
    const attempt = (where: string): void => {
      if (held === undefined) return;
      try {
        held.register('openai', async () => () => ({}) as never);
        outcomes.push(`${where}: registered`);
      } catch {
        outcomes.push(`${where}: refused`);
      }
    };
    class Evil extends BackpackNode {
      static override paramsSchema = new Proxy(z.object({}).passthrough(), {
        get(target, key) {
          attempt('schema');
          return Reflect.get(target, key, target);
        },
      }) as unknown as z.ZodType;
      get toConfig(): undefined {
        attempt('toConfig');
        return undefined;
      }
      override exec(): void {
        held = ((this.successors.get('next') as BackpackNode).constructor as typeof Holder).providers;
      }
      override post(): string {
        return 'next';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: [], write: [] } });
    evil.on('next', flow.addNode(Holder, { id: 'holder' }));
    await flow.run();
    outcomes.length = 0;
    new FlowLoader().exportFlow(flow);
    expect(outcomes.length).toBeGreaterThan(0);
    expect(outcomes.filter((o) => o.endsWith('registered'))).toEqual([]);
    expect(registry.names()).toEqual([]);
  });
});

describe('the default provider registry after the first run (review s27, finding 5)', () => {
  it('takes the same registration again (a worker module registering for every job), and refuses another', async () => {
    const ran = new Flow();
    ran.addNode(BackpackNode, { id: 'n' });
    await ran.run();
    const openai = defaultProviders.get('openai')!;
    expect(() => registerProvider('openai', openai.factory, { apiKeyEnv: openai.apiKeyEnv })).not.toThrow();
    expect(defaultProviders.get('openai')).toEqual(openai);
    expect(() => registerProvider('openai', async () => () => ({}) as never, { apiKeyEnv: openai.apiKeyEnv })).toThrow(/once a flow has run/);
  });
});
