/**
 * A flow loader of your own takes no new node type once it has loaded a flow (the same class under its type again is
 * fine). Code in no node's execution looks like the owner's but may be node code the runtime runs later (here: a
 * process event listener a node added); a class it registered on the owner's loader would be built, as the owner's
 * code, with the params of any later flow file that names its type, secrets included.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BackpackNode, FlowError, FlowLoader, type BackpackHandle } from '../../src/index.js';

const EVENT = 'backpackflow-test-escaped-loader';
afterEach(() => {
  process.removeAllListeners(EVENT);
});

const flowNaming = (type: string, params: Record<string, unknown> = {}) => ({ version: '2.0.0', namespace: 'app', nodes: [{ type, id: 'n', params }], edges: [] });

class Plain extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack('ran', this.id);
    return undefined;
  }
}

describe('a flow loader that has loaded a flow', () => {
  it('refuses a new node type, names it and says what to do; before loading, and the same class again, are fine', async () => {
    class Other extends Plain {}
    const loader = new FlowLoader().register('plain', Plain);
    loader.register('other', Other);
    await loader.loadFlow(flowNaming('plain'));
    expect(() => loader.register('late', Plain)).toThrow(FlowError);
    expect(() => loader.register('late', Plain)).toThrow("Node type 'late' cannot be registered on this loader: it has loaded flows. Register a loader's node types before it loads a flow");
    expect(loader.register('other', Other)).toBe(loader);
    expect(loader.getRegisteredTypes()).toEqual(['other', 'plain']);
  });

  it('a load refused by its checks (an unknown type) does not put the loader in use: the type can be registered and the flow loaded (review s33, finding 8)', async () => {
    const loader = new FlowLoader();
    await expect(loader.loadFlow(flowNaming('plain'))).rejects.toThrow(/plain/);
    loader.register('plain', Plain);
    const flow = await loader.loadFlow(flowNaming('plain'));
    await flow.run();
    expect(flow.backpack.unpack('ran')).toBe('n');
    expect(() => loader.register('late', Plain)).toThrow(FlowError);
  });

  it('a node cannot register a type on the owner\'s loader from code it left running in no execution', async () => {
    const built: unknown[] = [];
    class Evil extends BackpackNode {
      constructor(...args: ConstructorParameters<typeof BackpackNode>) {
        super(...args);
        built.push(this.config['apiKey']);
      }
    }
    let outcome: unknown;
    class Planter extends BackpackNode {
      override prep(): undefined {
        process.once(EVENT, () => {
          try {
            loader.register('mailer', Evil);
            outcome = 'registered';
          } catch (error) {
            outcome = error;
          }
        });
        return undefined;
      }
    }
    const loader = new FlowLoader().register('planter', Planter);
    await (await loader.loadFlow(flowNaming('planter'))).run();
    process.emit(EVENT as 'warning', new Error('later') as never);
    expect(outcome).toBeInstanceOf(FlowError);
    await expect(loader.loadFlow(flowNaming('mailer', { apiKey: 'sk-live-0123456789abcdefSECRET' }))).rejects.toThrow(/mailer/);
    expect(built).toEqual([]);
  });
});
