/** `run` and `validate`: flows from JSON files. */
import { Command } from 'commander';
import { newRunId } from '../../events/index.js';
import type { Flow } from '../../nodes/index.js';
import { runFlow } from '../../runtime/index.js';
import { UsageError } from './errors.js';
import { validId } from './arguments.js';
import { FlowConfigError, type ConfigProblem } from '../../serialization/index.js';
import { flowModuleOption, maxFlowBytesOption, modulesOption, type FlowFileOptions, type FlowSourceOptions } from './flow-options.js';
import { loadFlowFile, loaderWith, parseInput, readFlowFile, recordRunFlow, validateFlow } from './flows.js';
import { openFlowModule, parseFlowModule, type OpenFlow } from './recipe.js';
import { colors as c, print, type CommonOptions } from './output.js';
import { common, runLive } from './runs.js';
import { cliPostgresStore, cliStore } from './run-store.js';
import { RunQueue } from '../../store/postgres/queue.js';
import type { PostgresRunStore, RunRef, RunStore } from '../../store/index.js';

/**
 * `run <flow.json>` or `run --flow-module <file#export>`: build the flow (a config is validated first), record how it
 * was built with the run (so `runs resume` and `runs fork` need no flags), run it durably with the live trace.
 */
export function runCommand(): Command {
  return common(new Command('run').argument('[flow.json]').description('run a flow durably with the live trace: from its JSON config, or built by a flow module'))
    .option('--input <json|@file>', 'JSON object packed into the backpack before the first node')
    .option('--run-id <id>', 'id of the run (default: a new one)', validId('--run-id'))
    .addOption(flowModuleOption())
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .option('--enqueue', 'queue the run for a worker (backpackflow worker) and print its id; needs --database-url')
    .option('--keep-model-deltas', "store every streamed token as its own model.delta event (default: one event per model call and step)")
    .action(async (path: string | undefined, options: CommonOptions & FlowSourceOptions & { input?: string; runId?: string; enqueue?: boolean; keepModelDeltas?: boolean }) => {
      if ((path === undefined) === (options.flowModule === undefined)) throw new UsageError('run takes a flow file or --flow-module <file#export>, one of the two');
      const input = parseInput(options.input);
      const store = options.enqueue ? cliPostgresStore(options, 'run --enqueue') : cliStore(options);
      const runId = options.runId ?? newRunId();
      const ref = { sessionKey: options.session, runId };
      let opened: OpenFlow;
      if (path !== undefined) {
        opened = { flow: await loadAndRecord(path, options, store, ref), close: async () => undefined };
      } else {
        const spec = parseFlowModule(options.flowModule!);
        await loaderWith(options.modules);
        opened = await openFlowModule(spec);
        await recordRunFlow(store, ref, { v: 1, flow: { kind: 'module', module: spec.module, export: spec.export }, modules: options.modules });
      }
      if (options.enqueue) {
        await opened.close();
        await new RunQueue(store as PostgresRunStore).enqueue(ref, 'start', input === undefined ? {} : { input });
        print(options, { runId, sessionKey: options.session, status: 'queued' }, () => runId);
        return;
      }
      try {
        await runLive(options, opened.flow, (flow) => runFlow(flow, { store, sessionKey: options.session, runId, input, ...(options.keepModelDeltas ? { modelDeltas: 'keep' as const } : {}) }));
      } finally {
        await opened.close();
      }
    });
}

/**
 * Loads a flow file for new run `ref`, recording its config (once it is valid) before the flow is built, so that a
 * large parsed config is never held beside its flow. Until the run's first event, what is recorded is not a run:
 * `runs list` and `runs show` ignore it and a start with the same id records over it. So a build that fails, like a
 * process killed while building, leaves those records in place rather than deleting them: a second process starting
 * the same id at the same moment may already have recorded its own there, and a delete would take them from its run.
 */
async function loadAndRecord(path: string, options: CommonOptions & FlowSourceOptions, store: RunStore, ref: RunRef): Promise<Flow> {
  return await loadFlowFile(path, options.modules, options.maxFlowBytes, (config) =>
    recordRunFlow(store, ref, { v: 1, flow: { kind: 'config' }, modules: options.modules }, config),
  );
}

/** `validate <flow.json>`: every problem with its JSON path; exit 1 when there is one. */
export function validateCommand(): Command {
  return new Command('validate')
    .argument('<flow.json>')
    .description('check a flow config; prints every problem with its JSON path')
    .option('--json', 'print one JSON document')
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .action(async (path: string, options: FlowFileOptions & { json?: boolean }) => {
      let problems: ConfigProblem[];
      try {
        problems = validateFlow(await loaderWith(options.modules), readFlowFile(path, options.maxFlowBytes));
      } catch (error) {
        if (!(error instanceof FlowConfigError)) throw error;
        problems = error.errors;
      }
      print(options, { valid: problems.length === 0, errors: problems }, () =>
        problems.length === 0
          ? `${c.green('✓')} ${path} is a valid flow`
          : [`${c.red('✗')} ${path}: ${problems.length} problem${problems.length === 1 ? '' : 's'}`, ...problems.map((p) => `  ${c.bold(p.path || '/')}: ${p.message}`)].join('\n'),
      );
      if (problems.length > 0) process.exitCode = 1;
    });
}
