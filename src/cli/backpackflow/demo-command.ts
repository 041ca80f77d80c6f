/** `backpackflow demo`: the offline research agent over a workspace, run durably, then how to inspect it. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { Command } from 'commander';
import { decodeValue } from '../../backpack/index.js';
import { FlowVisualizer } from '../../events/index.js';
import { redactorFor } from '../../redact/index.js';
import { loadRunPoint, openNewRun, runFlow, type RunResult } from '../../runtime/index.js';
import { DEMO_FLOW_MODULE, openDemoFlow } from './demo/flow.js';
import type { Progress } from './demo/nodes.js';
import { CliError } from './errors.js';
import { recordRecipe } from './recipe.js';
import { colors as c, commandLine, print } from './output.js';
import { terminalText as t } from '../../events/terminal-text.js';

const DEFAULT_QUESTION = 'how are durable runs checkpointed and resumed?';

interface DemoOptions {
  workspace: string;
  dataDir: string;
  session: string;
  question: string;
  json?: boolean;
}

function progressBar(enabled: boolean): { progress?: Progress; stop(): void } {
  if (!enabled) return { stop: () => undefined };
  const bar = new cliProgress.SingleBar({ format: 'summarizing {bar} {value}/{total} files', clearOnComplete: true, hideCursor: true }, cliProgress.Presets.shades_classic);
  let state: 'idle' | 'running' | 'stopped' = 'idle';
  // The bar owns the line it draws on, and going back to it when it stops: it must stop before the trace prints
  // another line, so it stops as soon as the last file is done (and at the latest when the run ends).
  const stop = (): void => {
    if (state === 'running') bar.stop();
    state = 'stopped';
  };
  return {
    progress: (done, total) => {
      if (state === 'stopped' || (state === 'idle' && done >= total)) return;
      if (state === 'idle') bar.start(total, done);
      state = 'running';
      bar.update(done);
      if (done >= total) stop();
    },
    stop,
  };
}

/** The `demo` command. */
export function demoCommand(): Command {
  return new Command('demo')
    .description('an offline research agent over a workspace: scan, summarize, synthesize, remember, answer, guard')
    .option('-w, --workspace <dir>', 'workspace to research', '.')
    .option('-d, --data-dir <dir>', 'data directory', '.backpackflow')
    .option('-s, --session <key>', 'session', 'default')
    .option('-q, --question <text>', 'question to answer', DEFAULT_QUESTION)
    .option('--json', 'print one JSON document')
    .action(async (options: DemoOptions) => {
      const workspace = resolve(options.workspace);
      if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) throw new CliError(`workspace ${workspace} is not a directory`);
      const dataDir = resolve(options.dataDir);
      const bar = progressBar(!options.json && process.stdout.isTTY === true);
      const args = { workspace, dataDir, ignore: [options.dataDir, 'dist', 'coverage'] };
      const { flow, close, llm } = await openDemoFlow(args, bar.progress);
      // Redacted as the log is: the demo's agent quotes the workspace's files, which may hold a secret.
      const redactor = redactorFor();
      const visualizer = options.json ? undefined : new FlowVisualizer(flow.eventStreamer, { output: process.stdout, redact: (line) => redactor.redactText(line) });
      try {
        // Recorded with the run, so that `runs resume` and `runs fork` rebuild this flow with no flags.
        const newRun = await openNewRun({ dataDir, sessionKey: options.session });
        let result: RunResult;
        try {
          await recordRecipe(newRun, { v: 1, flow: { kind: 'module', module: DEMO_FLOW_MODULE, export: 'openDemoFlow', args }, modules: [] });
          result = await runFlow(flow, { newRun, input: { question: options.question } });
        } finally {
          await newRun.release();
        }
        bar.stop();
        const point = await loadRunPoint({ dataDir, sessionKey: options.session, runId: result.runId });
        const value = (key: string): any => (point.state.items[key] ? decodeValue(point.state.items[key].value) : undefined);
        const summaries = value('summaries') as { written: number; reused: number };
        const report = {
          runId: result.runId,
          dataDir,
          workspace,
          question: options.question,
          model: llm?.label ?? null,
          answer: value('answer') as { text: string; sources: string[] },
          scan: value('scan'),
          summaries: { written: summaries.written, reused: summaries.reused },
          synthesis: value('synthesis'),
          memory: value('memory'),
          quarantined: Object.entries(point.state.quarantined).map(([key, q]) => ({ key, reason: q.quarantine.reason })),
          steps: point.step,
        };
        print(options, report, () =>
          [
            '',
            `${c.bold('question:')} ${t(report.question)}${report.model ? c.dim(` (answered by ${t(report.model)})`) : ''}`,
            `${c.bold('answer:')}\n  ${t(report.answer.text, { continuation: '  ' })}`,
            '',
            `files: ${report.summaries.written} summarized, ${report.summaries.reused} unchanged; directories ${t(String(report.synthesis.mode))}: ${t(String(report.synthesis.frames))}; memory items written: ${report.memory.written}`,
            ...report.quarantined.map((q) => c.magenta(t(`quarantined '${q.key}': ${q.reason}`))),
            `${c.bold('run id:')} ${report.runId}`,
            '',
            'inspect it:',
            `  ${commandLine(['runs', 'show', report.runId], options)}`,
            `  ${commandLine(['runs', 'diff', report.runId, '--from', '0', '--to', String(report.steps)], options)}`,
            `  ${commandLine(['runs', 'blame', report.runId, 'claim'], options)}`,
            'or in the browser:',
            `  ${commandLine(['studio', '--workspace', options.workspace], options)}`,
          ].join('\n'),
        );
      } finally {
        bar.stop();
        visualizer?.detach();
        await close();
      }
    });
}
