import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { StreamEventType, isEventOf, type StreamEvent } from '../../events/index.js';
import { loadRunPoint, type RunPoint } from '../../runtime/index.js';
import { EventStore, ProjectionStore, StoreError, isValidId, listRunIds, runPaths } from '../../store/index.js';
import { CliError } from './errors.js';
import { warn } from './output.js';

/** Where the CLI finds runs. */
export interface RunRefOptions {
  dataDir: string;
  session: string;
  runId: string;
}

/** The run's event store, after checking that the run exists (a clear error naming the run otherwise). */
export async function openRun(options: RunRefOptions): Promise<EventStore> {
  const dataDir = resolve(options.dataDir);
  if (!isValidId(options.session)) throw new CliError(`invalid session '${options.session}': use letters, digits, '.', '_' and '-'`);
  if (!isValidId(options.runId) || !existsSync(runPaths(dataDir, options.session, options.runId).events)) {
    const known = (await listRunIds(dataDir, options.session)).length;
    throw new CliError(
      `unknown run id '${options.runId}' in session '${options.session}' of ${dataDir} (${known} run${known === 1 ? '' : 's'} there; 'backpackflow runs list' shows them)`,
    );
  }
  return new EventStore({ dataDir, sessionKey: options.session, runId: options.runId });
}

/** Every stored event of a run that its chain vouches for, in order (what is not served is warned about on stderr). */
export async function readRunEvents(options: RunRefOptions): Promise<StreamEvent[]> {
  return (await openRun(options)).readAll({ onWarning: warn });
}

/**
 * A page of a run's events (`runs events`) and the total the log serves (what its chain vouches for). A log that
 * serves fewer events than the run's projection counts was cut or damaged: a StoreError naming both files, never
 * a total whose last pages come out empty. What the log does not serve is handed to `warn`.
 */
export async function readEventsPage(
  options: RunRefOptions,
  pageSize: number,
  offset: number,
  warn: (message: string) => void,
): Promise<{ total: number; events: StreamEvent[] }> {
  const store = await openRun(options);
  const total = await store.countEvents({ onWarning: warn });
  const meta = await new ProjectionStore({ dataDir: resolve(options.dataDir), sessionKey: options.session }).loadRunMeta(options.runId);
  if (meta !== null && meta.eventCount > total) {
    throw new StoreError(
      `${store.paths.runMeta} counts ${meta.eventCount} events, but ${store.paths.events} serves ${total}: the log was cut or damaged (backpackflow runs verify ${options.runId})`,
    );
  }
  return { total, events: await store.readPage(pageSize, offset, { onWarning: warn }) };
}

/** The recorded steps of a run: 0 through the last `checkpoint.saved` step. */
export function lastStep(events: StreamEvent[]): number {
  let last = 0;
  for (const event of events) {
    if (isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) last = Math.max(last, Number(event.payload.step) || 0);
  }
  return last;
}

/**
 * The first recorded step of a run: 0, or for a fork the step it started from. That is the step of the start
 * checkpoint (`start: true`); runs recorded before start checkpoints existed begin one step before their first one.
 */
export function firstStep(events: StreamEvent[]): number {
  for (const event of events) {
    if (!isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) continue;
    const step = Number(event.payload.step) || 0;
    return event.payload.start === true ? step : Math.max(0, step - 1);
  }
  return 0;
}

/** The run's state at `step` (default: the last), or a CliError giving the valid range. */
export async function runPointAt(options: RunRefOptions, step: number | undefined, events: StreamEvent[]): Promise<RunPoint> {
  const first = firstStep(events);
  const last = Math.max(first, lastStep(events));
  if (step !== undefined && (step > last || step < first)) {
    throw new CliError(`invalid step ${step} for run '${options.runId}': its recorded steps are ${first}..${last}`);
  }
  const point = await loadRunPoint({ dataDir: resolve(options.dataDir), sessionKey: options.session, runId: options.runId, step });
  for (const warning of point.warnings) warn(warning);
  return point;
}
