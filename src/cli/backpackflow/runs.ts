/** The `runs` commands: list, show, state, diff, blame, events, resume, fork. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { compileNamespacePattern } from '../../backpack/index.js';
import type { Flow } from '../../nodes/index.js';
import { FlowVisualizer, StreamEventTypeSchema, newRunId, type StreamEvent } from '../../events/index.js';
import { forkRun, listRuns, resumeRun, verifyRun, type RunResult } from '../../runtime/index.js';
import { StoreError } from '../../store/index.js';
import { CliError, nonNegativeInteger, positiveInteger, UsageError, validId } from './errors.js';
import { flowFileFor, loadFlowFile, maxFlowBytesOption, modulesOption, recordFlow, type FlowFileOptions } from './flows.js';
import { blame, diffStates, stateReport, type EventsPage } from './inspect.js';
import { colors, print, warn, type CommonOptions } from './output.js';
import { renderBlame, renderDiff, renderEvents, renderRuns, renderState, renderVerification } from './render.js';
import { firstStep, openRun, readEventsPage, readRunEvents, runPointAt } from './store-access.js';
import { buildTrace, renderTrace } from './trace.js';

/** Adds `--data-dir`, `--session` and `--json` to a command. */
export function common(command: Command, json = true): Command {
  command.option('-d, --data-dir <dir>', 'data directory', '.backpackflow').option('-s, --session <key>', 'session', validId('--session'), 'default');
  if (json) command.option('--json', 'print one JSON document');
  return command;
}

/** Turns the runtime's own errors about a run (bad step, missing checkpoint) into CLI errors. */
async function storeErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof StoreError) throw new CliError(error.message);
    throw error;
  }
}

/** Runs a resumed or forked flow with the live trace (unless --json) and reports the run. */
async function runLive(options: { json?: boolean }, flow: Flow, start: (flow: Flow) => Promise<RunResult>): Promise<void> {
  const visualizer = options.json ? undefined : new FlowVisualizer(flow.eventStreamer, { output: process.stdout });
  let result: RunResult;
  try {
    result = await storeErrors(() => start(flow));
  } finally {
    visualizer?.detach();
  }
  print(options, result, () => `run id: ${colors.bold(result.runId)} (${result.steps} steps, action ${result.action ?? 'none'})`);
}

type RunOpts = CommonOptions & { step?: number; from?: number; to?: number };

/** The `runs` command group. */
export function runsCommand(): Command {
  const runs = new Command('runs').description('list and inspect stored runs; resume or fork them');

  common(runs.command('list').description('the stored runs of a session, oldest first')).action(async (options: CommonOptions) => {
    const metas = await listRuns({ dataDir: resolve(options.dataDir), sessionKey: options.session });
    print(options, metas, () => renderRuns(metas));
  });

  common(runs.command('show <runId>').description('the trace of a run as a tree: namespaces, durations, routes, retries, errors, quarantines')).action(
    async (runId: string, options: CommonOptions) => {
      const trace = buildTrace(runId, await readRunEvents({ ...options, runId }));
      print(options, trace, () => renderTrace(trace));
    },
  );

  common(runs.command('state <runId>').description('the backpack at a step, with the provenance of every key'))
    .option('--step <n>', 'step (default: the last)', nonNegativeInteger('--step'))
    .action(async (runId: string, options: RunOpts) => {
      const ref = { ...options, runId };
      const events = await readRunEvents(ref);
      const report = stateReport(runId, await storeErrors(() => runPointAt(ref, options.step, events)));
      print(options, report, () => renderState(report));
    });

  common(runs.command('diff <runId>').description('what changed in the backpack between two steps, and who changed it'))
    .requiredOption('--from <n>', 'earlier step', nonNegativeInteger('--from'))
    .requiredOption('--to <n>', 'later step', nonNegativeInteger('--to'))
    .action(async (runId: string, options: RunOpts & { from: number; to: number }) => {
      const ref = { ...options, runId };
      const events = await readRunEvents(ref);
      const from = await storeErrors(() => runPointAt(ref, options.from, events));
      const to = await storeErrors(() => runPointAt(ref, options.to, events));
      const report = diffStates(runId, from, to);
      print(options, report, () => renderDiff(report));
    });

  common(runs.command('blame <runId> <key>').description('every write of a key: node, namespace, step, version, value')).action(
    async (runId: string, key: string, options: CommonOptions) => {
      const ref = { ...options, runId };
      const events = await readRunEvents(ref);
      const first = firstStep(events);
      const initial = await storeErrors(() => runPointAt(ref, first, events)).catch(() => undefined);
      const report = blame(runId, key, events, initial);
      print(options, report, () => renderBlame(report));
    },
  );

  common(runs.command('events <runId>').description('the stored events of a run, a page at a time'))
    .option('--type <type>', 'only events of this type (e.g. backpack.packed)')
    .option('--namespace <pattern>', "only events whose namespace matches (segments; '*' one, '**' any)")
    .option('--page <n>', 'page number, from 1', positiveInteger('--page'), 1)
    .option('--page-size <n>', 'events per page', positiveInteger('--page-size'), 50)
    .action(async (runId: string, options: CommonOptions & { type?: string; namespace?: string; page: number; pageSize: number }) => {
      if (options.type !== undefined && !StreamEventTypeSchema.safeParse(options.type).success) {
        throw new UsageError(`--type: unknown event type '${options.type}'; one of ${StreamEventTypeSchema.options.join(', ')}`);
      }
      const offset = (options.page - 1) * options.pageSize;
      let page: EventsPage;
      if (options.type === undefined && options.namespace === undefined) {
        const { total, events } = await storeErrors(() => readEventsPage({ ...options, runId }, options.pageSize, offset, warn));
        page = pageOf(runId, options, total, events);
      } else {
        const store = await openRun({ ...options, runId });
        const matches = options.namespace === undefined ? undefined : compileNamespacePattern(options.namespace);
        const selected = await store.readFiltered(
          (e) => (options.type === undefined || e.type === options.type) && (matches === undefined || (e.namespace !== undefined && matches(e.namespace))),
          { onWarning: warn },
        );
        page = pageOf(runId, options, selected.length, selected.slice(offset, offset + options.pageSize));
      }
      if (options.page > 1 && options.page > page.pages) throw new CliError(`--page ${options.page} is past the last page (${page.pages}) of run '${runId}'`);
      print(options, page, () => renderEvents(page));
    });

  common(runs.command('verify <runId>').description("prove a run's log untouched: recompute its chain hashes, check its keyframes and projection; exit 1 on damage")).action(
    async (runId: string, options: CommonOptions) => {
      await openRun({ ...options, runId });
      const report = await storeErrors(() => verifyRun({ dataDir: resolve(options.dataDir), sessionKey: options.session, runId }));
      print(options, report, () => renderVerification(report));
      if (report.status === 'unverifiable') warn(`run ${runId} has no chain hashes (written before they existed): it cannot be verified`);
      if (!report.ok) process.exitCode = 1;
    },
  );

  common(runs.command('resume <runId>').description('continue a run that stopped, from its last recorded step'))
    .option('--flow <flow.json>', 'the flow the run was started with (default: the one recorded with the run)')
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .action(async (runId: string, options: CommonOptions & FlowFileOptions & { flow?: string }) => {
      await openRun({ ...options, runId });
      const dataDir = resolve(options.dataDir);
      const { flow } = await loadFlowFile(flowFileFor(options.flow, dataDir, options.session, runId), options.modules, options.maxFlowBytes);
      await runLive(options, flow, (loaded) => resumeRun(loaded, { dataDir, sessionKey: options.session, runId }));
    });

  common(runs.command('fork <runId>').description('start a new run from a recorded step of another'))
    .requiredOption('--step <n>', 'the step to start from', nonNegativeInteger('--step'))
    .option('--flow <flow.json>', 'the flow the run was started with (default: the one recorded with the run)')
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .option('--new-run-id <id>', 'id of the new run (default: a new one)', validId('--new-run-id'))
    .action(async (runId: string, options: CommonOptions & FlowFileOptions & { step: number; flow?: string; newRunId?: string }) => {
      const events = await readRunEvents({ ...options, runId });
      await storeErrors(() => runPointAt({ ...options, runId }, options.step, events));
      const dataDir = resolve(options.dataDir);
      const { flow, config } = await loadFlowFile(flowFileFor(options.flow, dataDir, options.session, runId), options.modules, options.maxFlowBytes);
      const forkId = options.newRunId ?? newRunId();
      await storeErrors(() => recordFlow(config, dataDir, options.session, forkId));
      await runLive(options, flow, (loaded) => forkRun(loaded, { dataDir, sessionKey: options.session, runId, atStep: options.step, newRunId: forkId }));
    });

  return runs;
}

function pageOf(runId: string, options: { page: number; pageSize: number }, total: number, events: StreamEvent[]): EventsPage {
  return { runId, page: options.page, pageSize: options.pageSize, total, pages: Math.ceil(total / options.pageSize), events };
}
