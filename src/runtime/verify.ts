/**
 * Verifying a recorded run (DESIGN D15): the event log's chain, every keyframe's seal and its tie to the log, and
 * what the projection claims about the log. `backpackflow runs verify <runId>` prints it.
 */
import { StreamEventType, isEventOf } from '../events/index.js';
import { StoreError, assertValidId, recordedDigests, type RunDocumentName, type RunMeta, type RunRef, type RunStore, type VerifyResult } from '../store/index.js';
import { locateStore, type RunLocation } from './location.js';
import { checkOptionNames, optionNames } from './option-names.js';
import type { KeyframeState } from './run-point.js';

/** One keyframe as {@link verifyRun} found it. */
export interface KeyframeCheck {
  step: number;
  file: string;
  ok: boolean;
  /** What is wrong with it, naming the file. */
  problem?: string;
}

/** Result of {@link verifyRun}. */
export interface RunVerification {
  runId: string;
  sessionKey: string;
  /**
   * The run is proven untouched: nothing damaged was found and the chain covers the log (`status` `'verified'`). An
   * `'unverifiable'` run is not ok: nothing proves it unchanged.
   */
  ok: boolean;
  /**
   * `'verified'`: the log's chain holds over every line and every keyframe and the projection agree with it.
   * `'damaged'`: see `problems`. `'unverifiable'`: nothing damaged was found, but the log carries no chain hash at
   * all: written before chain hashes existed, or its chain fields were removed (which takes no hash), so it cannot be
   * proven untouched.
   */
  status: 'verified' | 'damaged' | 'unverifiable';
  /** Every problem found, each naming its file (the first one names the first line of the log that disagrees). */
  problems: string[];
  /** The event log's own report. */
  log: VerifyResult;
  keyframes: KeyframeCheck[];
}

const VERIFY_RUN_OPTIONS = optionNames<RunLocation & { runId: string }>({ dataDir: true, sessionKey: true, redaction: true, store: true, runId: true });

/**
 * Recomputes the chain of a run's event log and checks what refers to it: each keyframe (`checkpoint/<step>.json`)
 * must pass its checksum, be the keyframe of its step, and carry the chain hash the log has at that step; the
 * projection (`projections/run.meta.json`) must pass its checksum, be this run's, and claim no more events than the
 * log holds (readers keep such a projection as the evidence of a lost tail: deleting it takes the log as it stands).
 * Reads only. Throws a StoreError when the run does not exist.
 */
export async function verifyRun(options: RunLocation & { runId: string }): Promise<RunVerification> {
  checkOptionNames(options, VERIFY_RUN_OPTIONS, 'verifyRun');
  const { store, sessionKey } = locateStore(options);
  const { runId } = options;
  assertValidId(runId, 'runId');
  const ref = { sessionKey, runId };
  const logName = store.describeLog(ref);
  // The projection is read before the log: a live writer stores it only after the events it counts.
  let meta: RunMeta | null = null;
  let projectionProblem: string | undefined;
  try {
    meta = await store.loadRunMeta(ref);
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    projectionProblem = error.message;
  }
  const log = await store.verifyLog(ref);
  if (log.lines === 0 && log.tornTailBytes === 0) {
    throw new StoreError(`run ${sessionKey}/${runId} has no event log in ${store.location} (${logName})`);
  }
  const problems: string[] = log.problem !== undefined ? [log.problem] : [];
  for (const corrupt of log.corruptLines) {
    const text = `${logName}: line ${corrupt.line} is corrupt: ${corrupt.error}`;
    if (!problems.some((p) => p.includes(`line ${corrupt.line} `))) problems.push(text);
  }

  const keyframes = await checkKeyframes(store, ref, log);
  for (const keyframe of keyframes) if (keyframe.problem !== undefined) problems.push(keyframe.problem);
  problems.push(...(await documentProblems(store, ref)));

  const projectionPath = store.describeProjection(ref);
  // The projection is kept as the evidence of a lost tail until it is deleted (see ProjectionStore.currentRunMeta).
  const clear = `; if the log as it stands is the run, delete ${projectionPath}: it is rebuilt from the log`;
  if (projectionProblem !== undefined) problems.push(projectionProblem);
  else if (meta !== null && meta.eventCount > log.verifiedLines && log.chain !== 'unverifiable') {
    problems.push(`${projectionPath} counts ${meta.eventCount} events, but ${logName} vouches for ${log.verifiedLines}: the log was cut or damaged${clear}`);
  } else if (meta !== null && meta.eventCount > log.events) {
    problems.push(`${projectionPath} counts ${meta.eventCount} events, but ${logName} holds ${log.events}: the log was cut or damaged${clear}`);
  }

  const status = problems.length > 0 ? 'damaged' : log.chain === 'unverifiable' ? 'unverifiable' : 'verified';
  return { runId, sessionKey, ok: status === 'verified', status, problems, log, keyframes };
}

const DOCUMENT_NAMES: readonly RunDocumentName[] = ['flow', 'recipe'];

/**
 * The run's documents (its flow config, its recipe), each checked against its start record: what is wrong with each,
 * naming it (changed, replaced, added since, not JSON, unreadable, or gone). A damaged start record is the log's
 * problem, reported with it.
 */
async function documentProblems(store: RunStore, ref: RunRef): Promise<string[]> {
  try {
    await recordedDigests(store, ref);
  } catch (error) {
    if (error instanceof StoreError) return [];
    throw error;
  }
  const problems: string[] = [];
  for (const name of DOCUMENT_NAMES) {
    try {
      // One the run recorded and that is gone is the store's DocumentGoneError, naming it and the start record.
      await store.loadDocument(ref, name);
    } catch (error) {
      // A StoreError names the document; a file that cannot be read at all (a directory, no permission) is named here.
      problems.push(error instanceof StoreError ? error.message : `${store.describeDocument(ref, name)} cannot be read: ${(error as Error).message}`);
    }
  }
  return problems;
}

/** Checks every numbered keyframe: its seal, its step, and its chain hash against the log's at that step. */
async function checkKeyframes(store: RunStore, ref: RunRef, log: VerifyResult): Promise<KeyframeCheck[]> {
  const steps = await store.keyframeSteps(ref);
  const logName = store.describeLog(ref);
  if (steps.length === 0) return [];
  const checks = new Map<number, KeyframeCheck & { chain?: string }>();
  for (const step of steps) {
    const file = store.describeKeyframe(ref, step);
    try {
      const checkpoint = await store.loadKeyframe(ref, step);
      if (checkpoint === null) continue;
      if (checkpoint.step !== step || (checkpoint.state as unknown as KeyframeState | null)?.kind !== 'keyframe') {
        checks.set(step, { step, file, ok: false, problem: `${file} does not hold the keyframe of step ${step}` });
      } else checks.set(step, { step, file, ok: true, ...(checkpoint.chain !== undefined ? { chain: checkpoint.chain } : {}) });
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      checks.set(step, { step, file, ok: false, problem: error.message });
    }
  }
  // The chain hash of the batch holding each step's checkpoint.saved event, as far as the log vouches for it.
  const logChains = new Map<number, string | undefined>();
  for await (const { event, chain } of store.readVerified(ref, { onCorrupt: () => undefined, onWarning: () => undefined })) {
    if (!isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) continue;
    const step = event.payload.step;
    if (checks.has(step)) logChains.set(step, chain);
  }
  const out: KeyframeCheck[] = [];
  for (const check of [...checks.values()].sort((a, b) => a.step - b.step)) {
    const { chain, ...rest } = check;
    if (rest.ok && !logChains.has(rest.step)) {
      rest.ok = false;
      rest.problem = `${rest.file} holds step ${rest.step}, but ${logName} does not reach that step${log.chain === 'damaged' ? ' (it is damaged)' : ''}: the log was cut or damaged`;
    } else if (rest.ok && chain !== undefined && logChains.get(rest.step) !== undefined && logChains.get(rest.step) !== chain) {
      rest.ok = false;
      rest.problem = `${rest.file}: its chain hash is not the one ${logName} has at step ${rest.step}: it does not belong to this log`;
    } else if (rest.ok && chain !== undefined && log.chain === 'unverifiable') {
      // Keyframes record the log's chain hash since chain hashes exist: a log without any was stripped of them.
      rest.ok = false;
      rest.problem = `${rest.file} records the chain hash ${logName} had at step ${rest.step}, but the log carries no chain hash at all: its chain fields were removed`;
    }
    out.push(rest);
  }
  return out;
}
