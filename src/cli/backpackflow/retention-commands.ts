/** `runs delete` and `runs prune`: retention of stored runs (see src/store/retention.ts for crash safety). */
import type { Command } from 'commander';
import { deleteRun, pruneRuns, type PruneResult, type RunStatus } from '../../runtime/index.js';
import { LockError, RunInUseError, RunStatusSchema } from '../../store/index.js';
import { nonNegativeInteger, validId } from './arguments.js';
import { UsageError } from './errors.js';
import { colors, print, table, type CommonOptions } from './output.js';
import { cliStore } from './run-store.js';
import { terminalText as t } from '../../events/terminal-text.js';

type DeleteOptions = CommonOptions & { dryRun?: boolean };
type PruneOptions = CommonOptions & { dryRun?: boolean; olderThan?: Date | number; status?: RunStatus[]; keepLast?: number };

/** What `runs delete` did to each run it was given. */
interface DeleteReport {
  dryRun: boolean;
  deleted: string[];
  missing: string[];
  refused: Array<{ runId: string; reason: string }>;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `--older-than`: an age (`30d`, `12h`, `90m`, `45s`, `2w`) or a date (`2026-01-31`, ISO 8601). */
export function parseOlderThan(value: string): Date | number {
  const age = /^(\d+)(ms|s|m|h|d|w)$/.exec(value.trim());
  if (age) return Number(age[1]) * UNITS[age[2]!]!;
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new UsageError(`--older-than: '${value}' is neither an age (30d, 12h, 90m, 45s, 2w) nor a date (2026-01-31, ISO 8601)`);
}

function parseStatuses(value: string, previous: RunStatus[] = []): RunStatus[] {
  const out = [...previous];
  for (const part of value.split(',')) {
    const s = part.trim();
    if (!RunStatusSchema.safeParse(s).success) throw new UsageError(`--status: unknown status '${s}'; one of ${RunStatusSchema.options.join(', ')}`);
    out.push(s as RunStatus);
  }
  return out;
}

/**
 * Adds `delete` and `prune` to the `runs` command group; `common` adds --data-dir, --database-url, --session and
 * --json. They work on the run store selected, files or Postgres, like every `runs` command.
 */
export function addRetentionCommands(runs: Command, common: (command: Command) => Command): void {
  common(runs.command('delete <runIds...>').description('delete stored runs (log, checkpoints, projection); refuses a run with a live writer'))
    .option('--dry-run', 'say what would be deleted, delete nothing')
    .action(async (runIds: string[], options: DeleteOptions) => {
      for (const runId of runIds) validId('runId')(runId);
      const store = cliStore(options);
      const report: DeleteReport = { dryRun: options.dryRun === true, deleted: [], missing: [], refused: [] };
      const stored = options.dryRun ? new Set((await store.listRuns(options.session)).map((ref) => ref.runId)) : undefined;
      for (const runId of runIds) {
        const ref = { sessionKey: options.session, runId };
        if (stored) {
          if (!stored.has(runId)) report.missing.push(runId);
          else if (await store.writerAlive(ref)) report.refused.push({ runId, reason: 'a live writer holds it' });
          else report.deleted.push(runId);
          continue;
        }
        try {
          if (await deleteRun({ store, sessionKey: options.session, runId })) report.deleted.push(runId);
          else report.missing.push(runId);
        } catch (error) {
          if (!(error instanceof RunInUseError) && !(error instanceof LockError)) throw error;
          report.refused.push({ runId, reason: error.message });
        }
      }
      print(options, report, () => renderDelete(report, options.session));
      if (report.missing.length > 0 || report.refused.length > 0) process.exitCode = 1;
    });

  common(
    runs
      .command('prune')
      .description(
        "delete the runs matching every criterion given, except the newest --keep-last; runs waiting for a person's answer are kept " +
          "unless --status names 'waiting', and a run that changed since the listing (resumed, answered) is skipped",
      ),
  )
    .option('--older-than <age|date>', 'only runs last active before: an age (30d, 12h, 90m, 2w) or a date (2026-01-31)', parseOlderThan)
    .option(
      '--status <status>',
      `only runs with this status (repeat or comma-separate: ${RunStatusSchema.options.join(', ')}); 'waiting' runs are pruned only when named here`,
      parseStatuses,
    )
    .option('--keep-last <n>', 'keep the newest n runs whatever else matches', nonNegativeInteger('--keep-last'))
    .option('--dry-run', 'say what would be deleted, delete nothing')
    .action(async (options: PruneOptions) => {
      if (options.olderThan === undefined && options.status === undefined && options.keepLast === undefined) {
        throw new UsageError('runs prune needs at least one of --older-than, --status, --keep-last (so that it never deletes every run by accident)');
      }
      const result = await pruneRuns({
        store: cliStore(options),
        sessionKey: options.session,
        olderThan: options.olderThan,
        status: options.status,
        keepLast: options.keepLast,
        dryRun: options.dryRun === true,
      });
      print(options, result, () => renderPrune(result));
    });
}

function renderDelete(report: DeleteReport, session: string): string {
  const verb = report.dryRun ? 'would delete' : 'deleted';
  const lines = report.deleted.map((id) => `${colors.green('✓')} ${verb} ${id}`);
  for (const id of report.missing) lines.push(`${colors.red('✗')} ${id}: no such run in session '${session}'`);
  for (const r of report.refused) lines.push(`${colors.red('✗')} ${r.runId}: refused: ${t(r.reason)}`);
  return lines.join('\n');
}

function renderPrune(result: PruneResult): string {
  const verb = result.dryRun ? 'would delete' : 'deleted';
  const lines: string[] = [];
  if (result.deleted.length > 0) {
    lines.push(
      table(
        ['session', 'run', 'status', 'last active'],
        result.deleted.map((r) => [r.sessionKey, r.runId, r.status, new Date(r.lastActiveAt).toISOString()]),
      ),
    );
  }
  lines.push(`${verb} ${result.deleted.length} run${result.deleted.length === 1 ? '' : 's'}, kept ${result.kept}`);
  for (const s of result.skipped) lines.push(t(`skipped ${s.sessionKey}/${s.runId}: ${s.reason}`));
  if (result.swept.length > 0) lines.push(`${result.dryRun ? 'would remove' : 'removed'} ${result.swept.length} leftover of an interrupted delete: ${t(result.swept.join(', '))}`);
  return lines.join('\n');
}
