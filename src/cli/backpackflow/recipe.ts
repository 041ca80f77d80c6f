/**
 * How a run's flow is built, recorded with the run (`run.recipe.json` beside its events), so that `runs resume` and
 * `runs fork` need no flags again: a flow config (recorded as `flow.json`) or a flow module (`--flow-module
 * ./agent.ts#buildFlow`, with the arguments it was called with), and the `--modules` its node classes come from.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { Flow } from '../../nodes/index.js';
import type { NewRun } from '../../runtime/index.js';
import { DocumentGoneError, type RunDocumentName, type RunRef, type RunStore } from '../../store/index.js';
import { CliError, UsageError } from './errors.js';
import { typescriptHint } from './output.js';

/** A flow module and the export that builds the flow. */
export interface FlowModuleSpec {
  /** Absolute path of the module. */
  module: string;
  /** Name of the exported builder. */
  export: string;
  /** JSON arguments the builder is called with (the demo passes its workspace). */
  args?: Record<string, unknown>;
}

const RecipeSchema = z
  .object({
    v: z.literal(1),
    flow: z.union([
      z.object({ kind: z.literal('config') }).strict(),
      z.object({ kind: z.literal('module'), module: z.string().min(1), export: z.string().min(1), args: z.record(z.string(), z.unknown()).optional() }).strict(),
    ]),
    modules: z.array(z.string().min(1)),
  })
  .strict();

/** The recorded recipe of a run. */
export type RunRecipe = z.infer<typeof RecipeSchema>;

/** What a flow module's builder returns: the flow, or the flow and how to release what it opened. */
export type BuiltFlow = Flow | { flow: Flow; close?: () => Promise<void> | void };

/** A built flow with its release (a no-op when the builder gave none). */
export interface OpenFlow {
  flow: Flow;
  close(): Promise<void>;
}

/** Parses `--flow-module <file>#<export>` (the export defaults to `buildFlow`). */
export function parseFlowModule(spec: string): FlowModuleSpec {
  const hash = spec.lastIndexOf('#');
  const file = hash > 0 ? spec.slice(0, hash) : spec;
  const name = hash > 0 ? spec.slice(hash + 1) : 'buildFlow';
  if (file === '' || !/^[A-Za-z_$][\w$]*$/.test(name)) throw new UsageError(`--flow-module: expected <file>#<exportedFunction>, got '${spec}'`);
  return { module: resolve(file), export: name };
}

/** Imports a flow module and builds its flow (a builder may be async and may return `{ flow, close }`). */
export async function openFlowModule(spec: FlowModuleSpec): Promise<OpenFlow> {
  if (!existsSync(spec.module)) throw new CliError(`flow module ${spec.module} does not exist`);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(spec.module).href)) as Record<string, unknown>;
  } catch (error) {
    throw new CliError(`cannot import flow module ${spec.module}: ${(error as Error).message}${typescriptHint(spec.module, error)}`);
  }
  const build = mod[spec.export];
  if (typeof build !== 'function') {
    const found = Object.entries(mod).filter(([, v]) => typeof v === 'function').map(([k]) => k);
    throw new CliError(`flow module ${spec.module} has no exported function '${spec.export}'${found.length ? ` (functions: ${found.join(', ')})` : ''}`);
  }
  const built = (await (build as (args?: Record<string, unknown>) => BuiltFlow | Promise<BuiltFlow>)(spec.args)) as BuiltFlow;
  const flow = built instanceof Flow ? built : built?.flow;
  if (!(flow instanceof Flow)) throw new CliError(`${spec.module}#${spec.export} must return a Flow (or { flow, close }), got ${typeof built}`);
  const close = built instanceof Flow ? undefined : built.close;
  return { flow, close: async () => void (await close?.()) };
}

/** Where a new run's documents are recorded: a NewRun (under its writer), or what a queued start stores with its job. */
export type DocumentSink = Pick<NewRun, 'saveDocument'>;

/** A sink that keeps what is recorded through it, for a queued start to store with its job (see RunQueue.enqueue). */
export function documentCollector(): DocumentSink & { documents: Partial<Record<RunDocumentName, unknown>> } {
  const documents: Partial<Record<RunDocumentName, unknown>> = {};
  return { documents, saveDocument: async (name, value) => void (documents[name] = value) };
}

/** Records how a new run's flow is built (module paths made absolute), through `run`. */
export async function recordRecipe(run: DocumentSink, recipe: RunRecipe): Promise<void> {
  const absolute = { ...recipe, modules: recipe.modules.map((m) => (isAbsolute(m) ? m : resolve(m))) };
  await run.saveDocument('recipe', absolute);
}

/** A recorded recipe, validated (a CliError naming `where` and the field when it is not one). */
function parseRecipe(json: unknown, where: string): RunRecipe {
  const parsed = RecipeSchema.safeParse(json);
  if (!parsed.success) throw new CliError(`corrupt run recipe ${where}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** Where a run's recorded documents are read from: its store, or what a worker's claim already read of them. */
export type RecordedDocuments = Pick<RunStore, 'location' | 'loadDocument'>;

/**
 * The recorded recipe of run `ref`, or undefined for a run recorded without one (a flow config alone, or none). A
 * recipe the run recorded and that is gone is a CliError naming it (the store's DocumentGoneError), with the flags that
 * build the flow without it: never a run "without a recipe", whose flow would be built without its `--modules`.
 */
export async function readRecipe(store: RecordedDocuments, ref: RunRef): Promise<RunRecipe | undefined> {
  let json: unknown;
  try {
    json = await store.loadDocument(ref, 'recipe');
  } catch (error) {
    const flags = error instanceof DocumentGoneError ? '; pass --flow <flow.json> or --flow-module <file>#<export> (and --modules <file...>) to build its flow without it' : '';
    // The store's error stays the cause: a worker tells a lost connection (give the run back) by it.
    throw new CliError(`${(error as Error).message}${flags}`, { cause: error });
  }
  return json === undefined ? undefined : parseRecipe(json, `of run ${ref.sessionKey}/${ref.runId} in ${store.location}`);
}
