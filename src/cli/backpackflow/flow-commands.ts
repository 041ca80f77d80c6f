/** `run` and `validate`: flows from JSON files. Their actions (flow-actions.ts) are imported when they run. */
import { Command } from 'commander';
import { common } from './common-options.js';
import { validId } from './arguments.js';
import { flowModuleOption, maxFlowBytesOption, modulesOption, type FlowFileOptions } from './flow-options.js';
import type { RunOptions } from './flow-actions.js';

/**
 * `run <flow.json>` or `run --flow-module <file#export>`: build the flow (a config is validated first), record how it
 * was built with the run (so `runs resume` and `runs fork` need no flags), run it durably with the live trace.
 */
export function runCommand(): Command {
  return common(new Command('run').argument('[flow.json]').description('run a flow durably with the live trace: from its JSON config, or built by a flow module'))
    .option('--input <json|@file|@->', 'JSON object packed into the backpack before the first node (@-: read from standard input)')
    .option('--run-id <id>', 'id of the run (default: a new one)', validId('--run-id'))
    .addOption(flowModuleOption())
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .option('--enqueue', 'queue the run for a worker (backpackflow worker) and print its id; needs --database-url')
    .option('--keep-model-deltas', "store every streamed token as its own model.delta event (default: one event per model call and step)")
    .action(async (path: string | undefined, options: RunOptions) => (await import('./flow-actions.js')).runAction(path, options));
}

/** `validate <flow.json>`: every problem with its JSON path; exit 1 when there is one. */
export function validateCommand(): Command {
  return new Command('validate')
    .argument('<flow.json>')
    .description('check a flow config; prints every problem with its JSON path')
    .option('--json', 'print one JSON document')
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .action(async (path: string, options: FlowFileOptions & { json?: boolean }) => (await import('./flow-actions.js')).validateAction(path, options));
}
