import type { LanguageModel } from 'ai';
import type { DependencyLookup } from '../backpack-node.js';
import { ModelResolutionError } from './errors.js';
import { anyRunStarted, currentExecution, foreignExecution, type NodeExecution } from '../execution.js';

/** What a provider factory gets: the node's connection settings (API key already resolved). */
export interface ProviderSettings {
  /** API key from the node's `apiKey` param or the provider's environment variable. */
  apiKey?: string;
  /** Base URL of the API (required by `openai-compatible`). */
  baseURL?: string;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
  /** The environment the key was looked up in. */
  env: Readonly<Record<string, string | undefined>>;
}

/** Turns settings into a function from model id to an AI SDK language model. May import the provider package lazily. */
export type ProviderFactory = (settings: ProviderSettings) => Promise<(modelId: string) => LanguageModel>;

/** A provider known to a registry: its factory and the environment variable its API key is read from. */
export interface ProviderEntry {
  factory: ProviderFactory;
  /** Environment variable holding the API key when the node has no `apiKey` param. */
  apiKeyEnv?: string;
}

/**
 * The package's shared registries (`defaultProviders`): registrations only until the first run (see register). A set,
 * not a comparison with `defaultProviders`: this module may load after a run started (the CLI loads the LLM nodes
 * when a command builds a flow), while `defaultProviders` is being made.
 */
const sharedRegistries = new WeakSet<object>();

/**
 * Registries that nodes use (see {@link markRegistryInUse}): they take no new or replaced provider (see register).
 */
const registriesInUse = new WeakSet<object>();

/**
 * Records that a node uses `registry` (an LLM node made with it, or a model resolved through it). From then on it
 * takes no new or replaced provider: code that runs in no node's execution may be node code the runtime runs later
 * (a process event listener, a FinalizationRegistry callback), and the owner's registries are reachable from node
 * code (`static providers`); a factory it put there would get the API keys of the nodes that use the registry.
 */
export function markRegistryInUse(registry: ProviderRegistry): void {
  if (registry instanceof ProviderRegistry) registriesInUse.add(registry);
}

/** Provider name to factory. `openai`, `anthropic` and `openai-compatible` are built in; register others. */
export class ProviderRegistry {
  readonly #entries = new Map<string, ProviderEntry>();
  /**
   * The node execution this registry was made in (undefined: the owner's code, as `defaultProviders` is made): a
   * provider's factory is handed every API key of the nodes that use it, so only code of that context registers one.
   */
  readonly #madeIn: NodeExecution | undefined = currentExecution.getStore();

  /**
   * A registry is frozen when made (its state is private): nodes reach one through their class (`static providers`),
   * and a method of its own put on it would get the API key of every node that resolves a model through it (a
   * subclass's instances are the subclass's to freeze).
   */
  constructor() {
    if (new.target === ProviderRegistry) Object.freeze(this);
  }

  /**
   * Registers (or replaces) provider `name`. From a node's code, only on a registry made in its execution; on the
   * default registry, only until the first flow run starts in the process; on another registry, only until a node
   * uses it (an LLM node whose class names it in `static providers` is added to a flow, or resolves a model through
   * it). Registering the same entry again is always fine. Otherwise a ModelResolutionError: a node must not put a
   * factory of its own where other nodes look.
   */
  register(name: string, factory: ProviderFactory, options: { apiKeyEnv?: string } = {}): this {
    const running = foreignExecution(this.#madeIn);
    if (running !== undefined) {
      throw new ModelResolutionError(`Node '${running.node.id}' cannot register provider '${name}' on a registry it did not make: a provider's factory gets the API keys of the nodes that use it`);
    }
    const same = this.#entries.get(name);
    // The same registration again changes nothing (a module whose `register` runs for every job of a worker).
    if (same !== undefined && same.factory === factory && same.apiKeyEnv === options.apiKeyEnv) return this;
    if (anyRunStarted() && sharedRegistries.has(this)) {
      throw new ModelResolutionError(
        `Provider '${name}' cannot be registered on the default registry once a flow has run in this process: register providers before the first run, or give your nodes a registry of their own (static providers)`,
      );
    }
    if (registriesInUse.has(this) && !sharedRegistries.has(this)) {
      throw new ModelResolutionError(
        `Provider '${name}' cannot be registered on this registry: nodes already use it. Register a registry's providers before adding the nodes that use it to a flow`,
      );
    }
    if (!/^[a-z0-9][a-z0-9._-]*$/i.test(name)) {
      throw new ModelResolutionError(`Provider name '${name}' is invalid: use letters, digits, '.', '_' and '-'`);
    }
    this.#entries.set(name, { factory, apiKeyEnv: options.apiKeyEnv });
    return this;
  }

  /** The entry of provider `name`, if registered. */
  get(name: string): ProviderEntry | undefined {
    return this.#entries.get(name);
  }

  /** Names of the registered providers, sorted. */
  names(): string[] {
    return [...this.#entries.keys()].sort();
  }
}

/** Imports an optional provider package, with an error naming the package to install when it is missing. */
export async function importOptionalPackage<M>(pkg: string, load: () => Promise<M>): Promise<M> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new ModelResolutionError(`The provider package '${pkg}' is not installed: run npm install ${pkg}`);
    }
    throw error;
  }
}

/** A registry with the built-in providers: `openai`, `anthropic`, `openai-compatible`. */
export function createDefaultProviderRegistry(): ProviderRegistry {
  return new ProviderRegistry()
    .register(
      'openai',
      async ({ apiKey, baseURL, headers }) => {
        const { createOpenAI } = await importOptionalPackage('@ai-sdk/openai', () => import('@ai-sdk/openai'));
        const provider = createOpenAI({ apiKey, baseURL, headers });
        return (modelId) => provider(modelId);
      },
      { apiKeyEnv: 'OPENAI_API_KEY' },
    )
    .register(
      'anthropic',
      async ({ apiKey, baseURL, headers }) => {
        const { createAnthropic } = await importOptionalPackage('@ai-sdk/anthropic', () => import('@ai-sdk/anthropic'));
        const provider = createAnthropic({ apiKey, baseURL, headers });
        return (modelId) => provider(modelId);
      },
      { apiKeyEnv: 'ANTHROPIC_API_KEY' },
    )
    .register(
      'openai-compatible',
      async ({ apiKey, baseURL, headers }) => {
        if (!baseURL) throw new ModelResolutionError("Provider 'openai-compatible' needs a baseURL param (e.g. http://localhost:11434/v1)");
        const { createOpenAICompatible } = await importOptionalPackage('@ai-sdk/openai-compatible', () => import('@ai-sdk/openai-compatible'));
        const provider = createOpenAICompatible({ name: 'openai-compatible', baseURL, apiKey, headers, includeUsage: true });
        return (modelId) => provider.chatModel(modelId);
      },
      { apiKeyEnv: 'OPENAI_COMPATIBLE_API_KEY' },
    );
}

/** The registry nodes use unless given another. */
export const defaultProviders: ProviderRegistry = createDefaultProviderRegistry();
sharedRegistries.add(defaultProviders);

/**
 * Registers provider `name` on the default registry (e.g. a Google or Mistral provider package), before the first flow
 * runs in the process: then the default registry takes no more (a ModelResolutionError).
 */
export function registerProvider(name: string, factory: ProviderFactory, options: { apiKeyEnv?: string } = {}): void {
  defaultProviders.register(name, factory, options);
}

/** Options of {@link resolveModel}. */
export interface ResolveModelOptions {
  /** Injected dependencies; the model object under `modelRef` wins over the spec. */
  deps?: DependencyLookup;
  /** The dependency key of an injected model. Default `'model'`. */
  modelRef?: string;
  /** API key (a loader has already resolved `${ENV}`); else the provider's env var is read. */
  apiKey?: string;
  baseURL?: string;
  headers?: Record<string, string>;
  /** Environment for API keys. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  providers?: ProviderRegistry;
  /** Who asks, for error messages (e.g. "node 'chat'"). */
  owner?: string;
}

/** A resolved model and what to keep out of messages. */
export interface ResolvedModel {
  model: Exclude<LanguageModel, string>;
  /** `provider:modelId`, or `injected:<ref>` for an injected model; safe to show. */
  label: string;
  /** The API key used, to be redacted from any error message. */
  secrets: string[];
}

/** True when `value` looks like an AI SDK language model object. */
export function isLanguageModel(value: unknown): value is Exclude<LanguageModel, string> {
  const v = value as { doGenerate?: unknown; doStream?: unknown } | null;
  return typeof v === 'object' && v !== null && typeof v.doGenerate === 'function' && typeof v.doStream === 'function';
}

/**
 * Resolves a model: an AI SDK model object injected under `modelRef` in `deps` wins; else `spec`, `"provider:modelId"`
 * (split at the first colon), goes through the provider registry with the API key from `apiKey` or the provider's env
 * var. Errors say what was wrong and never contain the key.
 */
export async function resolveModel(spec: string | undefined, options: ResolveModelOptions = {}): Promise<ResolvedModel> {
  const owner = options.owner ? `${options.owner}: ` : '';
  const ref = options.modelRef ?? 'model';
  if (options.deps?.has(ref)) {
    const injected = options.deps.get(ref);
    if (!isLanguageModel(injected)) {
      throw new ModelResolutionError(`${owner}dependency '${ref}' is not an AI SDK language model (it has no doGenerate/doStream)`);
    }
    return { model: injected, label: `injected:${ref}`, secrets: [] };
  }
  if (spec === undefined || spec === '') {
    throw new ModelResolutionError(`${owner}no model: set the 'model' param ("provider:modelId") or inject a model as dependency '${ref}'`);
  }
  const colon = spec.indexOf(':');
  if (colon <= 0 || colon === spec.length - 1) {
    throw new ModelResolutionError(`${owner}model '${spec}' is not of the form "provider:modelId" (e.g. "openai:gpt-4o")`);
  }
  const providerName = spec.slice(0, colon);
  const modelId = spec.slice(colon + 1);
  const registry = options.providers ?? defaultProviders;
  const entry = registry.get(providerName);
  if (!entry) {
    throw new ModelResolutionError(`${owner}unknown provider '${providerName}' in model '${spec}'; known: ${registry.names().join(', ')} (registerProvider adds others)`);
  }
  const env = options.env ?? process.env;
  let apiKey = options.apiKey ?? (entry.apiKeyEnv ? env[entry.apiKeyEnv] : undefined);
  const reference = apiKey === undefined ? undefined : /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(apiKey);
  if (reference) {
    apiKey = env[reference[1]!];
    if (apiKey === undefined || apiKey === '') {
      throw new ModelResolutionError(`${owner}apiKey refers to environment variable ${reference[1]}, which is not set`);
    }
  }
  const factory = await entry.factory({ apiKey, baseURL: options.baseURL, headers: options.headers, env });
  const model = factory(modelId);
  if (!isLanguageModel(model)) throw new ModelResolutionError(`${owner}provider '${providerName}' did not return a language model for '${modelId}'`);
  return { model, label: spec, secrets: apiKey ? [apiKey] : [] };
}
