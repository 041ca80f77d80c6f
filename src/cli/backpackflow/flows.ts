/** Loading flows for `run`, `validate`, `runs resume` and `runs fork`: the JSON file, the node modules, the loader. */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BackpackNode, type Flow } from '../../nodes/index.js';
import {
  DEFAULT_MAX_FLOW_BYTES,
  FlowConfigError,
  FlowLoader,
  nestingProblem,
  readFlowConfigFile,
  stripBom,
  type ConfigProblem,
  type ConfigValidationReport,
  type LoadableNodeClass,
} from '../../serialization/index.js';
import { DocumentGoneError, REDACTED, redactConfig, redactorFor, type RunRef, type RunStore } from '../../store/index.js';
import { MASK } from '../../serialization/secrets.js';
import { isForeignBackpackNode } from '../../serialization/loader.js';
import { CliError } from './errors.js';
import { storeErrors } from './store-errors.js';
import type { FlowSourceOptions } from './flow-options.js';
import { openFlowModule, parseFlowModule, readRecipe, recordRecipe, type DocumentSink, type OpenFlow, type RecordedDocuments, type RunRecipe } from './recipe.js';
import { openNewRun, type NewRun } from '../../runtime/index.js';
import { secretNameTest } from '../../runtime/flow-names.js';
import { terminalText } from '../../events/terminal-text.js';
import { typescriptHint } from './output.js';

/**
 * Reads and parses a flow file of at most `maxBytes` (checked before reading), in chunks: the whole text is not held
 * beside the parsed config. Malformed JSON is a CliError naming the file, line and column; a file over the limit is a
 * CliError naming its size, the limit and `--max-flow-bytes`; nesting too deep is a FlowConfigError naming the JSON
 * path and the limit (a problem of the config, as `validate` reports it).
 */
export function readFlowFile(path: string, maxBytes = DEFAULT_MAX_FLOW_BYTES): unknown {
  try {
    const size = statSync(path).size;
    if (size > maxBytes) throw new CliError(`flow file ${path} is ${size} bytes, over the limit of ${maxBytes} bytes; pass --max-flow-bytes <n> to accept it`);
    return readFlowConfigFile(path, { maxBytes });
  } catch (error) {
    if (error instanceof CliError) throw error;
    if (error instanceof FlowConfigError) {
      if (!error.message.startsWith('Malformed')) throw error;
      // readFlowConfigFile names the line and column: "<path> is not valid JSON at line L, column C: <reason>".
      const detail = error.errors.map((e) => e.message.replace(`${path} is not valid JSON`, '')).join('; ').replace(/\s+/g, ' ');
      throw new CliError(`malformed flow JSON in ${path}${detail}`);
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== undefined) throw new CliError(`cannot read flow file ${path}: ${code}`);
    throw error;
  }
}

function isNodeClass(value: unknown): value is LoadableNodeClass {
  return typeof value === 'function' && value.prototype instanceof BackpackNode;
}

/**
 * Imports each module and registers its exported BackpackNode subclasses on `loader` under their class names (a
 * class already registered under another name by the module's own `register(loader)` keeps that name too).
 */
export async function loadModules(loader: FlowLoader, files: readonly string[]): Promise<string[]> {
  const registered: string[] = [];
  for (const file of files) {
    const path = resolve(file);
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (error) {
      // Node imports TypeScript only through a loader: say how, rather than leave "Unknown file extension" alone.
      throw new CliError(`cannot import module ${file}: ${(error as Error).message}${typescriptHint(file, error)}`);
    }
    if (typeof mod['register'] === 'function') await registerModule(path, mod['register'] as (loader: FlowLoader) => unknown, loader);
    for (const [name, value] of Object.entries(mod)) {
      if (isForeignBackpackNode(value)) {
        throw new CliError(
          `module ${file} exports ${name}, a BackpackNode of another copy of backpackflow (the module imports backpackflow from elsewhere, such as the sources beside a built CLI): import BackpackNode from the backpackflow that runs the flow`,
        );
      }
      if (!isNodeClass(value)) continue;
      const type = name === 'default' ? value.name : name;
      if (!loader.isRegistered(type)) loader.register(type, value);
      registered.push(type);
    }
    if (typeof mod['register'] !== 'function' && !Object.values(mod).some(isNodeClass)) {
      throw new CliError(`module ${file} exports no BackpackNode class and no register(loader) function`);
    }
  }
  return registered;
}

/** What each module's `register(loader)` registered, by the module's path: see {@link registerModule}. */
const moduleTypes = new Map<string, Promise<readonly (readonly [string, LoadableNodeClass])[]>>();

/**
 * Runs a module's `register(loader)` once in a process, and replays on every later loader the node types it
 * registered: a worker builds many jobs (with fresh loaders, for its modules in whatever lists its runs recorded),
 * and a `register` may also register a provider, which the default registry takes only until the first run.
 */
async function registerModule(path: string, register: (loader: FlowLoader) => unknown, loader: FlowLoader): Promise<void> {
  let types = moduleTypes.get(path);
  if (types === undefined) {
    const recorded: [string, LoadableNodeClass][] = [];
    // The module sees a loader of its own whose registrations are recorded (the other methods are the loader's).
    const own = new FlowLoader();
    const recording = new Proxy(own, {
      get(target, key) {
        if (key === 'register') {
          return (type: string, NodeClass: LoadableNodeClass) => {
            target.register(type, NodeClass);
            recorded.push([type, NodeClass]);
            return recording;
          };
        }
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    types = Promise.resolve(register(recording as FlowLoader)).then(() => recorded);
    moduleTypes.set(path, types);
    types.catch(() => moduleTypes.delete(path));
  }
  for (const [type, NodeClass] of await types) if (!loader.isRegistered(type)) loader.register(type, NodeClass);
}

/** A loader with the built-in LLM node types and the node classes of `modules` registered. */
export async function loaderWith(modules: readonly string[] = []): Promise<FlowLoader> {
  const loader = new FlowLoader();
  // The LLM nodes (and the AI SDK) load only for the commands that build flows.
  const { llmNodeTypes } = await import('../../nodes/llm/index.js');
  for (const [type, NodeClass] of Object.entries(llmNodeTypes)) loader.register(type, NodeClass);
  await loadModules(loader, modules);
  return loader;
}

/**
 * Every problem of a flow config, each with its JSON path (`validate`), as `run` would find them before its first
 * step: its dependencies against what `run` gives a flow file (none: loadFlowFile passes loadFlow no dependencies),
 * its names against the redaction `run` writes with (the built-in catalogue; see checkFlowNames).
 */
export function validateFlow(loader: FlowLoader, config: unknown): ConfigValidationReport {
  return loader.validateConfig(config, { dependencies: {}, secretName: secretNameTest() });
}

function describeProblems(path: string, problems: ConfigProblem[]): string {
  return `invalid flow ${path} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  ${terminalText(p.path || '/')}: ${terminalText(p.message)}`).join('\n')}`;
}

/**
 * Reads, validates and loads a flow file (parsed once, validated once); every problem is reported with its JSON
 * path. `beforeBuild` (see LoadOptions) gets the parsed config once it is valid, before the flow is built; nothing
 * here keeps the parsed config, so a large one is let go node by node as the flow is built.
 */
export async function loadFlowFile(path: string, modules: readonly string[], maxBytes?: number, beforeBuild?: (config: unknown) => Promise<void>): Promise<Flow> {
  const loader = await loaderWith(modules);
  try {
    // The parsed config is ours alone: the nodes keep its values rather than copies.
    // What is recorded of the file has the params its node classes mark secret masked (the redaction pass knows
    // secret names and formats, not the classes).
    const record = beforeBuild === undefined ? undefined : (config: unknown) => beforeBuild(loader.maskConfigSecrets(config));
    return await loader.loadFlow(readFlowFile(path, maxBytes), undefined, { shareConfig: true, beforeBuild: record });
  } catch (error) {
    if (error instanceof FlowConfigError) throw new CliError(describeProblems(path, error.errors));
    throw error;
  }
}

/**
 * Parses a JSON argument: inline JSON, `@file` holding JSON (a byte order mark is ignored), or `@-`: JSON read from
 * standard input (what the studio gives a child, so that an answer is never on a command line nor in a file);
 * nested at most MAX_JSON_NESTING levels deep. Errors name the option (or the file).
 */
export function parseJsonArgument(text: string, option = '--input'): unknown {
  let source = option;
  let json = text;
  if (text === '@-') {
    source = `${option} from standard input`;
    try {
      json = stripBom(readFileSync(0, 'utf8'));
    } catch (error) {
      throw new CliError(`cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  } else if (text.startsWith('@')) {
    source = `${option} file ${text.slice(1)}`;
    try {
      json = stripBom(readFileSync(text.slice(1), 'utf8'));
    } catch (error) {
      throw new CliError(`cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new CliError(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  const deep = nestingProblem(value);
  if (deep) throw new CliError(`${source}: ${deep.path}: ${deep.message}`);
  return value;
}

/** Parses `run --input`: a JSON argument ({@link parseJsonArgument}) that must be an object (its keys are packed). */
export function parseInput(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  const value = parseJsonArgument(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new CliError(`--input must be a JSON object (its keys are packed into the backpack)`);
  return value as Record<string, unknown>;
}

/**
 * Takes new run `ref`'s writer before its flow is built (see NewRun), so that what the command records with it is
 * its own: a CliError when the id already has a recorded run (its records are then left alone) or another start of
 * it holds it.
 */
export function openCliRun(store: RunStore, ref: RunRef): Promise<NewRun> {
  return storeErrors(() => openNewRun({ store, sessionKey: ref.sessionKey, runId: ref.runId }));
}

/**
 * The flow config to resume or fork run `ref` with: the `--flow` file when given, else the one recorded with the run
 * (a CliError naming the run when there is none).
 */
export async function recordedFlowConfig(given: string | undefined, store: RecordedDocuments, ref: RunRef, maxBytes?: number): Promise<unknown> {
  if (given !== undefined) return readFlowFile(given, maxBytes);
  let config: unknown;
  try {
    config = await store.loadDocument(ref, 'flow');
  } catch (error) {
    // One the run recorded and that is gone (DocumentGoneError) names itself: never "has no recorded flow".
    throw new CliError(`${(error as Error).message}${error instanceof DocumentGoneError ? '; pass --flow <flow.json> to resume it with a flow config' : ''}`, { cause: error });
  }
  if (config === undefined) throw new CliError(`run ${ref.sessionKey}/${ref.runId} has no recorded flow in ${store.location}: pass --flow <flow.json>`);
  const masked = maskedPointers(config);
  if (masked.length > 0) {
    throw new CliError(
      `the flow recorded with run ${ref.sessionKey}/${ref.runId} has secrets masked where they were given as they are (${listed(masked)}): built from it, ` +
        `its nodes would get the mask instead of the secret. Pass the flow with --flow <flow.json>, or write secrets as \${ENV_NAME} references, which are recorded as written and resolved again`,
    );
  }
  return config;
}

/** The masks recording puts where a secret was (see recordRunFlow): the redaction marker, and exportFlow's. */
const MASKS = [REDACTED, MASK];

/**
 * A URL and nothing else (`scheme://` and no blank): recording masks its credentials in place
 * (`https://gw.example.com/k/***`, see maskUrlCredentials). Text that starts with a link is not one.
 */
const WHOLE_URL = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S*$/;

/**
 * The JSON pointers of the strings of a recorded flow config that hold a mask (a secret given as it is, masked when
 * it was recorded: the whole string, or the credentials of a URL), in document order.
 */
export function maskedPointers(config: unknown, at = '', out: string[] = []): string[] {
  if (typeof config === 'string') {
    if (config === MASK || config.includes(REDACTED) || (config.includes(MASK) && WHOLE_URL.test(config))) out.push(at || '/');
  } else if (Array.isArray(config)) {
    config.forEach((item, i) => maskedPointers(item, `${at}/${i}`, out));
  } else if (config !== null && typeof config === 'object') {
    for (const [key, value] of Object.entries(config)) {
      if (MASKS.some((mask) => key.includes(mask))) out.push(`${at}/${pointerToken(key)}`);
      maskedPointers(value, `${at}/${pointerToken(key)}`, out);
    }
  }
  return out;
}

/** A key as a JSON pointer token (RFC 6901). */
function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** The first few pointers of `pointers`, and how many more. */
function listed(pointers: string[]): string {
  const shown = pointers.slice(0, 3).join(', ');
  return pointers.length > 3 ? `${shown} and ${pointers.length - 3} more` : shown;
}

/**
 * What to tell the user who records a flow whose secrets were given as they are (`masked`: see maskedPointers of the
 * recorded config), with what follows from it (`consequence`); undefined when there are none.
 */
export function maskedMessage(runId: string, masked: string[], consequence: string): string | undefined {
  if (masked.length === 0) return undefined;
  return `the flow recorded with run ${runId} masks secrets given as they are (${listed(masked)}): ${consequence}; write secrets as \${ENV_NAME} references, which are recorded as written and resolved again`;
}

/**
 * Builds the flow of recorded run `ref` for `runs resume`, `runs fork` and workers: `--flow-module` or `--flow` when
 * given, else as recorded with the run (its recipe: flow module or config, and node modules; a run recorded before
 * recipes existed: its flow config with `--modules`). Returns the flow, its release, and the recipe it was built by.
 */
export async function openRecordedFlow(options: FlowSourceOptions, store: RecordedDocuments, ref: RunRef): Promise<OpenFlow & { recipe: RunRecipe }> {
  if (options.flowModule !== undefined) {
    const spec = parseFlowModule(options.flowModule);
    await loaderWith(options.modules);
    return { ...(await openFlowModule(spec)), recipe: { v: 1, flow: { kind: 'module', module: spec.module, export: spec.export }, modules: options.modules } };
  }
  const recipe = options.flow === undefined ? await readRecipe(store, ref) : undefined;
  const modules = options.modules.length > 0 || recipe === undefined ? options.modules : recipe.modules;
  if (recipe?.flow.kind === 'module') {
    await loaderWith(modules);
    return { ...(await openFlowModule(recipe.flow)), recipe: { ...recipe, modules } };
  }
  const config = await recordedFlowConfig(options.flow, store, ref, options.maxFlowBytes);
  const where = options.flow ?? `the recorded flow of run ${ref.sessionKey}/${ref.runId}`;
  const loader = await loaderWith(modules);
  try {
    return { flow: await loader.loadFlow(config), close: async () => undefined, recipe: { v: 1, flow: { kind: 'config' }, modules } };
  } catch (error) {
    if (error instanceof FlowConfigError) throw new CliError(describeProblems(where, error.errors));
    throw error;
  }
}

/**
 * Records how a new run's flow is built, before it starts, through `run` (a NewRun, whose writer this start holds):
 * its recipe and, for a flow config, the config itself (secrets redacted). Returns where the recorded config masks
 * a secret given as it is (maskedPointers): a resume or fork cannot build the flow from the record then.
 */
export async function recordRunFlow(run: DocumentSink, recipe: RunRecipe, config?: unknown): Promise<string[]> {
  let masked: string[] = [];
  if (config !== undefined) {
    const recorded = redactConfig(redactorFor(), config);
    masked = maskedPointers(recorded);
    await run.saveDocument('flow', recorded);
  }
  await recordRecipe(run, recipe);
  return masked;
}
