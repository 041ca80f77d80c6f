import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import {
  createDefaultProviderRegistry,
  importOptionalPackage,
  ModelResolutionError,
  ProviderRegistry,
  resolveModel,
} from '../../src/nodes/llm/index.js';
import { depsOf } from './helpers.js';

describe('resolveModel', () => {
  it('prefers a model injected through the dependencies', async () => {
    const model = new MockLanguageModelV3();
    const resolved = await resolveModel('openai:gpt-4o', { deps: depsOf({ model }) });
    expect(resolved.model).toBe(model);
    expect(resolved.label).toBe('injected:model');
    const other = await resolveModel(undefined, { deps: depsOf({ fast: model }), modelRef: 'fast' });
    expect(other.model).toBe(model);
  });

  it('refuses an injected value that is not a language model', async () => {
    await expect(resolveModel(undefined, { deps: depsOf({ model: { name: 'x' } }), owner: "node 'a'" })).rejects.toThrow(/node 'a': dependency 'model' is not an AI SDK language model/);
  });

  it('resolves provider:modelId through the registry, splitting at the first colon', async () => {
    const resolved = await resolveModel('openai-compatible:llama3:8b', { baseURL: 'http://127.0.0.1:1/v1', env: {} });
    expect(resolved.model.modelId).toBe('llama3:8b');
    expect(resolved.label).toBe('openai-compatible:llama3:8b');
    const openai = await resolveModel('openai:gpt-4o', { env: { OPENAI_API_KEY: 'sk-env-123456' } });
    expect([openai.model.provider, openai.model.modelId, openai.secrets]).toEqual(['openai.responses', 'gpt-4o', ['sk-env-123456']]);
    const anthropic = await resolveModel('anthropic:claude-sonnet-4-5', { apiKey: 'sk-ant-123456', env: {} });
    expect(anthropic.model.provider).toBe('anthropic.messages');
  });

  it('gives clear errors for a bad spec, an unknown provider and a missing baseURL', async () => {
    await expect(resolveModel('gpt-4o')).rejects.toThrow(/not of the form "provider:modelId"/);
    await expect(resolveModel(undefined)).rejects.toThrow(/no model: set the 'model' param/);
    await expect(resolveModel('mystery:m1')).rejects.toThrow(/unknown provider 'mystery'.*known: anthropic, openai, openai-compatible/);
    await expect(resolveModel('openai-compatible:m')).rejects.toThrow(/needs a baseURL/);
  });

  it('resolves ${ENV} api keys from the environment and names a missing variable, never the value', async () => {
    let seen: string | undefined;
    const providers = new ProviderRegistry().register('fake', async ({ apiKey }) => {
      seen = apiKey;
      return () => new MockLanguageModelV3();
    });
    await resolveModel('fake:m', { providers, apiKey: '${MY_KEY}', env: { MY_KEY: 'sk-from-env-999' } });
    expect(seen).toBe('sk-from-env-999');
    await expect(resolveModel('fake:m', { providers, apiKey: '${NOPE_KEY}', env: {} })).rejects.toThrow(/environment variable NOPE_KEY, which is not set/);
  });

  it('takes providers registered for other names', async () => {
    const registry = createDefaultProviderRegistry();
    const model = new MockLanguageModelV3({ modelId: 'm-1' });
    registry.register('local', async () => () => model, { apiKeyEnv: 'LOCAL_KEY' });
    const resolved = await resolveModel('local:m-1', { providers: registry, env: { LOCAL_KEY: 'k-123456' } });
    expect(resolved.model).toBe(model);
    expect(resolved.secrets).toEqual(['k-123456']);
    expect(() => registry.register('bad name', async () => () => model)).toThrow(ModelResolutionError);
  });

  it('names the package to install when a provider package is missing', async () => {
    const missing = importOptionalPackage('@ai-sdk/not-installed', () => import('@ai-sdk/not-installed' as string));
    await expect(missing).rejects.toThrow("The provider package '@ai-sdk/not-installed' is not installed: run npm install @ai-sdk/not-installed");
  });
});
