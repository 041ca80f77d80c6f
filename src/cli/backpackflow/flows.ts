/** Loading flows for `run`, `validate`, `runs resume` and `runs fork`: the JSON file, the node modules, the loader. */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BackpackNode, type Flow } from '../../nodes/index.js';
import { llmNodeTypes } from '../../nodes/llm/index.js';
import { FlowConfigError, FlowLoader, parseFlowConfig, type ConfigProblem, type LoadableNodeClass } from '../../serialization/index.js';
import { assertNewRun, redact, runPaths, StoreError, writeJsonAtomic } from '../../store/index.js';
import { CliError } from './errors.js';

/** Reads and parses a flow file; malformed JSON is a CliError naming the file, line and column. */
export function readFlowFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read flow file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    return parseFlowConfig(text, path);
  } catch (error) {
    if (!(error instanceof FlowConfigError)) throw error;
    // parseFlowConfig names the line and column: "<path> is not valid JSON at line L, column C: <reason>".
    const detail = error.errors.map((e) => e.message.replace(`${path} is not valid JSON`, '')).join('; ').replace(/\s+/g, ' ');
    throw new CliError(`malformed flow JSON in ${path}${detail}`);
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
      throw new CliError(`cannot import module ${file}: ${(error as Error).message}`);
    }
    if (typeof mod['register'] === 'function') {
      await (mod['register'] as (loader: FlowLoader) => unknown)(loader);
    }
    for (const [name, value] of Object.entries(mod)) {
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

/** A loader with the built-in LLM node types and the node classes of `modules` registered. */
export async function loaderWith(modules: readonly string[] = []): Promise<FlowLoader> {
  const loader = new FlowLoader();
  for (const [type, NodeClass] of Object.entries(llmNodeTypes)) loader.register(type, NodeClass);
  await loadModules(loader, modules);
  return loader;
}

/** Every problem of a flow config, each with its JSON path (`validate`). */
export function validateFlow(loader: FlowLoader, config: unknown): ConfigProblem[] {
  return loader.validateConfig(config).errors;
}

function describeProblems(path: string, problems: ConfigProblem[]): string {
  return `invalid flow ${path} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  ${p.path || '/'}: ${p.message}`).join('\n')}`;
}

/** Reads, validates and loads a flow file; every problem is reported with its JSON path. */
export async function loadFlowFile(path: string, modules: readonly string[]): Promise<Flow> {
  const config = readFlowFile(path);
  const loader = await loaderWith(modules);
  const problems = validateFlow(loader, config);
  if (problems.length > 0) throw new CliError(describeProblems(path, problems));
  try {
    return await loader.loadFlow(config);
  } catch (error) {
    if (error instanceof FlowConfigError) throw new CliError(describeProblems(path, error.errors));
    throw error;
  }
}

/** Parses `--input`: inline JSON, or `@file` holding JSON; it must be an object (its keys are packed). */
export function parseInput(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let source = '--input';
  let json = text;
  if (text.startsWith('@')) {
    source = `input file ${text.slice(1)}`;
    try {
      json = readFileSync(text.slice(1), 'utf8');
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
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new CliError(`${source} must be a JSON object (its keys are packed into the backpack)`);
  return value as Record<string, unknown>;
}

/** Where `run` records a run's flow config, so that `runs resume` and `runs fork` need no `--flow`. */
export function recordedFlowPath(dataDir: string, sessionKey: string, runId: string): string {
  return join(runPaths(dataDir, sessionKey, runId).dir, 'flow.json');
}

/**
 * Records the flow config of `flowPath` with the new run `runId` (secrets redacted, like everything the store
 * writes); a run id that already has a recorded run is a CliError, and its recorded flow is left alone.
 */
export async function recordFlow(flowPath: string, dataDir: string, sessionKey: string, runId: string): Promise<void> {
  try {
    assertNewRun(dataDir, sessionKey, runId);
  } catch (error) {
    if (error instanceof StoreError) throw new CliError(error.message);
    throw error;
  }
  await writeJsonAtomic(recordedFlowPath(dataDir, sessionKey, runId), redact(readFlowFile(flowPath)).value);
}

/** The flow file to resume or fork `runId` with: `--flow` when given, else the one recorded with the run. */
export function flowFileFor(given: string | undefined, dataDir: string, sessionKey: string, runId: string): string {
  if (given !== undefined) return given;
  const recorded = recordedFlowPath(dataDir, sessionKey, runId);
  if (!existsSync(recorded)) throw new CliError(`run ${sessionKey}/${runId} has no recorded flow (${recorded}): pass --flow <flow.json>`);
  return recorded;
}
