/** Human text of the `runs` reports (the `--json` form is the report itself). */
import type { StreamEvent } from '../../events/index.js';
import type { RunVerification } from '../../runtime/index.js';
import type { RunMeta } from '../../store/index.js';
import { runDuration, type RunDuration } from '../../store/run-meta.js';
import type { BlameReport, DiffReport, EventsPage, Provenance, StateReport } from './inspect.js';
import { terminalText as t } from '../../events/terminal-text.js';
import { colors as c, formatMs, table } from './output.js';

function who(p: Provenance): string {
  if (p.nodeId === null && p.namespace === null) return '(input)';
  return t(`${p.nodeId ?? '?'}${p.namespace ? ` @ ${p.namespace}` : ''}`);
}

function time(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** A run's (or a segment's) duration; a lower bound (a segment cut short, or still running) as "≥ 945.0ms". */
export function formatDuration(duration: RunDuration | undefined): string {
  if (duration === undefined) return '';
  return `${duration.lowerBound ? '≥ ' : ''}${formatMs(duration.ms)}`;
}

/** `runs list`. */
export function renderRuns(runs: RunMeta[]): string {
  if (runs.length === 0) return 'no runs';
  const damaged = runs.filter((r) => r.damaged !== undefined).map((r) => c.red(t(`damaged run ${r.runId}: ${r.damaged}`)));
  const listing = table(
    ['RUN', 'SESSION', 'STATUS', 'LAST STEP', 'NODE RUNS', 'EVENTS', 'ERRORS', 'STARTED', 'DURATION'],
    runs.map((r) => [
      r.runId,
      r.sessionKey,
      r.damaged === undefined ? r.status : 'damaged',
      r.lastStep === undefined ? '' : String(r.lastStep),
      String(r.stepCount),
      String(r.eventCount),
      String(r.errorCount),
      r.startedAt > 0 ? time(r.startedAt) : '',
      formatDuration(runDuration(r)),
    ]),
  );
  return [listing, ...damaged].join('\n');
}

/** `runs verify`. */
export function renderVerification(report: RunVerification): string {
  const log = report.log;
  const head =
    report.status === 'verified'
      ? `${c.green('✓')} run ${t(report.runId)}: verified (${log.lines} events, chain ${log.chainHead?.slice(0, 16) ?? ''}…, ${report.keyframes.length} keyframe${report.keyframes.length === 1 ? '' : 's'})`
      : report.status === 'unverifiable'
        ? `${c.yellow('?')} run ${t(report.runId)}: unverifiable: no chain (${log.lines} events; written before chain hashes existed, or stripped of them: nothing proves it unchanged)`
        : `${c.red('✗')} run ${t(report.runId)}: damaged${log.firstBadLine !== undefined ? ` (first line that disagrees: ${log.firstBadLine})` : ''}`;
  return [head, ...report.problems.map((p) => `  ${t(p)}`)].join('\n');
}

/** `runs state`. */
export function renderState(report: StateReport): string {
  const where = report.position.length ? `next: ${t(report.position.join(' › '))}` : 'run ended';
  const lines = [`${c.bold(`backpack of ${t(report.runId)} at step ${report.step}`)} ${c.dim(`(${where})`)}`];
  if (report.items.length === 0) lines.push(c.dim('(empty)'));
  for (const item of report.items) {
    lines.push(`${c.bold(t(item.key))} = ${t(item.summary)}`);
    lines.push(c.dim(`    v${item.provenance.version} by ${who(item.provenance)} at ${time(item.provenance.timestamp)}${item.provenance.tags.length ? ` [${t(item.provenance.tags.join(', '))}]` : ''}`));
  }
  if (report.quarantined.length) lines.push(c.magenta('quarantined:'));
  for (const item of report.quarantined) {
    lines.push(`${c.magenta(`⊘ ${t(item.key)}`)} = ${t(item.summary)}`);
    lines.push(c.dim(`    v${item.provenance.version} by ${who(item.provenance)}; quarantined by ${t(item.quarantine.nodeId ?? '?')}: ${t(item.quarantine.reason)}`));
  }
  return lines.join('\n');
}

/** `runs diff`. */
export function renderDiff(report: DiffReport): string {
  const { added, modified, deleted, quarantined } = report.counts;
  const lines = [
    c.bold(`diff of ${t(report.runId)}, step ${report.from} → ${report.to}: ${added} added, ${modified} modified, ${deleted} deleted, ${quarantined} quarantined`),
  ];
  for (const change of report.changes) {
    switch (change.change) {
      case 'added':
        lines.push(`${c.green(`+ ${t(change.key)}`)} = ${t(String(change.after))}  ${c.dim(`by ${who(change.by)}`)}`);
        break;
      case 'modified':
        lines.push(`${c.yellow(`~ ${t(change.key)}`)}: ${t(String(change.before))} → ${t(String(change.after))}  ${c.dim(`by ${who(change.by)}`)}`);
        break;
      case 'deleted':
        lines.push(`${c.red(`- ${t(change.key)}`)} (was ${t(String(change.before))}, written by ${who(change.by)})`);
        break;
      case 'quarantined': {
        const q = change.quarantine;
        const how = `quarantined by ${t(q?.nodeId ?? '?')}: ${t(q?.reason ?? '')}`;
        if (q?.replaced && q.by !== undefined) {
          // The quarantined item is another than the value the key had: name both.
          lines.push(`${c.magenta(`⊘ ${t(change.key)}`)} = ${t(q.summary ?? '')} (written by ${who(q.by)}) ${how}; it replaced ${t(String(change.before))} (written by ${who(change.by)})`);
        } else {
          lines.push(`${c.magenta(`⊘ ${t(change.key)}`)} (${change.before === null ? 'written' : `was ${t(change.before)}, written`} by ${who(change.by)}) ${how}`);
        }
        break;
      }
    }
  }
  return lines.join('\n');
}

/**
 * `runs blame`: the writes that took effect (deletes included), then those replaced in their own step and those that
 * were rolled back (in no step's state), with why.
 */
export function renderBlame(report: BlameReport): string {
  const lines: string[] = [];
  if (report.writes.length === 0) lines.push(`no write of '${t(report.key)}' in run ${t(report.runId)}`);
  else {
    lines.push(
      table(
        ['STEP', 'NODE', 'NAMESPACE', 'VERSION', 'VALUE'],
        report.writes.map((w) => [
          w.inheritedFrom ? `inherited from ${w.inheritedFrom.runId} step ${w.inheritedFrom.step}` : String(w.step),
          w.nodeId ?? '(input)',
          w.namespace ?? '',
          w.version === null ? '' : `v${w.version}`,
          w.action === 'quarantine' ? `⊘ quarantined: ${w.reason ?? ''}` : w.action === 'delete' ? '✕ deleted' : w.summary,
        ]),
      ),
    );
  }
  const superseded = report.superseded ?? [];
  if (superseded.length) lines.push(c.dim('replaced in their own step (in no step\'s state):'));
  for (const w of superseded) {
    const what = w.action === 'quarantine' ? `quarantine (${w.reason ?? ''})` : `${w.version === null ? '' : `v${w.version} `}${w.summary}`;
    lines.push(c.dim(t(`  step ${w.step} ${w.nodeId ?? '?'}${w.namespace ? ` @ ${w.namespace}` : ''}: ${what}: ${w.why}`)));
  }
  const rolledBack = report.rolledBack ?? [];
  if (rolledBack.length) lines.push(c.dim('rolled back (in no step\'s state):'));
  for (const w of rolledBack) {
    const what = w.action === 'quarantine' ? `quarantine (${w.reason ?? ''})` : `${w.version === null ? '' : `v${w.version} `}${w.summary}`;
    lines.push(c.dim(t(`  step ${w.step} ${w.nodeId ?? '?'}${w.namespace ? ` @ ${w.namespace}` : ''}: ${what}: ${w.why}`)));
  }
  return lines.join('\n');
}

/** One event as a line of `runs events` and `runs tail`. */
export function eventLine(e: StreamEvent): string {
  // JSON escapes C0 controls but not C1 nor bidirectional characters: the payload's text goes through terminalText too.
  const payload = t(JSON.stringify(e.payload));
  return `${String(e.seq).padStart(5)} ${time(e.timestamp)} ${c.cyan(t(e.type).padEnd(20))} ${t(e.namespace ?? '')}${e.nodeId ? c.dim(` (${t(e.nodeId)})`) : ''} ${c.dim(payload.length > 120 ? `${payload.slice(0, 119)}…` : payload)}`;
}

/** `runs events`. */
export function renderEvents(page: EventsPage): string {
  const lines = page.events.map(eventLine);
  lines.push(c.dim(`page ${page.page}/${Math.max(1, page.pages)} · ${page.total} event${page.total === 1 ? '' : 's'}`));
  return lines.join('\n');
}
