/** `run` and `validate`: flows from JSON files. */
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { FlowVisualizer, newRunId } from '../../events/index.js';
import { runFlow } from '../../runtime/index.js';
import { StoreError } from '../../store/index.js';
import { CliError, validId } from './errors.js';
import { loadFlowFile, loaderWith, parseInput, readFlowFile, recordFlow, validateFlow } from './flows.js';
import { colors as c, print, type CommonOptions } from './output.js';
import { common } from './runs.js';

const modulesOption = (): Option => new Option('--modules <file...>', 'modules whose BackpackNode classes the flow uses').default([]);

/** `run <flow.json>`: validate, run durably with the live trace, print the run id. */
export function runCommand(): Command {
  return common(new Command('run').argument('<flow.json>').description('run a flow from its JSON config, durably, with the live trace'))
    .option('--input <json|@file>', 'JSON object packed into the backpack before the first node')
    .option('--run-id <id>', 'id of the run (default: a new one)', validId('--run-id'))
    .addOption(modulesOption())
    .action(async (path: string, options: CommonOptions & { input?: string; runId?: string; modules: string[] }) => {
      const input = parseInput(options.input);
      const flow = await loadFlowFile(path, options.modules);
      const dataDir = resolve(options.dataDir);
      const runId = options.runId ?? newRunId();
      const visualizer = options.json ? undefined : new FlowVisualizer(flow.eventStreamer, { output: process.stdout });
      try {
        await recordFlow(path, dataDir, options.session, runId);
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
    .action(async (path: string, options: { json?: boolean; modules: string[] }) => {
      const config = readFlowFile(path);
      const problems = validateFlow(await loaderWith(options.modules), config);
      print(options, { valid: problems.length === 0, errors: problems }, () =>
        problems.length === 0
          ? `${c.green('✓')} ${path} is a valid flow`
          : [`${c.red('✗')} ${path}: ${problems.length} problem${problems.length === 1 ? '' : 's'}`, ...problems.map((p) => `  ${c.bold(p.path || '/')}: ${p.message}`)].join('\n'),
      );
      if (problems.length > 0) process.exitCode = 1;
    });
}
