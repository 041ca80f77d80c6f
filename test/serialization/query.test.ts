import { describe, expect, it } from 'vitest';
import { findNode, flattenEdges, flattenNodes, getCompositeNodes, getMaxDepth } from '../../src/index.js';
import { prdExample } from './fixtures.js';

describe('query utilities on the PRD-004 §4.1 example', () => {
  it('flattens 4 nodes and 2 edges, finds agent.search, and has depth 1', () => {
    expect(flattenNodes(prdExample).map((n) => n.id)).toEqual(['agent', 'search', 'analysis', 'summary']);
    expect(flattenEdges(prdExample)).toHaveLength(2);
    expect(findNode(prdExample, 'agent.search')?.id).toBe('search');
    expect(findNode(prdExample, 'agent.nothing')).toBeUndefined();
    expect(findNode(prdExample, 'search')).toBeUndefined();
    expect(getCompositeNodes(prdExample).map((n) => n.id)).toEqual(['agent']);
    expect(getMaxDepth(prdExample)).toBe(1);
  });

  it('depth counts every level of nesting', () => {
    type Level = { version: string; nodes: { type: string; id: string; internalFlow?: Level }[] };
    const level = (inner?: Level): Level => ({ version: '2.0.0', nodes: [{ type: 'T', id: 'n', ...(inner ? { internalFlow: inner } : {}) }] });
    expect(getMaxDepth(level())).toBe(0);
    expect(getMaxDepth(level(level(level())))).toBe(2);
  });
});

describe('secret param names', () => {
  it('compound ...Key names, tokens, secrets, passwords and credentials are secret; a bare key or maxTokens is not', async () => {
    const { isSecretParamName } = await import('../../src/index.js');
    for (const name of ['apiKey', 'OPENAI_API_KEY', 'privateKey', 'token', 'authToken', 'clientSecret', 'password', 'credentials']) {
      expect(isSecretParamName(name), name).toBe(true);
    }
    for (const name of ['key', 'keywords', 'maxTokens', 'model', 'keyName']) expect(isSecretParamName(name), name).toBe(false);
  });
});

describe('the default loader', () => {
  it('knows the built-in LLM node types', async () => {
    const { defaultFlowLoader, ChatNode } = await import('../../src/index.js');
    for (const type of ['ChatNode', 'BaseChatCompletionNode', 'DecisionNode', 'AgentNode', 'ToolParamGenerationNode', 'ToolExecutionNode', 'FinalAnswerNode']) {
      expect(defaultFlowLoader.isRegistered(type), type).toBe(true);
    }
    const config = { version: '2.0.0', nodes: [{ type: 'BaseChatCompletionNode', id: 'chat', params: { model: 'openai:gpt-4o', promptFrom: 'question' } }] };
    expect(defaultFlowLoader.validateConfig(config).errors).toEqual([]);
    expect(ChatNode.name).toBe('ChatNode');
  });
});
