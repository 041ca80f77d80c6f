/**
 * What `run` and `validate` do (see flow-commands.ts, which defines them): imported when one of them runs, so that
 * their help and the rest of the command line do not load the runtime, the stores, the loader and zod.
 */
import { newRunId } from '../../events/index.js';
import type { NewRun } from '../../runtime/index.js';
import { runFlow } from '../../runtime/index.js';
import { checkRunIds } from '../../runtime/flow-names.js';
import { CliError, UsageError } from './errors.js';
import { storeErrors } from './store-errors.js';
import { FlowConfigError, type ConfigValidationReport } from '../../serialization/index.js';
import type { FlowFileOptions, FlowSourceOptions } from './flow-options.js';
import { loadFlowFile, loaderWith, maskedMessage, openCliRun, parseInput, readFlowFile, recordRunFlow, validateFlow } from './flows.js';
import { documentCollector, openFlowModule, parseFlowModule, type DocumentSink, type OpenFlow } from './recipe.js';
import { colors as c, print, warn, type CommonOptions } from './output.js';
import { terminalText as t } from '../../events/terminal-text.js';
import { runLive } from './runs.js';
import { cliPostgresStore, cliStore } from './run-store.js';
import { RunQueue } from '../../store/postgres/queue.js';
import type { PostgresRunStore, RunRef } from '../../store/index.js';

/** Options of `run`. */
export type RunOptions = CommonOptions & FlowSourceOptions & { input?: string; runId?: string; enqueue?: boolean; keepModelDeltas?: boolean };

/** `run`: see runCommand. */
export async function runAction(path: string | undefined, options: RunOptions): Promise<void> {
  if ((path === undefined) === (options.flowModule === undefined)) throw new UsageError('run takes a flow file or --flow-module <file#export>, one of the two');
  const input = parseInput(options.input);
  const runId = options.runId ?? newRunId();
  const ref = { sessionKey: options.session, runId };
  if (options.enqueue) return await enqueueStart(path, options, cliPostgresStore(options, 'run --enqueue'), ref, input);
  // The run's writer is taken before anything is recorded with it (once its config is valid): what is recorded
  // is this start's, never a concurrent start's of the same id.
  let newRun: NewRun | undefined;
  try {
    const opened = await openAndRecord(path, options, async () => (newRun = await openCliRun(cliStore(options), ref)));
    const masked = maskedMessage(runId, opened.masked, "'runs resume' and 'runs fork' of it need the flow again (--flow <flow.json>)");
    if (masked !== undefined) warn(masked);
    try {
      await runLive(options, opened.flow, (flow) => runFlow(flow, { newRun: opened.sink, input, ...(options.keepModelDeltas ? { modelDeltas: 'keep' as const } : {}) }));
    } finally {
      await opened.close();
    }
  } finally {
    // A no-op once the run took it over; else (the flow failed to build) the run is given up, its records left.
    await newRun?.release();
  }
}

/**
 * Builds the flow of a new run (its file or its module) and records how it is built through what `begin` gives (for
 * `run`: the run's writer, taken only once its config is valid, so an invalid flow leaves nothing). A flow config is
 * recorded as soon as it is valid, before the flow is built, so that a large parsed config is never held beside its
 * flow. Until the run's first event, what is recorded is not a run: `runs list` and `runs show` ignore it and a later
 * start of the same id records over it; a build that fails leaves it in place.
 */
async function openAndRecord<S extends DocumentSink>(path: string | undefined, options: CommonOptions & FlowSourceOptions, begin: () => Promise<S>): Promise<OpenFlow & { sink: S; masked: string[] }> {
  if (path !== undefined) {
    let sink: S | undefined;
    let masked: string[] = [];
    const flow = await loadFlowFile(path, options.modules, options.maxFlowBytes, async (config) => {
      masked = await recordRunFlow((sink = await begin()), { v: 1, flow: { kind: 'config' }, modules: options.modules }, config);
    });
    // The loader hands a valid config to beforeBuild before it builds anything.
    if (sink === undefined) throw new Error(`${path}: the flow was built without its config being recorded`);
    return { flow, close: async () => undefined, sink, masked };
  }
  const spec = parseFlowModule(options.flowModule!);
  await loaderWith(options.modules);
  const opened = await openFlowModule(spec);
  try {
    const sink = await begin();
    await recordRunFlow(sink, { v: 1, flow: { kind: 'module', module: spec.module, export: spec.export }, modules: options.modules });
    return { ...opened, sink, masked: [] };
  } catch (error) {
    await opened.close();
    throw error;
  }
}

/**
 * `run --enqueue`: builds the flow (so that a flow that cannot be built is refused now, not by a worker), then queues
 * the start with its documents in one transaction (the run's row locked), which refuses an id that has a recorded run, a live writer or a job.
 */
async function enqueueStart(path: string | undefined, options: CommonOptions & FlowSourceOptions, store: PostgresRunStore, ref: RunRef, input: Record<string, unknown> | undefined): Promise<void> {
  // Refused now, as a run here would be, not by the worker that takes it.
  checkRunIds(ref);
  const collected = documentCollector();
  const opened = await openAndRecord(path, options, async () => collected);
  await opened.close();
  // A worker builds a queued run from what is recorded: it would get the masks instead of the secrets.
  const masked = maskedMessage(ref.runId, opened.masked, 'a worker builds a queued run from that record, so it is not queued');
  if (masked !== undefined) throw new CliError(masked);
  await storeErrors(() => new RunQueue(store).enqueue(ref, 'start', input === undefined ? {} : { input }, collected.documents));
  print(options, { runId: ref.runId, sessionKey: ref.sessionKey, status: 'queued' }, () => ref.runId);
}

/** `validate`: see validateCommand. */
export async function validateAction(path: string, options: FlowFileOptions & { json?: boolean }): Promise<void> {
  let report: ConfigValidationReport;
  try {
    report = validateFlow(await loaderWith(options.modules), readFlowFile(path, options.maxFlowBytes));
  } catch (error) {
    if (!(error instanceof FlowConfigError)) throw error;
    report = { valid: false, errors: error.errors, shapeOnly: true };
  }
  const problems = report.errors;
  print(options, report, () =>
    problems.length === 0
      ? `${c.green('✓')} ${t(path)} is a valid flow`
      : [
          `${c.red('✗')} ${t(path)}: ${problems.length} problem${problems.length === 1 ? '' : 's'}`,
          ...problems.map((p) => `  ${c.bold(t(p.path || '/'))}: ${t(p.message)}`),
          ...(report.shapeOnly ? [c.dim('  (the file\'s shape has problems: node types, ids, edges and params are checked once these are fixed)')] : []),
        ].join('\n'),
  );
  if (problems.length > 0) process.exitCode = 1;
}
