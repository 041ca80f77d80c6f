import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlowAction } from '../../src/flow/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { DecisionNode } from '../../src/nodes/llm/index.js';
import { startOpenAIServer, type OpenAIServer } from './fixtures/openai-server.js';
import { depsOf, scriptedModel } from './helpers.js';

/** A node that records that it ran, to see where the flow routed. */
class Marker extends BackpackNode {
  override post(backpack: Parameters<BackpackNode['post']>[0]): undefined {
    backpack.pack('routedTo', this.id);
    return undefined;
  }
}

function decisionFlow(answers: string[], params: Record<string, unknown> = {}) {
  const scripted = scriptedModel(answers);
  const flow = new Flow({ deps: depsOf({ model: scripted.model }) });
  const decide = flow.addNode(DecisionNode, {
    id: 'decide',
    promptFrom: 'ticket',
    actions: { refund: 'the customer wants money back', escalate: 'anything else' },
    ...params,
  });
  decide.on('refund', flow.addNode(Marker, { id: 'refunds' }));
  decide.on('escalate', flow.addNode(Marker, { id: 'humans' }));
  decide.on(FlowAction.ERROR, flow.addNode(Marker, { id: 'errors' }));
  return { flow, ...scripted };
}

describe('DecisionNode', () => {
  it('routes on the action the model chose and packs the decision', async () => {
    const { flow, prompts } = decisionFlow(['{"action":"refund","reason":"asks for money"}']);
    await flow.run({ ticket: 'I want my money back' });
    expect(flow.backpack.unpack('routedTo')).toBe('refunds');
    expect(flow.backpack.unpack('decision')).toEqual({ action: 'refund', reason: 'asks for money' });
    expect(prompts[0]).toContain('- refund: the customer wants money back');
    expect(prompts[0]).toContain('I want my money back');
  });

  it('asks again after an invalid choice; the invalid answer is quarantined and not in the next prompt', async () => {
    const { flow, prompts } = decisionFlow(['{"action":"delete-account-BOGUS"}', '{"action":"escalate"}']);
    await flow.run({ ticket: 'hmm' });
    expect(flow.backpack.unpack('routedTo')).toBe('humans');
    expect(prompts).toHaveLength(2);
    expect(prompts[1]).not.toContain('BOGUS');
    const quarantined = flow.backpack.getQuarantined().get('decide.failed.decision.1');
    expect(quarantined?.value).toMatchObject({ output: '{"action":"delete-account-BOGUS"}' });
    expect(flow.backpack.unpack('decide.failed.decision.1')).toBeUndefined();
  });

  it('routes to error after decisionAttempts invalid answers', async () => {
    const { flow, prompts } = decisionFlow(['not json at all'], { decisionAttempts: 2 });
    await flow.run({ ticket: 'hmm' });
    expect(prompts).toHaveLength(2);
    expect(flow.backpack.unpack('routedTo')).toBe('errors');
    expect(flow.backpack.unpack('decision')).toMatchObject({ action: 'error', error: expect.stringMatching(/no valid decision after 2 attempts \(actions: refund, escalate\)/) });
  });

  it('validates its actions at construction', () => {
    const flow = new Flow();
    expect(() => flow.addNode(DecisionNode, { id: 'd1', promptFrom: 'p', actions: [] })).toThrow(/params\.actions/);
    expect(() => flow.addNode(DecisionNode, { id: 'd2', promptFrom: 'p', actions: ['ok', 'error'] })).toThrow(/'error' is reserved/);
    expect(() => flow.addNode(DecisionNode, { id: 'd3', promptFrom: 'p', actions: ['has space'] })).toThrow(/params\.actions/);
  });

  describe('over HTTP', () => {
    let server: OpenAIServer;
    beforeAll(async () => (server = await startOpenAIServer()));
    afterAll(() => server.close());

    it('asks the provider for JSON and routes on the parsed choice', async () => {
      const flow = new Flow();
      const decide = flow.addNode(DecisionNode, { id: 'decide', promptFrom: 'ticket', actions: ['refund', 'escalate'], model: 'openai-compatible:m', baseURL: server.baseURL });
      decide.on('escalate', flow.addNode(Marker, { id: 'humans' }));
      server.enqueue({ kind: 'text', text: '{"action":"escalate","reason":"unclear"}' });
      await flow.run({ ticket: 'my order is weird' });
      expect(server.requests[0]!.body.response_format).toMatchObject({ type: expect.stringMatching(/^json/) });
      expect(flow.backpack.unpack('routedTo')).toBe('humans');
    });
  });
});
