/** The `runs` commands: list, show, state, diff, blame, events, resume, fork, verify, delete, prune. */
import { Command, Option } from 'commander';
import { compileNamespacePattern } from '../../backpack/index.js';
import type { Flow } from '../../nodes/index.js';
import { FlowVisualizer, StreamEventType, StreamEventTypeSchema, isEventOf, newRunId, type EventPayloadMap, type StreamEvent } from '../../events/index.js';
import { forkRun, listRuns, resumeRun, verifyRun, type RunResult } from '../../runtime/index.js';
import { RunStatusSchema, type RunRef } from '../../store/index.js';
import { RunQueue } from '../../store/postgres/queue.js';
import { CliError, UsageError } from './errors.js';
import { common } from './common-options.js';
import { storeErrors } from './store-errors.js';
import { nonNegativeInteger, positiveInteger, validId } from './arguments.js';
import { flowModuleOption, maxFlowBytesOption, modulesOption, type FlowSourceOptions } from './flow-options.js';
import { BLAME_EVENT_TYPES, blame, blameReads, diffStates, stateReport, type EventsPage } from './inspect.js';
import { colors, commandLine, print, warn, type CommonOptions } from './output.js';
import { renderBlame, renderDiff, renderEvents, renderRuns, renderState, renderVerification } from './render.js';
import { firstStep, logEndWarnings, openRun, readEventsPage, readFilteredEvents, readRunEvents, runPointAt } from './store-access.js';
import { cliPostgresStore, cliStore } from './run-store.js';
import { answerCommand, renderTrace, storedTrace } from './trace.js';
import { addRetentionCommands } from './retention-commands.js';
import { terminalText as t } from '../../events/terminal-text.js';
import { redactorFor } from '../../redact/index.js';

/**
 * Runs a flow (new, resumed or forked) with the live trace (unless --json), a warning on stderr for every action
 * that had no route, and reports the run: how it ended, or the question it waits for and how to answer it; a run
 * that started and failed, how to resume it (on stderr, before its error). The commands carry `--modules` when the
 * run was given modules (a flow file's node classes: not recorded with the run).
 */
export async function runLive(options: CommonOptions & { modules?: string[] }, flow: Flow, start: (flow: Flow) => Promise<RunResult>): Promise<RunResult> {
  // What is printed is redacted as the log is (the built-in catalogue `run` writes with): the trace, the warning for
  // an action without a route, the question a waiting node asks, the result (--json or not).
  const redactor = redactorFor();
  const visualizer = options.json ? undefined : new FlowVisualizer(flow.eventStreamer, { output: process.stdout, redact: (line) => redactor.redactText(line) });
  const stopWarning = flow.eventStreamer.on(StreamEventType.ROUTE_MISSING, (event) => {
    if (!isEventOf(event, StreamEventType.ROUTE_MISSING)) return;
    const p: Partial<EventPayloadMap['route.missing']> = event.payload;
    warn(redactor.redactText(`no route for action '${p.action}' from node '${p.from}' (${event.namespace ?? ''}); the flow ended there. Routes: ${p.available?.length ? p.available.join(', ') : 'none'}`));
  });
  const again = options.modules?.length ? ['--modules', ...options.modules] : [];
  let started: string | undefined;
  const stopStart = flow.eventStreamer.on(StreamEventType.RUN_START, (event) => (started = event.runId));
  let result: RunResult;
  try {
    const ran = await storeErrors(() => start(flow));
    // An action is data (a decision node's is the model's text), as is the question a waiting node asks.
    result = redactor.redact(ran).value;
  } catch (error) {
    if (started !== undefined) warn(`run ${started} did not complete; once its cause is fixed, resume it from its last step: ${commandLine(['runs', 'resume', started, ...again], options)}`);
    throw error;
  } finally {
    stopStart();
    stopWarning();
    visualizer?.detach();
  }
  print(options, result, () => {
    if (result.status === 'waiting') {
      const question = result.interrupt!;
      return [
        `run id: ${colors.bold(t(result.runId))} is ${colors.yellow('waiting')} for an answer to node '${t(question.nodeId)}' (${t(question.namespace)}):`,
        `  ${t(String(JSON.stringify(question.payload)))}`,
        ...(question.schema ? [`  answer schema: ${t(JSON.stringify(question.schema))}`] : []),
        `answer it: ${answerCommand(result.runId, question.pause, options, again)}`,
      ].join('\n');
    }
    return `run id: ${colors.bold(t(result.runId))} (last step ${result.steps}, action ${t(result.action ?? 'none')})\ninspect it: ${commandLine(['runs', 'show', result.runId], options)}`;
  });
  return result;
}

type RunOpts = CommonOptions & { step?: number; from?: number; to?: number };

/** The `runs` command group. */
export function runsCommand(): Command {
  const runs = new Command('runs').description('list and inspect stored runs; resume or fork them; delete or prune them');

  common(runs.command('list').description('the stored runs of a session, oldest first'))
    .addOption(new Option('--status <status>', 'only runs with this status').choices(RunStatusSchema.options))
    .action(async (options: CommonOptions & { status?: string }) => {
      const store = cliStore(options);
      const all = await listRuns({ store, sessionKey: options.session });
      const metas = options.status === undefined ? all : all.filter((m) => m.status === options.status);
      // An empty session says where the runs are, when other sessions of the store have some.
      const elsewhere = all.length === 0 && !options.json ? [...new Set((await store.listRuns()).map((ref) => ref.sessionKey))] : [];
      print(options, metas, () =>
        elsewhere.length === 0 ? renderRuns(metas) : `no runs in session '${t(options.session)}' (runs are in session${elsewhere.length === 1 ? '' : 's'} ${t(elsewhere.join(', '))}: add --session <key>)`,
      );
    });

  common(runs.command('show <runId>').description('the trace of a run as a tree: namespaces, durations, routes, retries, errors, quarantines')).action(
    async (runId: string, options: CommonOptions) => {
      const trace = await storedTrace({ ...options, runId });
      print(options, trace, () => renderTrace(trace, options));
    },
  );

  common(runs.command('state <runId>').description('the backpack at a step, with the provenance of every key'))
    .option('--step <n>', 'step (default: the last)', nonNegativeInteger('--step'))
    .action(async (runId: string, options: RunOpts) => {
      const ref = { ...options, runId };
      const unread = await logEndWarnings(ref);
      const point = await storeErrors(() => runPointAt(ref, options.step));
      const report = stateReport(runId, { ...point, warnings: [...new Set([...unread, ...point.warnings])] });
      print(options, report, () => renderState(report));
    });

  common(runs.command('diff <runId>').description('what changed in the backpack between two steps, and who changed it'))
    .requiredOption('--from <n>', 'earlier step', nonNegativeInteger('--from'))
    .requiredOption('--to <n>', 'later step', nonNegativeInteger('--to'))
    .action(async (runId: string, options: RunOpts & { from: number; to: number }) => {
      const ref = { ...options, runId };
      const unread = await logEndWarnings(ref);
      const from = await storeErrors(() => runPointAt(ref, options.from));
      const to = await storeErrors(() => runPointAt(ref, options.to));
      // Damage at the log's end is named even when both steps come before it.
      const report = diffStates(runId, { ...from, warnings: [...unread, ...from.warnings] }, to);
      print(options, report, () => renderDiff(report));
    });

  common(runs.command('blame <runId> <key>').description('every write of a key: node, namespace, step, version, value')).action(
    async (runId: string, key: string, options: CommonOptions) => {
      const ref = { ...options, runId };
      const unread: string[] = [];
      // Only the events blame reads are decoded (the others are verified with their batch).
      const events = await readFilteredEvents(ref, (event) => blameReads(event, key), (w) => void unread.push(w), BLAME_EVENT_TYPES);
      const first = firstStep(events);
      const initial = await storeErrors(() => runPointAt(ref, first, events)).catch((error: unknown) => {
        // The writes the log holds are still shown; what the run started with is named as unknown.
        unread.push(`the state at step ${first} could not be read (${error instanceof Error ? error.message : String(error)}): a value the run started with is not shown`);
        warn(unread.at(-1)!);
        return undefined;
      });
      const report = blame(runId, key, events, initial, unread);
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
        const matches = options.namespace === undefined ? undefined : compileNamespacePattern(options.namespace);
        const selected = await readFilteredEvents(
          { ...options, runId },
          (e) => (options.type === undefined || e.type === options.type) && (matches === undefined || (e.namespace !== undefined && matches(e.namespace))),
        );
        page = pageOf(runId, options, selected.length, selected.slice(offset, offset + options.pageSize));
      }
      if (options.page > 1 && options.page > page.pages) throw new CliError(`--page ${options.page} is past the last page (${page.pages}) of run '${runId}'`);
      print(options, page, () => renderEvents(page));
    });

  common(runs.command('tail <runId>').description('print a run\'s events as they are stored, until it completes or fails (Ctrl-C to stop)'))
    .option('--poll-ms <n>', 'how often to look for new events (a database also announces each step at once)', positiveInteger('--poll-ms'), 250)
    .action(async (runId: string, options: CommonOptions & { pollMs: number }) => {
      const { tailRun } = await import('./tail.js');
      await tailRun({ ...options, runId });
    });

  common(runs.command('verify <runId>').description("prove a run's log untouched: recompute its chain hashes, check its keyframes and projection; exit 1 unless proven (damaged, or no chain to check)")).action(
    async (runId: string, options: CommonOptions) => {
      const { store } = await openRun({ ...options, runId });
      const report = await storeErrors(() => verifyRun({ store, sessionKey: options.session, runId }));
      print(options, report, () => renderVerification(report));
      if (report.status === 'unverifiable') warn(`run ${runId} has no chain hashes (written before they existed, or removed from it): it cannot be verified`);
      if (!report.ok) process.exitCode = 1;
    },
  );

  common(runs.command('resume <runId>').description('continue a run that stopped, or answer a waiting one, from its last recorded step'))
    .option('--input <json|@file|@->', "the answer to a waiting run's question (JSON, checked against its schema; @-: read from standard input)")
    .option('--answering <pause>', "the pause the answer is to (as 'runs show' gives it): refused, nothing written, if the run now asks something else", nonNegativeInteger('--answering'))
    .option('--flow <flow.json>', 'the flow the run was started with (default: as recorded with the run)')
    .addOption(flowModuleOption())
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .option('--enqueue', 'queue the run for a worker (backpackflow worker) instead of running it here; needs --database-url')
    .action(async (runId: string, options: CommonOptions & FlowSourceOptions & { input?: string; answering?: number; enqueue?: boolean }) => {
      const { openRecordedFlow, parseJsonArgument } = await import('./flows.js');
      const { store, ref } = await openRun({ ...options, runId });
      if (options.answering !== undefined && options.input === undefined) throw new UsageError('--answering names the pause an answer is to: give the answer with --input');
      const answer = options.input === undefined ? {} : { resume: parseJsonArgument(options.input), ...(options.answering === undefined ? {} : { answering: options.answering }) };
      if (options.enqueue) {
        await enqueueResume(cliPostgresStore(options, 'runs resume --enqueue'), ref, answer, options);
        return;
      }
      const { flow, close } = await openRecordedFlow(options, store, ref);
      try {
        await runLive(options, flow, (loaded) => resumeRun(loaded, { store, sessionKey: options.session, runId, ...answer }));
      } finally {
        await close();
      }
    });

  common(runs.command('fork <runId>').description('start a new run from a recorded step of another'))
    .requiredOption('--step <n>', 'the step to start from', nonNegativeInteger('--step'))
    .option('--flow <flow.json>', 'the flow the run was started with (default: as recorded with the run)')
    .addOption(flowModuleOption())
    .addOption(modulesOption())
    .addOption(maxFlowBytesOption())
    .option('--new-run-id <id>', 'id of the new run (default: a new one)', validId('--new-run-id'))
    .action(async (runId: string, options: CommonOptions & FlowSourceOptions & { step: number; newRunId?: string }) => {
      const { loaderWith, openCliRun, openRecordedFlow, recordedFlowConfig, recordRunFlow } = await import('./flows.js');
      const events = await readRunEvents({ ...options, runId });
      await storeErrors(() => runPointAt({ ...options, runId }, options.step, events));
      const { store, ref } = await openRun({ ...options, runId });
      const { flow, close, recipe } = await openRecordedFlow(options, store, ref);
      try {
        const forkId = options.newRunId ?? newRunId();
        if (forkId === runId) throw new CliError(`a fork needs a run id of its own, not ${runId}`);
        const given = recipe.flow.kind === 'config' ? await recordedFlowConfig(options.flow, store, ref, options.maxFlowBytes) : undefined;
        // A flow file given here is recorded as a run's file is: with the params its classes mark secret masked.
        const config = given !== undefined && options.flow !== undefined ? (await loaderWith(recipe.modules)).maskConfigSecrets(given) : given;
        // The fork's writer is taken first: what is recorded with it is this fork's, never a concurrent start's.
        const newRun = await openCliRun(store, { sessionKey: options.session, runId: forkId });
        try {
          await recordRunFlow(newRun, recipe, config);
          await runLive(options, flow, (loaded) => forkRun(loaded, { runId, atStep: options.step, newRun }));
        } finally {
          await newRun.release();
        }
      } finally {
        await close();
      }
    });

  addRetentionCommands(runs, (command) => common(command));
  return runs;
}

function pageOf(runId: string, options: { page: number; pageSize: number }, total: number, events: StreamEvent[]): EventsPage {
  return { runId, page: options.page, pageSize: options.pageSize, total, pages: Math.ceil(total / options.pageSize), events };
}

/**
 * Queues a stopped or waiting run for a worker (`runs resume --enqueue`). A waiting run's answer is checked against its
 * question's schema here, so that a wrong answer is refused at once rather than by the worker.
 */
async function enqueueResume(store: import('../../store/index.js').PostgresRunStore, ref: RunRef, given: { resume?: unknown; answering?: number }, options: CommonOptions): Promise<void> {
  const meta = await store.currentRunMeta(ref);
  if (meta.status === 'completed') throw new CliError(`run ${ref.sessionKey}/${ref.runId} already completed; fork it to run again from a step`);
  if (meta.status === 'waiting' && given.resume === undefined) throw new CliError(`run ${ref.sessionKey}/${ref.runId} is waiting for an answer: pass it with --input <json>`);
  if (meta.status !== 'waiting' && given.resume !== undefined) throw new CliError(`run ${ref.sessionKey}/${ref.runId} is ${meta.status}, not waiting for an answer: resume it without --input`);
  // The answer is to the pause it was checked against: the worker refuses it if the run asks something else by then.
  let answer = given;
  if (meta.status === 'waiting' && meta.interrupt !== undefined) {
    const { checkRecordedAnswer } = await import('../../runtime/interrupts.js');
    if (given.answering !== undefined && given.answering !== meta.interrupt.pause) {
      throw new CliError(`run ${ref.sessionKey}/${ref.runId}: the answer is to pause ${given.answering}, but it now waits for pause ${meta.interrupt.pause}, another question: nothing was queued; see 'runs show ${ref.runId}'`);
    }
    await storeErrors(async () => checkRecordedAnswer(meta.interrupt!, given.resume));
    if (meta.interrupt.pause !== undefined) answer = { ...given, answering: meta.interrupt.pause };
  }
  await storeErrors(() => new RunQueue(store).enqueue(ref, 'resume', answer));
  print(options, { runId: ref.runId, sessionKey: ref.sessionKey, status: 'queued' }, () => ref.runId);
}
