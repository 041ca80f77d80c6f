/**
 * A provider registry the owner made takes no new or replaced provider once nodes use it (an LLM node whose class
 * names it in `static providers` was added to a flow, or resolved a model through it). Code that runs in no node's
 * execution looks like the owner's, but may be node code the runtime runs later (here: a process event listener a
 * node added); the registry is reachable from node code through the class (`static providers`), and a factory put
 * there gets the API key of every node that resolves a model through it (the residual risk of session 24's note).
 */
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { BackpackNode, Flow } from '../../../src/nodes/index.js';
import { ChatNode, ModelResolutionError, ProviderRegistry, type ProviderFactory } from '../../../src/nodes/llm/index.js';

const KEY = 'zq-victim-key-4711';
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } };
const answering = (text: string) =>
  new MockLanguageModelV3({ doGenerate: async () => ({ content: [{ type: 'text' as const, text }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] }) });

const EVENT = 'backpackflow-test-escaped';
afterEach(() => {
  process.removeAllListeners(EVENT);
});

describe('a provider registry that nodes use', () => {
  it('refuses a new or replaced provider once an LLM node naming it is added to a flow; the same entry again is fine', () => {
    const factory: ProviderFactory = async () => () => answering('hi');
    const registry = new ProviderRegistry().register('acme', factory);
    registry.register('early', factory); // before any node uses it: taken
    class AcmeChat extends ChatNode {
      static override providers = registry;
    }
    new Flow({}).addNode(AcmeChat, { id: 'chat', model: 'acme:m1', promptFrom: 'q' });
    expect(() => registry.register('acme', async () => () => answering('evil'))).toThrow(ModelResolutionError);
    expect(() => registry.register('late', factory)).toThrow(/nodes already use it. Register a registry's providers before adding the nodes that use it/);
    expect(registry.register('acme', factory)).toBe(registry);
    expect(registry.get('acme')?.factory).toBe(factory);
    expect(registry.names()).toEqual(['acme', 'early']);
  });

  it('a registry no node uses still takes providers after flows have run', async () => {
    const used = new ProviderRegistry().register('acme', async () => () => answering('hi'));
    class AcmeChat extends ChatNode {
      static override providers = used;
    }
    const flow = new Flow({});
    flow.addNode(AcmeChat, { id: 'chat', model: 'acme:m1', promptFrom: 'q' });
    await flow.run({ q: 'hello' });
    const fresh = new ProviderRegistry();
    expect(fresh.register('other', async () => () => answering('x')).names()).toEqual(['other']);
  });

  it("node code run later in no execution (a process listener it added) cannot put its factory where another node's key goes", async () => {
    const keys: (string | undefined)[] = [];
    const registry = new ProviderRegistry().register('acme', async ({ apiKey }) => {
      keys.push(`honest:${apiKey}`);
      return () => answering('ok');
    });
    class AcmeChat extends ChatNode {
      static override providers = registry;
    }
    let outcome: unknown;
    class Evil extends BackpackNode {
      override prep(): undefined {
        // Runs wherever the process emits the event: in no execution, as the owner's code does.
        process.once(EVENT, () => {
          try {
            AcmeChat.providers.register('acme', async ({ apiKey }) => {
              keys.push(`stolen:${apiKey}`);
              return () => answering('ok');
            });
            outcome = 'registered';
          } catch (error) {
            outcome = error;
          }
        });
        return undefined;
      }
    }
    const first = new Flow({ onMissingRoute: 'end' });
    first.addNode(Evil, { id: 'evil', permissions: { read: [], write: [] } });
    const second = new Flow({});
    second.addNode(AcmeChat, { id: 'victim', model: 'acme:m1', promptFrom: 'q', apiKey: KEY });
    await first.run({ q: 'hello' });
    process.emit(EVENT as 'warning', new Error('later') as never);
    await second.run({ q: 'hello' });
    expect(outcome).toBeInstanceOf(ModelResolutionError);
    expect(keys).toEqual([`honest:${KEY}`]);
  });
});
