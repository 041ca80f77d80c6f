/**
 * Reading a recorded point of a run back (DESIGN D16): the last keyframe at or before the step, plus the deltas of
 * the steps after it, read from the event log as far as its chain hashes vouch for it.
 */
import type { BackpackState } from '../backpack/index.js';
import { StreamEventType, isEventOf, type CheckpointSavedPayload } from '../events/index.js';
import { CheckpointStoreError, StoreError, assertValidId, type Checkpoint, type RunRef, type RunStore } from '../store/index.js';
import { valueKind } from '../fs/index.js';
import { locateStore, type RunLocation } from './location.js';
import { checkOptionNames, optionNames } from './option-names.js';
import { applyStateDelta, type StateDelta } from './state-tracker.js';

/** A recorded point of a run: the Backpack state and the position after a step. */
export interface RunPoint {
  step: number;
  /** Node ids from the outermost flow inwards where the run continues; empty when the run had ended. */
  position: string[];
  /** When the run had ended at `step`: the action its flow ended with, as that step recorded it (older logs did not). */
  action?: string;
  state: BackpackState;
  /** The log line (0-based) of the `checkpoint.saved` event of `step`: what happened after the step starts there. */
  line: number;
  /**
   * What could not be used, each naming its file: a keyframe that failed its checksum or does not match the log
   * (an earlier keyframe, or the start, was used instead), lines of the log its chain does not vouch for (not
   * served: the point is the last verified step). Empty when everything read was sound.
   */
  warnings: string[];
}

/** Checkpoint `state` of a keyframe. */
export interface KeyframeState {
  kind: 'keyframe';
  backpack: BackpackState;
}

/** Payload of a `checkpoint.saved` event, with the runtime's state delta. */
export type CheckpointPayload = CheckpointSavedPayload<StateDelta>;

/** The run being read, and its store. */
export interface Run {
  store: RunStore;
  ref: RunRef;
}

/** A keyframe that loaded and passed its checksum, with its file. */
interface Keyframe {
  checkpoint: Checkpoint;
  path: string;
}

const LOAD_RUN_POINT_OPTIONS = optionNames<RunLocation & { runId: string; step?: number }>({ dataDir: true, sessionKey: true, redaction: true, store: true, runId: true, step: true });

/**
 * The recorded state and position of a run after `step` (default: its last recorded step): the last keyframe
 * (`checkpoint/<step>.json`) at or before it, or else the empty state, plus the deltas of the steps after that.
 *
 * What it reads is checked: a keyframe that fails its checksum, or whose chain hash is not the log's at its step,
 * is skipped for the previous one (or the start) with a warning; only the events the log's chain vouches for are
 * replayed, so the default point is the last verified step (with a warning when lines after it were not served).
 * A log that does not reach a keyframe's step is an error naming both files, and so is a `step` past the last
 * verified one.
 */
export async function loadRunPoint(options: RunLocation & { runId: string; step?: number }): Promise<RunPoint> {
  checkOptionNames(options, LOAD_RUN_POINT_OPTIONS, 'loadRunPoint', { atStep: 'step' });
  const { store, sessionKey } = locateStore(options);
  const { runId, step } = options;
  assertValidId(runId, 'runId');
  if (step !== undefined && (!Number.isInteger(step) || step < 0)) throw new StoreError(`step must be an integer >= 0, got ${typeof step === 'number' ? step : valueKind(step)}`);
  const run: Run = { store, ref: { sessionKey, runId } };
  const log = store.describeLog(run.ref);
  const steps = (await store.keyframeSteps(run.ref))
    .filter((s) => step === undefined || s <= step)
    .sort((a, b) => b - a);
  const warnings: string[] = [];
  // The projection's claims are read before the log: a live writer stores its projection only after the events it
  // counts, so a log read after it holds them all unless it lost them (read after the log, a step committed in
  // between would look like a cut log).
  const claims = step === undefined ? await projectionClaims(run, warnings) : undefined;
  for (let i = 0; ; i++) {
    let keyframe: Keyframe | undefined;
    for (; i < steps.length && keyframe === undefined; i++) keyframe = await loadKeyframe(run, steps[i]!, warnings);
    i--;
    const logWarnings: string[] = [];
    const point = await replay(run, keyframe, step, logWarnings);
    if (point === 'mismatch') {
      warnings.push(
        `${keyframe!.path}: its chain hash is not the one ${log} has at step ${keyframe!.checkpoint.step}: it does not belong to this log; using an earlier keyframe`,
      );
      continue;
    }
    for (const warning of logWarnings) if (!warnings.includes(warning)) warnings.push(warning);
    const why = warnings.length ? ` (${warnings.join('; ')})` : '';
    if (point.step < 0) throw new StoreError(`run ${sessionKey}/${runId} has no checkpoint${step === undefined ? '' : ` at or before step ${step}`} in ${log}${why}`);
    if (step !== undefined && point.step !== step) {
      throw new StoreError(`run ${sessionKey}/${runId} has no step ${step}; its last recorded step is ${point.step} (${log})${why}`);
    }
    if (claims !== undefined) checkProjectionClaims(run, claims, point.lastSeq);
    const { lastSeq: _lastSeq, ...found } = point;
    return { ...found, warnings };
  }
}

/**
 * The stored projection's last seq, or null when there is none; a damaged projection is only a warning here. Shared
 * with the LangGraph saver, which reads a thread as this module reads a run. Not exported from the package.
 */
export async function projectionClaims({ store, ref }: Run, warnings: string[]): Promise<{ lastSeq: number } | null> {
  try {
    return await store.loadRunMeta(ref);
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    warnings.push(`${error.message}; the log was not compared with it`);
    return null;
  }
}

/**
 * The last recorded point of a run must be the end of its log: a projection (read before the log) that counts
 * events past what the log serves means the log was cut or damaged (an error naming both files, and `warnings`, what
 * the log's reader said of it). Shared with the LangGraph saver. Not exported from the package.
 */
export function checkProjectionClaims({ store, ref }: Run, meta: { lastSeq: number } | null, lastSeq: number, warnings: readonly string[] = []): void {
  if (meta !== null && meta.lastSeq > lastSeq) {
    const why = warnings.length > 0 ? ` (${warnings.join('; ')})` : '';
    throw new StoreError(
      `${store.describeProjection(ref)} records events up to seq ${meta.lastSeq}, but ${store.describeLog(ref)} serves them up to seq ${lastSeq}: ` +
        `the log was cut or damaged${why}. Check the run with 'backpackflow runs verify ${ref.runId}'.`,
    );
  }
}

/** The keyframe of `step`, or undefined with a warning when it is damaged or is not the keyframe of that step. */
async function loadKeyframe({ store, ref }: Run, step: number, warnings: string[]): Promise<Keyframe | undefined> {
  const path = store.describeKeyframe(ref, step);
  try {
    const checkpoint = await store.loadKeyframe(ref, step);
    if (checkpoint === null) return undefined;
    if (checkpoint.step !== step || (checkpoint.state as unknown as KeyframeState | null)?.kind !== 'keyframe') {
      warnings.push(`${path} does not hold the keyframe of step ${step}; using an earlier keyframe`);
      return undefined;
    }
    return { checkpoint, path };
  } catch (error) {
    if (!(error instanceof CheckpointStoreError)) throw error;
    warnings.push(`${error.message}; using an earlier keyframe`);
    return undefined;
  }
}

/** Replays the log's deltas on top of `keyframe` (or the empty state) up to `step`; 'mismatch' when the keyframe is not the log's. */
async function replay(
  { store, ref }: Run,
  keyframe: Keyframe | undefined,
  step: number | undefined,
  warnings: string[],
): Promise<(Omit<RunPoint, 'warnings'> & { lastSeq: number }) | 'mismatch'> {
  const base = keyframe?.checkpoint;
  const point: Omit<RunPoint, 'warnings'> = base
    ? { step: base.step, position: [...base.position], state: structuredClone((base.state as unknown as KeyframeState).backpack), line: base.line ?? -1 }
    : { step: -1, position: [], state: { version: 1, items: {}, quarantined: {} }, line: -1 };
  let lastStep = -1;
  let lastSeq = -1;
  // After a keyframe that knows its line, only the tail is read (the index seeks there); else the whole log. For a
  // given step only the checkpoints are decoded (the last seq, for the projection's claims, is not needed then).
  const types = step === undefined ? undefined : [StreamEventType.CHECKPOINT_SAVED];
  for await (const { event, chain, line } of store.readVerified(ref, { from: base?.line ?? 0, types, onWarning: (w) => warnings.push(w) })) {
    lastSeq = event.seq;
    if (!isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) continue;
    const saved = event.payload as CheckpointPayload;
    // Read from the keyframe's line, the first step seen must be the keyframe's own: else the line is not this log's.
    if (base?.line !== undefined && lastStep < 0 && saved.step !== base.step) return 'mismatch';
    lastStep = Math.max(lastStep, saved.step);
    if (base?.chain !== undefined && saved.step === base.step && chain !== undefined && chain !== base.chain) return 'mismatch';
    // The keyframe's own step: the keyframe has its state and position, its checkpoint the action it ended with.
    if (saved.step === point.step) point.action = saved.action;
    if (saved.step <= point.step) continue;
    if (step !== undefined && saved.step > step) break;
    if (saved.delta) applyStateDelta(point.state, saved.delta);
    point.step = saved.step;
    point.position = saved.position;
    point.action = saved.action;
    point.line = line;
  }
  if (keyframe !== undefined && lastStep < keyframe.checkpoint.step) {
    // Read from the keyframe's line, nothing was found: how far does the log reach? (a damaged log: read it all)
    if (base?.line !== undefined) {
      for await (const { event } of store.readVerified(ref, { onWarning: () => undefined })) {
        if (isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) lastStep = Math.max(lastStep, event.payload.step);
      }
    }
    const reach = lastStep < 0 ? 'has no recorded step' : `reaches step ${lastStep} only`;
    const why = warnings.length ? ` (${warnings.join('; ')})` : '';
    throw new StoreError(
      `${keyframe.path} holds step ${keyframe.checkpoint.step}, but ${store.describeLog(ref)} ${reach}: the log was cut or damaged${why}. ` +
        `Check the run with 'backpackflow runs verify ${ref.runId}'.`,
    );
  }
  return { ...point, lastSeq };
}
