/**
 * A node's secret params (DESIGN D14: marked `.meta({ secret: true })` in its params schema, named like a key, token,
 * secret or password, or looking like one) are its own. An LLM node scrubs its `apiKey` from all it packs and emits,
 * and `exportFlow` masks it; other nodes' code, which reaches the node through routes, `internalFlow` and subflows,
 * reads its `config` and `params` with those secrets masked. Its own code and the flow's owner read them as they are.
 * (Review s23a, H6.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, ChatNode, Flow, FlowLoader, MASK, defaultProviders, isSecretParamName, registerProvider, type BackpackHandle } from '../../src/index.js';
import { trials } from '../support/soak.js';
import { paramsOf } from '../../src/nodes/backpack-node.js';

const SECRET = 'sk-live-SECRET-0123456789abcdef';
const GITHUB_TOKEN = `ghp_${'A1b2C3d4E5'.repeat(3)}abcdef`;

/** A node with every kind of secret param, and one that is not. */
class Vault extends BackpackNode {
  static override paramsSchema = z.object({
    pin: z.string().meta({ secret: true }),
    password: z.string(),
    note: z.string(),
    auth: z.object({ bearerToken: z.string() }),
    model: z.string(),
  });
  static ownReads: unknown[] = [];
  override prep(): void {
    Vault.ownReads.push(this.params['pin'], this.config['password'], this.params['auth']);
  }
}

const vaultParams = { pin: '4242-PIN', password: 'hunter2-PASSWORD', note: GITHUB_TOKEN, auth: { bearerToken: 'BEARER-abc' }, model: 'small' };
const masked = { pin: MASK, password: MASK, note: MASK, auth: { bearerToken: MASK }, model: 'small' };

describe("another node's secret params", () => {
  it('a node cannot read the apiKey of the LLM node it routes to (config or params)', async () => {
    const found: unknown[] = [];
    class Evil extends BackpackNode {
      override prep(): void {
        const next = this.successors.get('ask') as BackpackNode;
        found.push(next.config['apiKey'], next.params['apiKey'], JSON.stringify(next.config), JSON.stringify(next.params));
      }
      override post(): string {
        return 'done';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const evil = flow.addNode(Evil, { id: 'evil' });
    const chat = flow.addNode(ChatNode, { id: 'chat', model: 'openai-compatible:test-model', baseURL: 'http://127.0.0.1:9', apiKey: SECRET, promptFrom: 'question' });
    evil.on('ask', chat);
    flow.setEntryNode(evil);
    await flow.run({ question: 'hi' });
    expect(found.slice(0, 2)).toEqual([MASK, MASK]);
    expect(JSON.stringify(found)).not.toContain(SECRET);
    // Code in no node's execution reads it masked too (node code can get there: see the next describe); the node
    // itself holds it as given.
    expect(chat.params['apiKey']).toBe(MASK);
    expect(chat.config['apiKey']).toBe(MASK);
    expect(paramsOf(chat)['apiKey']).toBe(SECRET);
  });

  it('its own code reads them; another node reads them masked (schema-marked, secret-named, secret-looking, nested), as a frozen copy', async () => {
    Vault.ownReads = [];
    const seen: { config?: Record<string, unknown>; params?: Record<string, unknown>; frozen?: boolean; mutate?: string } = {};
    class Evil extends BackpackNode {
      override prep(): void {
        const vault = this.successors.get('default') as BackpackNode;
        seen.config = { ...vault.config };
        seen.params = { ...vault.params };
        seen.frozen = Object.isFrozen(vault.params['auth']) && Object.isFrozen(vault.config);
        try {
          (vault.params['auth'] as Record<string, string>)['bearerToken'] = 'changed';
          seen.mutate = 'changed';
        } catch {
          seen.mutate = 'refused';
        }
      }
    }
    const flow = new Flow();
    const evil = flow.addNode(Evil, { id: 'evil', maxRetries: 2 });
    const vault = flow.addNode(Vault, { id: 'vault', maxRetries: 3, permissions: { read: ['x'] }, ...vaultParams });
    evil.next(vault);
    await flow.run();
    expect(seen.params).toEqual(masked);
    expect(seen.config).toEqual({ id: 'vault', maxRetries: 3, permissions: { read: ['x'] }, ...masked });
    expect(seen.frozen).toBe(true);
    expect(seen.mutate).toBe('refused');
    expect(Vault.ownReads).toEqual(['4242-PIN', 'hunter2-PASSWORD', { bearerToken: 'BEARER-abc' }]);
    expect(vault.params).toEqual(masked);
    expect(paramsOf(vault)).toEqual(vaultParams);
  });

  it("nodes of a composite's internal flow and of a subflow are masked to other nodes as well", async () => {
    const found: unknown[] = [];
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Vault, { id: 'inner', ...vaultParams });
      }
    }
    class Evil extends BackpackNode {
      override prep(): void {
        const composite = this.successors.get('default') as BackpackNode;
        const sub = composite.successors.get('default') as Flow;
        for (const node of [...composite.internalFlow!.getAllNodes(), ...sub.getAllNodes()]) found.push((node as BackpackNode).params);
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const evil = flow.addNode(Evil, { id: 'evil' });
    const composite = flow.addNode(Composite, { id: 'composite' });
    const sub = flow.addSubflow({ namespace: 'sub' });
    sub.addNode(Vault, { id: 'inner', ...vaultParams });
    evil.next(composite).next(sub);
    flow.setEntryNode(evil);
    await flow.run();
    expect(found).toEqual([masked, masked]);
  });

  it('exportFlow called from node code masks secrets even with includeSensitive; the owner gets them from the top-level flow', async () => {
    const loader = new FlowLoader().register('Vault', Vault);
    let exported = '';
    class Evil extends BackpackNode {
      override prep(): void {
        const composite = this.successors.get('default') as BackpackNode;
        exported = JSON.stringify(loader.exportFlow(composite.internalFlow!, { includeSensitive: true }));
      }
    }
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Vault, { id: 'inner', ...vaultParams });
      }
    }
    loader.register('Evil', Evil).register('Composite', Composite);
    const flow = new Flow();
    const composite = flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Composite, { id: 'composite' }));
    await flow.run();
    for (const secret of ['4242-PIN', 'hunter2-PASSWORD', 'BEARER-abc', GITHUB_TOKEN]) expect(exported).not.toContain(secret);
    // includeSensitive is the owner's: from no node's execution, exporting a top-level flow (node code holds none).
    expect(loader.exportFlow(composite.internalFlow!, { includeSensitive: true }).nodes[0]!.params).toEqual(masked);
    expect(loader.exportFlow(flow, { includeSensitive: true }).nodes[1]!.internalFlow!.nodes[0]!.params).toEqual(vaultParams);
  });

  it('a secret a flow file takes from the environment (${ENV}) is masked to the other nodes of the loaded flow', async () => {
    let seen: unknown;
    class Evil extends BackpackNode {
      override prep(): void {
        seen = (this.successors.get('default') as BackpackNode).params;
      }
    }
    class Client extends BackpackNode {}
    const loader = new FlowLoader().register('Evil', Evil).register('Client', Client);
    const flow = await loader.loadFlow(
      {
        version: '2.0.0',
        namespace: 'app',
        nodes: [
          { type: 'Evil', id: 'evil', params: {} },
          { type: 'Client', id: 'client', params: { endpoint: 'https://api.example', accessToken: '${CLIENT_TOKEN}' } },
        ],
        edges: [{ from: 'evil', to: 'client', condition: 'default' }],
      },
      undefined,
      { env: { CLIENT_TOKEN: 'FROM-THE-ENV-123456' } },
    );
    await flow.run();
    expect(seen).toEqual({ endpoint: 'https://api.example', accessToken: MASK });
    expect(paramsOf(flow.getNode('client') as BackpackNode)['accessToken']).toBe('FROM-THE-ENV-123456');
  });

  it("a composite declared when another node's code first reaches it builds its internal flow with its own secrets", async () => {
    let seenByEvil: unknown;
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Vault, { id: 'inner', ...vaultParams, pin: String(this.params['pin']) });
      }
    }
    class Evil extends BackpackNode {
      override prep(): void {
        const composite = this.successors.get('default') as BackpackNode;
        seenByEvil = (composite.internalFlow!.getAllNodes()[0] as BackpackNode).params['pin'];
      }
    }
    const flow = new Flow();
    const composite = flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Composite, { id: 'composite', pin: 'COMPOSITE-PIN' }));
    await flow.run();
    expect(seenByEvil).toBe(MASK);
    expect(paramsOf(composite.internalFlow!.getAllNodes()[0] as BackpackNode)['pin']).toBe('COMPOSITE-PIN');
  });
});

const plainName = fc.constantFrom('model', 'temperature', 'label', 'promptFrom', 'keyName', 'sessionKey', 'cacheKey');
const secretName = fc.constantFrom('apiKey', 'token', 'password', 'clientSecret', 'privateKey', 'OPENAI_API_KEY', 'accessToken');
/** Values that no catalogue takes for a secret (lowercase words), and secrets that contain none of them. */
const plainValue = fc.stringMatching(/^[a-z ]{0,12}$/);
const secretValue = fc.stringMatching(/^[A-Z0-9]{6,16}$/).map((v) => `S3CR3T-${v}`);

describe('property: secret params never reach another node, and always reach the node itself', () => {
  it('for any mix of secret-named and plain params, nested or not', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(plainName, plainValue), { maxLength: 4, selector: ([n]) => n }),
        fc.uniqueArray(fc.tuple(secretName, secretValue), { minLength: 1, maxLength: 3, selector: ([n]) => n }),
        fc.boolean(),
        async (plain, secret, nested) => {
          const secretParams = Object.fromEntries(secret);
          const params: Record<string, unknown> = { ...Object.fromEntries(plain), ...(nested ? { settings: secretParams } : secretParams) };
          let own: unknown;
          let other: unknown;
          class Target extends BackpackNode {
            override prep(): void {
              own = { ...this.params };
            }
          }
          class Reader extends BackpackNode {
            override prep(): void {
              const target = this.successors.get('default') as BackpackNode;
              other = { config: target.config, params: target.params };
            }
          }
          const flow = new Flow();
          flow.addNode(Reader, { id: 'reader' }).next(flow.addNode(Target, { id: 'target', ...params }));
          await flow.run();
          expect(own).toEqual(params);
          const text = JSON.stringify(other);
          for (const [, value] of secret) expect(text).not.toContain(value);
          const view = (other as { params: Record<string, unknown> }).params;
          for (const [key, value] of plain) expect(view[key], key).toBe(value);
          for (const [key] of secret) expect((nested ? (view['settings'] as Record<string, unknown>) : view)[key], key).toBe(isSecretParamName(key) ? MASK : undefined);
        },
      ),
      { numRuns: trials(60, 600) },
    );
  });
});

describe('a node reads its own params the same as before', () => {
  it('in its constructor (the params schema check), prep, exec and post, and from a timer it left running', async () => {
    const reads: unknown[] = [];
    class Own extends BackpackNode {
      static override paramsSchema = z.object({ apiKey: z.string().meta({ secret: true }) });
      constructor(config: ConstructorParameters<typeof BackpackNode>[0], context: ConstructorParameters<typeof BackpackNode>[1]) {
        super(config, context);
        reads.push(this.params['apiKey']);
      }
      override prep(): void {
        reads.push(this.params['apiKey']);
      }
      override async exec(): Promise<void> {
        reads.push(this.config['apiKey']);
        await new Promise<void>((resolve) => setTimeout(() => (reads.push(this.params['apiKey']), resolve()), 1));
      }
      override post(bp: BackpackHandle): undefined {
        reads.push(this.params['apiKey']);
        bp.pack('done', true);
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Own, { id: 'own', apiKey: 'MY-KEY-1234' });
    await flow.run();
    expect(reads).toEqual(Array(5).fill('MY-KEY-1234'));
  });
});

describe('code that left a node\'s execution (review s26, finding 3)', () => {
  it("is not taken for the owner's: another node's secrets read masked, and the default provider registry takes nothing", async () => {
    // A listener on a process event runs where the event is emitted: in no node's execution (as a `beforeExit`
    // listener does, or a FinalizationRegistry callback).
    const seen: unknown[] = [];
    const openai = defaultProviders.get('openai');
    class Evil extends BackpackNode {
      override exec(): void {
        const chat = this.successors.get('next') as BackpackNode;
        process.once('bpf-escape' as never, () => {
          seen.push(chat.config['apiKey'], chat.params['apiKey']);
          try {
            registerProvider('openai', async () => () => ({}) as never);
          } catch (error) {
            seen.push((error as Error).message);
          }
        });
      }
      override post(): string {
        return 'next';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: [], write: [] } });
    evil.on('next', flow.addNode(ChatNode, { id: 'chat', model: 'openai-compatible:test-model', baseURL: 'http://127.0.0.1:9', apiKey: SECRET, promptFrom: 'question' }));
    flow.setEntryNode(evil);
    await flow.run({ question: 'hi' }).catch(() => undefined);
    process.emit('bpf-escape' as never);
    expect(seen).toEqual([MASK, MASK, expect.stringContaining("Provider 'openai' cannot be registered on the default registry once a flow has run")]);
    expect(defaultProviders.get('openai')).toBe(openai);
  });
});

describe("a schema's secret marks, as they were when its node's class was locked (review s27, finding 4)", () => {
  it("stay in force after node code removes a mark from zod's registry or edits the schema's shape", async () => {
    const DOOR = 'open-sesame-please';
    const WINDOW = 'window-key-please';
    class Vault extends BackpackNode {
      static override paramsSchema = z.object({ door: z.string().meta({ secret: true }), window: z.string().meta({ secret: true }) });
    }
    const seen: unknown[] = [];
    class Evil extends BackpackNode {
      override prep(): void {
        const vault = this.successors.get('next') as BackpackNode;
        const schema = (vault.constructor as typeof Vault).paramsSchema as z.ZodObject<{ door: z.ZodString; window: z.ZodString }>;
        z.globalRegistry.remove(schema.shape.door);
        (schema as unknown as { _zod: { def: { shape: Record<string, unknown> } } })._zod.def.shape['window'] = z.string();
        seen.push(vault.config['door'], vault.params['window']);
      }
      override post(): string {
        return 'next';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: [], write: [] } });
    evil.on('next', flow.addNode(Vault, { id: 'vault', door: DOOR, window: WINDOW }));
    flow.setEntryNode(evil);
    await flow.run({});
    const exported = JSON.stringify(new FlowLoader().exportFlow(flow));
    expect(seen).toEqual([MASK, MASK]);
    expect(exported).not.toContain(DOOR);
    expect(exported).not.toContain(WINDOW);
  });
});
