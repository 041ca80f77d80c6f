/** `run` and `validate`: flows from JSON files. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { FlowVisualizer, newRunId } from '../../events/index.js';
import { runFlow } from '../../runtime/index.js';
import { StoreError } from '../../store/index.js';
import { CliError, validId } from './errors.js';
import { FlowConfigError, type ConfigProblem } from '../../serialization/index.js';
import { loadFlowFile, loaderWith, maxFlowBytesOption, modulesOption, parseInput, readFlowFile, recordFlow, validateFlow, type FlowFileOptions } from './flows.js';
import { colors as c, print, type CommonOptions } from './output.js';
import { common } from './runs.js';

/** `run <flow.json>`: validate, run durably with the live trace, print the run id. */
export function runCommand(): Command {
  return common(new Command('run').argument('<flow.json>').description('run a flow from its JSON config, durably, with the live trace'))
    .option('--input <json|@file>', 'JSON object packed into the backpack before the first node')
    .option('--run-id <id>', 'id of the run (default: a new one)', validId('--run-id'))
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .action(async (path: string, options: CommonOptions & FlowFileOptions & { input?: string; runId?: string }) => {
      const input = parseInput(options.input);
      let loaded: Awaited<ReturnType<typeof loadFlowFile>> | undefined = await loadFlowFile(path, options.modules, options.maxFlowBytes);
      const flow = loaded.flow;
      const dataDir = resolve(options.dataDir);
      const runId = options.runId ?? newRunId();
      const visualizer = options.json ? undefined : new FlowVisualizer(flow.eventStreamer, { output: process.stdout });
      try {
        await recordFlow(loaded.config, dataDir, options.session, runId);
        loaded = undefined; // the parsed config is not needed while the flow runs
        const result = await runFlow(flow, { dataDir, sessionKey: options.session, runId, input });
        print(options, result, () => `run id: ${c.bold(result.runId)}\ninspect it: backpackflow runs show ${result.runId}${options.dataDir === '.backpackflow' ? '' : ` --data-dir ${options.dataDir}`}`);
      } catch (error) {
        if (error instanceof StoreError) throw new CliError(error.message);
        throw error;
      } finally {
        visualizer?.detach();
      }
    });
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
