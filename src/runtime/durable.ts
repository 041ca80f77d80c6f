import type { Backpack } from '../backpack/index.js';
import { StreamEventType, isEventOf, newRunId, type EventPayloadMap, type InterruptInfo, type StreamEvent } from '../events/index.js';
import { mapConcurrent, type StepBoundary } from '../flow/index.js';
import { InterruptAnswerError, type Flow } from '../nodes/index.js';
import { claimTopLevelRun, type TopLevelClaim } from '../nodes/flow.js';
import { packInRun } from '../backpack/backpack.js';
import { pauseInfo } from '../nodes/interrupt.js';
import {
  LockError,
  StoreError,
  emptyRunMeta,
  assertValidId,
  type Durability,
  type KeyframeInput,
  type RedactionOptions,
  type RunMeta,
  type RunRef,
  type RunStore,
  type RunWriter,
} from '../store/index.js';
import { valueKind } from '../fs/index.js';
import { locateStore, type RunLocation } from './location.js';
import { checkOptionNames, optionNames } from './option-names.js';
import { loadRunPoint, type CheckpointPayload, type RunPoint } from './run-point.js';
import { checkRecordedAnswer, pendingAnswers, questionText, storedQuestion } from './interrupts.js';
import { StateTracker } from './state-tracker.js';
import { foldModelDeltas, type ModelDeltaOptions } from './model-deltas.js';
import { blankSchemaSecrets, redactorFor, renewEnvironmentSecrets } from '../redact/index.js';
import { takeNewRun, type NewRun, type TakenRun } from './new-run.js';
import { checkFlowNames, checkRunIds } from './flow-names.js';
import { RunFolderError, lostConnection } from '../store/errors.js';

/**
 * Durable runs (DESIGN D16). A run's directory holds its event log, its projection and its checkpoints:
 *
 * - Every step boundary appends the step's events and one `checkpoint.saved` event, as one atomic batch with one
 *   fsync (durability 'batch'). That event holds the position (a stack of node ids, outermost first) and a
 *   structural delta of the keys the step changed, so checkpoint history grows with the work, not with steps × state.
 * - The start of a run (step 0, or the step a fork starts from) is a `checkpoint.saved` event with `start: true`
 *   whose delta is the whole state (from the empty state), written before the first node runs. No file is created
 *   for it: on a disk where creating a file costs a few hundred microseconds, that matters for short runs.
 * - The delta is found by identity (see StateTracker): only the keys committed since the last boundary are looked
 *   at, and only what changed in them is encoded, so a step costs what it changed, not the size of the state.
 * - Every `keyframeInterval` steps (later for a large state, see RunFlowOptions.keyframeInterval), once that step's
 *   batch is in the log, the whole state of that step is written to `checkpoint/<step>.json` (atomic: temp file,
 *   fsync, rename), in the background: the next steps do not wait for it. That one file per keyframe is the whole
 *   checkpoint: durable runs do not write `checkpoint.latest.json`; the newest keyframe is the highest step in
 *   `checkpoint/`.
 * - The state at step N is the last keyframe at or before N (or the empty state) plus the deltas after it; a resume
 *   starts from the last recorded step. A step that had not reached its boundary when the process died runs again.
 *   A keyframe is written after its step's batch, so no keyframe is ahead of the log. It records the log's chain
 *   hash at its step and is sealed with its checksum, so readers notice a keyframe that was damaged or edited.
 */

/** Options of {@link runFlow}. */
export interface RunFlowOptions extends RunLocation, ModelDeltaOptions {
  /** Run id (default: a new one). */
  runId?: string;
  /** Packed into the Backpack before the first step. */
  input?: Record<string, unknown>;
  /**
   * A run whose writer {@link openNewRun} took before its flow was built (to record its flow with it first): this run
   * takes it over. Its id, store, session, durability and redaction are the NewRun's: giving them here too is a
   * TypeError.
   */
  newRun?: NewRun;
  /** When writes reach the disk (default 'batch': one fsync per step). */
  durability?: Durability;
  /**
   * A full-state keyframe every this many steps (default 100). `loadRunPoint` and `resumeRun` start at the keyframe
   * at or before a step (seeking through the log's index) and replay only the steps after it, so this bounds their
   * cost: at step 999 of a 1,000-step run, 6.6 ms with 100 against 40 ms with 1000 (measured under load); a keyframe
   * file costs 0.3-0.6 ms to create on a slow disk, a few µs per step at this interval. When the state is large (the
   * last keyframe over 64 KB), a keyframe also waits until the log has grown by the last keyframe's size since it:
   * writing keyframes then costs no more than the log itself, and a replay reads no more than about one keyframe's
   * worth of events.
   */
  keyframeInterval?: number;
  /**
   * Stops the run before its next step (or inside a node that waits on it): the promise rejects with the signal's
   * reason, and the run is recorded `stopped` (not failed, no error counted), resumable with {@link resumeRun}.
   */
  signal?: AbortSignal;
}

/**
 * How a durable run's process ended: `completed`, or `waiting` for a person's answer (see `BackpackNode.interrupt`;
 * answer with `resumeRun(..., { resume })`). A failed run rejects with its error instead (the error, with its cause,
 * is what a caller needs; `listRuns` reports it as `failed`).
 */
export interface RunResult {
  runId: string;
  sessionKey: string;
  /** Where the run is stored: the data directory, or the database (its URL without the password). */
  dataDir: string;
  status: 'completed' | 'waiting';
  /** What the run waits for, when `status` is `waiting`: the node, its question and the answer's JSON Schema. */
  interrupt?: InterruptInfo;
  /**
   * The last action of the flow as `run.completed` records it and every reader shows it: `'default'` when the last node
   * returned none (as routing reads it); undefined while waiting.
   */
  action: string | undefined;
  /** Step number of the last step (steps of a resumed run continue the numbering). */
  steps: number;
}

const RUN_FLOW_OPTIONS = optionNames<RunFlowOptions>({ dataDir: true, sessionKey: true, redaction: true, store: true, modelDeltas: true, runId: true, input: true, newRun: true, durability: true, keyframeInterval: true, signal: true });
const RESUME_RUN_OPTIONS = optionNames<ResumeRunOptions>({ dataDir: true, sessionKey: true, redaction: true, store: true, modelDeltas: true, runId: true, resume: true, answering: true, durability: true, keyframeInterval: true, signal: true });
const FORK_RUN_OPTIONS = optionNames<ForkRunOptions>({ dataDir: true, sessionKey: true, redaction: true, store: true, modelDeltas: true, runId: true, atStep: true, newRunId: true, newRun: true, durability: true, keyframeInterval: true, signal: true });
const LIST_RUNS_OPTIONS = optionNames<ListRunsOptions>({ dataDir: true, sessionKey: true, redaction: true, store: true, persist: true });

/**
 * Runs `flow` durably: every event persisted, the projection kept current, a checkpoint at every step. A run id that
 * already has a recorded run is a {@link RunExistsError} (use {@link resumeRun} to continue it). `flow` must not have
 * run (a FlowError otherwise, with nothing written): the run records its whole start, which would be what another
 * run left; build a Flow for each run. A misspelt option is a TypeError naming it.
 */
export async function runFlow(flow: Flow, options: RunFlowOptions = {}): Promise<RunResult> {
  checkOptionNames(options, RUN_FLOW_OPTIONS, 'runFlow');
  const keyframeInterval = checkKeyframeInterval(options.keyframeInterval);
  const taken = options.newRun ? takeNewRun(options.newRun, { ...options }, 'runFlow') : undefined;
  const { store, sessionKey } = taken ?? locateStore(options);
  const runId = taken?.runId ?? options.runId ?? newRunId();
  // A NewRun's redaction is openNewRun's (its writer's): the runtime's own checks judge by it too.
  const redaction = taken ? taken.redaction : options.redaction;
  let claim: TopLevelClaim | undefined;
  try {
    // A run id that has events is refused by the writer's opening (fresh), before anything of that run is touched.
    if (!taken) {
      assertValidId(runId, 'runId');
      checkRunIds({ sessionKey, runId }, redaction);
    }
    // Names are logged unredacted: a flow whose names hold a secret is refused before anything of the run is written.
    checkFlowNames(flow, redaction);
    const input = options.input;
    if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) {
      throw new TypeError(`runFlow: input takes an object of backpack keys to values, got ${valueKind(input)}`);
    }
    claim = claimTopLevelRun(flow, 'runFlow', runId, true);
    // Packed as part of the run: their events carry its id (the log records the run's start as its first checkpoint).
    for (const [key, value] of Object.entries(input ?? {})) packInRun(flow.backpack, runId, key, value);
    // The start record holds the digests of the documents saved with the NewRun: those still being stored are awaited.
    await taken?.saved;
  } catch (error) {
    claim?.release();
    await taken?.writer.close();
    throw error;
  }
  return execute(flow, claim, { store, sessionKey, runId, durability: options.durability, keyframeInterval, signal: options.signal, redaction, modelDeltas: options.modelDeltas, writer: taken?.writer }, {
    step: 0,
    position: [],
    fresh: true,
  });
}

/** Replaces `flow`'s state with a recorded one for `claim`'s run; a state it refuses ends the claim (the run never starts). */
function restoreState(flow: Flow, state: RunPoint['state'], claim: TopLevelClaim): void {
  try {
    flow.backpack.importState(state);
  } catch (error) {
    claim.release();
    throw error;
  }
}

/** `keyframeInterval` (default 100), checked: a RangeError unless an integer >= 1. */
function checkKeyframeInterval(given: number | undefined): number {
  const keyframeInterval = given ?? 100;
  if (!Number.isInteger(keyframeInterval) || keyframeInterval < 1) throw new RangeError(`keyframeInterval must be an integer >= 1, got ${keyframeInterval}`);
  return keyframeInterval;
}

/** Options of {@link resumeRun}. */
export interface ResumeRunOptions extends RunLocation, ModelDeltaOptions {
  runId: string;
  /**
   * The answer to the interrupt a waiting run waits for: checked against its schema (an {@link InterruptAnswerError}
   * naming the JSON path, and the run keeps waiting), recorded, and returned by that `interrupt` call when the node
   * runs again from `prep`. Required for a waiting run, refused for any other.
   */
  resume?: unknown;
  /**
   * The pause `resume` answers ({@link InterruptInfo.pause}, as `listRuns`, `runs show` and a waiting run's result
   * give it): when the run now waits for another pause (another resume answered the one the person saw, and the run
   * asked something else), the answer is refused with a StoreError and nothing is written. Without it, the answer
   * goes to whatever the run waits for when it is read. Pass it whenever a person answers a question they were shown.
   */
  answering?: number;
  durability?: Durability;
  keyframeInterval?: number;
  signal?: AbortSignal;
}

/**
 * Continues a run that stopped (a crash, a failure, an abort), in this process or another: restores the Backpack
 * of its last recorded step into `flow` (built the same way as the original) and goes on from the recorded position,
 * nested flows included. A run whose log ends with the step that ended its flow (its writer died before the run's
 * end) is finished: no node runs, the flow's own `post` runs on that step's action, and the run's end (or the post's
 * failure) is recorded. Refuses a run that completed, and one whose log records an end after its last step (a run
 * that failed in its flow's post is not made completed).
 */
export async function resumeRun(flow: Flow, options: ResumeRunOptions): Promise<RunResult> {
  checkOptionNames(options, RESUME_RUN_OPTIONS, 'resumeRun', { answer: 'resume' });
  const { store, sessionKey } = locateStore(options);
  assertValidId(options.runId, 'runId');
  // Names are logged unredacted: a flow rebuilt with a secret-looking name is refused before the run is touched.
  checkFlowNames(flow, options.redaction);
  const ref = { sessionKey, runId: options.runId };
  if (!(await store.hasEvents(ref))) throw new StoreError(`run ${sessionKey}/${options.runId} has no recorded events in ${store.location}: nothing to resume`);
  // What the log says, not what a stored projection says: they differ after a crash or a cut tail.
  const meta = await store.currentRunMeta(ref);
  if (meta.status === 'completed') {
    throw new StoreError(`run ${sessionKey}/${options.runId} already completed; fork it to run again from a step`);
  }
  const point = await loadRunPoint({ store, sessionKey, runId: options.runId });
  const target: ExecuteTarget = { store, sessionKey, runId: options.runId, durability: options.durability, keyframeInterval: checkKeyframeInterval(options.keyframeInterval), signal: options.signal, redaction: options.redaction, modelDeltas: options.modelDeltas, readAt: meta.lastSeq };
  if (point.position.length === 0) {
    // A live writer explains a log that ends after the flow's last step but before the run's end: it is being written.
    if (await store.writerAlive(ref)) {
      throw new LockError(`run ${sessionKey}/${options.runId} is being written by another process (it is ending): see where it stands with 'runs show ${options.runId}' once it is done`, { path: store.describeLog(ref) });
    }
    if (options.resume !== undefined) throw new StoreError(await notWaitingMessage(store, ref, meta, new Map()));
    // Only a run whose writer died after its last step's boundary and before its end: its log ends with that step
    // (what followed it, the flow's own post and the run's end, is not in the log). One that ended there (its flow's
    // post failed, or the run's end is recorded) is not continued.
    const ended = endAfterLastStep(await readLog(store, ref, point.line));
    if (ended !== undefined) {
      throw new StoreError(
        `run ${sessionKey}/${options.runId} ${ended} after its last step (${point.step}), which ended its flow: no step is left to run, and a resume does not ` +
          `turn that end into another; fork it to run again from a step (CLI: runs fork ${options.runId} --at <step>)`,
      );
    }
    if (point.action === undefined) {
      throw new StoreError(
        `run ${sessionKey}/${options.runId} is incomplete but has no step left to run: its last recorded step (${point.step}) ended the flow without recording ` +
          `the action it ended with (a log written before steps recorded it), so its end cannot be recorded; fork it to run again from a step`,
      );
    }
    // What the killed writer had left to do: the flow's own post, on the state and the action of its last step (no
    // node runs), then the run's end with the action the flow returns, or its failure.
    const claim = claimTopLevelRun(flow, 'resumeRun', options.runId, false);
    restoreState(flow, point.state, claim);
    return execute(flow, claim, target, { step: point.step, position: [], fresh: false, atEnd: point.action });
  }
  // What happened since the last recorded step: the pause, and the answers already given.
  const { answers, questions, waitingFor } = pendingAnswers(await readLog(store, ref, point.line));
  let answered: AnsweredInterrupt | undefined;
  if (options.answering !== undefined && !(Number.isSafeInteger(options.answering) && options.answering >= 0)) {
    throw new TypeError(`resumeRun: answering must be the seq of a pause (an integer >= 0), got ${String(options.answering)}`);
  }
  if (options.answering !== undefined && options.resume !== undefined && waitingFor?.pause !== options.answering) {
    throw new StoreError(staleAnswerMessage(ref, options.answering, meta.status === 'waiting' ? waitingFor : undefined));
  }
  if (meta.status === 'waiting' && waitingFor !== undefined) {
    if (options.resume === undefined) {
      throw new StoreError(`run ${sessionKey}/${options.runId} is waiting for an answer to node '${waitingFor.nodeId}' (${waitingFor.namespace}): pass it as resume (CLI: runs resume ${options.runId} --input <json>)`);
    }
    checkRecordedAnswer(waitingFor, options.resume, options.redaction);
    // The parts the answer's schema marks secret (writeOnly, format 'password': what the Studio masks) are blanked in
    // the log whatever their name or text; the node gets them in memory, and a later resume a RedactedAnswer.
    const recorded = blankSchemaSecrets(options.resume, waitingFor.schema);
    answered = { nodeId: waitingFor.nodeId, namespace: waitingFor.namespace, index: waitingFor.index, answer: recorded.value, ...(recorded.blanked ? { secret: true as const } : {}) };
    const list = answers.get(waitingFor.namespace) ?? [];
    list[waitingFor.index] = options.resume;
    answers.set(waitingFor.namespace, list);
    const asked = questions.get(waitingFor.namespace) ?? [];
    asked[waitingFor.index] = questionText(waitingFor);
    questions.set(waitingFor.namespace, asked);
  } else if (options.resume !== undefined) {
    throw new StoreError(await notWaitingMessage(store, ref, meta, answers));
  }
  const claim = claimTopLevelRun(flow, 'resumeRun', options.runId, false);
  restoreState(flow, point.state, claim);
  // Everything above read the log before this resume held its writer: confirmed under the writer's lock (readAt).
  return execute(flow, claim, target, {
    step: point.step,
    position: point.position,
    fresh: false,
    answers,
    questions,
    answered,
  });
}

/**
 * RunControls.sameQuestion of a resume: an answer answers the question a node asks now when that question, stored as
 * the log stores it, is the one recorded with the answer (none recorded: it answers its position, as before).
 */
function sameQuestion(questions: ReadonlyMap<string, readonly string[]> | undefined, redaction: RedactionOptions | undefined): ((namespace: string, index: number, question: unknown) => boolean) | undefined {
  if (questions === undefined || questions.size === 0) return undefined;
  return (namespace, index, question) => {
    const recorded = questions.get(namespace)?.[index];
    return recorded === undefined || storedQuestion(question as InterruptInfo, redaction) === recorded;
  };
}

/** Why an answer to pause `answering` is refused: the run waits for another pause now (`now`), or for none. */
function staleAnswerMessage(ref: RunRef, answering: number, now: InterruptInfo | undefined): string {
  const run = `run ${ref.sessionKey}/${ref.runId}`;
  const where = now === undefined ? 'it waits for no answer now' : `it now waits for pause ${now.pause} (node '${now.nodeId}', ${now.namespace}), another question`;
  return (
    `${run}: the answer is to pause ${answering}, but ${where}: another resume answered that pause and the run went on. Nothing was written; ` +
    `read where it stands ('runs show ${ref.runId}') and answer the question it asks now`
  );
}

/**
 * Why a resume with an answer is refused for a run that waits for none, with the run's status as {@link listRuns}
 * gives it (`running` only while a live writer holds it, else `stopped`).
 */
async function notWaitingMessage(store: RunStore, ref: RunRef, meta: RunMeta, answers: ReadonlyMap<string, readonly unknown[]>): Promise<string> {
  const run = `run ${ref.sessionKey}/${ref.runId}`;
  const without = `resume it without an answer (CLI: runs resume ${ref.runId})`;
  if (meta.status === 'waiting') {
    // It waited when this resume read it, and its answer was in the log when it read on: another resume answered it.
    return `${run} was waiting, but another resume recorded an answer to it meanwhile: see where it stands ('runs show ${ref.runId}'), and ${without} if it still needs it`;
  }
  const status = await listedStatus(store, ref, meta);
  const recorded = [...answers.keys()];
  if (recorded.length > 0) {
    return `${run} is ${status}: its answer (to ${recorded.join(', ')}) was already recorded by an earlier resume, and the node gets it again when it runs: ${without}`;
  }
  return `${run} is ${status}, not waiting for an answer: ${without}`;
}

/** A run's status as listings give it: `running` in the record, but no live writer holds it, is `stopped`. */
async function listedStatus(store: RunStore, ref: RunRef, meta: RunMeta): Promise<RunMeta['status']> {
  return meta.status === 'running' && !(await store.writerAlive(ref)) ? 'stopped' : meta.status;
}

/** The run's events from line `from` on (through the index), as far as its log's chain vouches for them. */
async function readLog(store: RunStore, ref: RunRef, from: number): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const { event } of store.readVerified(ref, { from: Math.max(0, from) })) out.push(event);
  return out;
}

/** Options of {@link forkRun}. */
export interface ForkRunOptions extends RunLocation, ModelDeltaOptions {
  /** The recorded run to fork. */
  runId: string;
  /** The step whose state and position the new run starts from. */
  atStep: number;
  /** Id of the new run (default: a new one). */
  newRunId?: string;
  /**
   * The new run, its writer taken by {@link openNewRun} before its flow was built (to record its flow with it first):
   * the fork takes it over, and the recorded run is read from its store and session. Its id, store, session,
   * durability and redaction are the NewRun's: giving them here too (`newRunId` included) is a TypeError.
   */
  newRun?: NewRun;
  durability?: Durability;
  keyframeInterval?: number;
  signal?: AbortSignal;
}

/**
 * Starts a new run from a recorded step of another: the Backpack and position of that step, into `flow`. The
 * recorded run is never touched (time travel creates, it does not rewrite). A `newRunId` that already has a recorded
 * run is a {@link RunExistsError}.
 */
export async function forkRun(flow: Flow, options: ForkRunOptions): Promise<RunResult> {
  checkOptionNames(options, FORK_RUN_OPTIONS, 'forkRun', { step: 'atStep' });
  const keyframeInterval = checkKeyframeInterval(options.keyframeInterval);
  const taken = options.newRun ? takeNewRun(options.newRun, { ...options }, 'forkRun') : undefined;
  const { store, sessionKey } = taken ?? locateStore(options);
  const runId = taken?.runId ?? options.newRunId ?? newRunId();
  // A NewRun's redaction is openNewRun's (its writer's): the runtime's own checks judge by it too.
  const redaction = taken ? taken.redaction : options.redaction;
  let point: Awaited<ReturnType<typeof loadRunPoint>>;
  let claim: TopLevelClaim | undefined;
  try {
    if (runId === options.runId) throw new StoreError(`a fork needs a run id of its own, not ${runId}`);
    const atStep: unknown = options.atStep;
    if (!Number.isSafeInteger(atStep) || (atStep as number) < 0) {
      throw new TypeError(`forkRun: atStep (the step the fork starts from) must be an integer >= 0, got ${typeof atStep === 'number' ? atStep : valueKind(atStep)}`);
    }
    // Names are logged unredacted: a flow whose names hold a secret is refused before anything of the run is written.
    checkFlowNames(flow, redaction);
    point = await loadRunPoint({ store, sessionKey, runId: options.runId, step: options.atStep });
    if (point.position.length === 0) throw new StoreError(`run ${sessionKey}/${options.runId} had ended at step ${options.atStep}: nothing to run from there`);
    // A run id that has events is refused by the writer's opening (fresh), before anything of that run is touched.
    if (!taken) {
      assertValidId(runId, 'runId');
      checkRunIds({ sessionKey, runId }, redaction);
    }
    claim = claimTopLevelRun(flow, 'forkRun', runId, false);
    flow.backpack.importState(point.state);
    await taken?.saved;
  } catch (error) {
    claim?.release();
    await taken?.writer.close();
    throw error;
  }
  return execute(flow, claim!, { store, sessionKey, runId, durability: options.durability, keyframeInterval, signal: options.signal, redaction, modelDeltas: options.modelDeltas, writer: taken?.writer }, {
    step: point.step,
    position: point.position,
    fresh: true,
    forkedFrom: { runId: options.runId, step: point.step },
  });
}

/** Options of {@link listRuns} and {@link listedRun}. */
export interface ListRunsOptions extends RunLocation {
  /**
   * Store each projection brought up to date (default true). A reader beside live writers (the studio) passes false:
   * a projection it stored could land after the writer's own.
   */
  persist?: boolean;
}

/**
 * How many runs {@link listRuns} reads at a time. Each run is a few small reads (its projection, the end of its log,
 * its batch marker, its lock), each a round trip to the thread pool or the database: one run after another, a
 * listing of 500 runs spent most of its 1.4 s waiting.
 */
const LIST_CONCURRENCY = 16;

/** Projections of the stored runs (of one session, or of all), oldest first. */
export async function listRuns(options: ListRunsOptions = {}): Promise<RunMeta[]> {
  checkOptionNames(options, LIST_RUNS_OPTIONS, 'listRuns');
  const store = locateStore({ ...options, sessionKey: options.sessionKey ?? 'default' }).store;
  const metas = await mapConcurrent(await store.listRuns(options.sessionKey), LIST_CONCURRENCY, (ref) => listedRunMeta(store, ref, options.persist !== false));
  const out = metas.filter((meta): meta is RunMeta => meta !== undefined);
  return out.sort((a, b) => a.startedAt - b.startedAt || a.runId.localeCompare(b.runId));
}

/** One run as {@link listRuns} lists it (status, `damaged`), or undefined when it has no events. */
export async function listedRun(options: ListRunsOptions & { runId: string }): Promise<RunMeta | undefined> {
  const { store, sessionKey } = locateStore(options);
  assertValidId(options.runId, 'runId');
  return listedRunMeta(store, { sessionKey, runId: options.runId }, options.persist !== false);
}

/**
 * One run of {@link listRuns}: its projection as its log stands, or, when the log cannot be read, the stored
 * projection (or an empty one) marked `damaged` with the error naming the file, so that one damaged run never
 * breaks the listing. Undefined for a run without events (a start that never got to its first event).
 */
async function listedRunMeta(store: RunStore, ref: RunRef, persist: boolean): Promise<RunMeta | undefined> {
  try {
    const warnings: string[] = [];
    let meta = await store.currentRunMeta(ref, (w) => warnings.push(w), { persist });
    if (warnings.length > 0) meta = { ...meta, damaged: warnings.join('; ') };
    // 'running' in the record, but no live writer holds the run: its writer died or was stopped mid-run.
    const status = await listedStatus(store, ref, meta);
    return status === meta.status ? meta : { ...meta, status };
  } catch (error) {
    // A file of the run vanished while it was read: deleted meanwhile by another process (a delete renames the run's
    // folder away), which the checks below tell from damage.
    if (!(error instanceof StoreError) && (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    // A run folder that is a link to elsewhere, or not a folder: listed as damaged (naming it), never read through.
    if (error instanceof RunFolderError) return { ...emptyRunMeta(ref.sessionKey, ref.runId), damaged: error.message };
    const stored = await store.loadRunMeta(ref).catch(() => null);
    if (!(await store.hasEvents(ref))) {
      // No events and nothing that says there were: a start that never got to its first event, not a run.
      if (stored === null || stored.eventCount === 0) return undefined;
      return { ...stored, damaged: `${store.describeLog(ref)} is empty or missing, but the run's projection records ${stored.eventCount} events` };
    }
    return { ...(stored ?? emptyRunMeta(ref.sessionKey, ref.runId)), damaged: (error as Error).message };
  }
}

interface ExecuteTarget extends ModelDeltaOptions {
  store: RunStore;
  sessionKey: string;
  runId: string;
  durability: Durability | undefined;
  keyframeInterval: number;
  signal: AbortSignal | undefined;
  redaction: RedactionOptions | undefined;
  /** The run's writer when a {@link NewRun} took it already (a fresh run only). */
  writer?: TakenRun['writer'];
  /**
   * A resume: the seq of the last event of the log its checks and its start point were read from (before it held
   * the writer). Another writer that got the run between those reads and this one's lock moved it on: the resume is
   * refused, nothing written, rather than continued from a point the log has left behind.
   */
  readAt?: number;
}

interface StartPoint {
  step: number;
  position: string[];
  /** A new run (record its start state first), or one that continues its own log. */
  fresh: boolean;
  forkedFrom?: { runId: string; step: number };
  /** Answers to the interrupts of the nodes at the position (a resume). */
  answers?: ReadonlyMap<string, readonly unknown[]>;
  /** The question each answer was given to, as stored (see storedQuestion): a node asking another is asked again. */
  questions?: ReadonlyMap<string, readonly string[]>;
  /** The answer this resume gives, recorded before the node runs again. */
  answered?: AnsweredInterrupt;
  /**
   * A resume of a run whose last step ended its flow: the action that step recorded (no node runs; the flow's own
   * post runs on it, see FlowRunOptions.resumeAtEnd).
   */
  atEnd?: string;
}

/** Payload of an `interrupt.answered` event. */
interface AnsweredInterrupt {
  nodeId: string;
  namespace: string;
  index: number;
  answer: unknown;
  /** The answer's schema marked parts of it secret: they are blanked in `answer`. */
  secret?: true;
}

/** A keyframe larger than this spaces the next one by its size (see RunFlowOptions.keyframeInterval). */
const LARGE_KEYFRAME_BYTES = 64 * 1024;

/**
 * The run's single writer (or the one a NewRun took): refuses a fresh run whose id has events (a RunExistsError, the
 * run untouched; on Postgres within the statement that takes the lease, no round trip of its own) and continues a
 * resumed run's projection from the whole log. A resume whose run moved on since it read it (`readAt`) is refused,
 * nothing written.
 */
async function takeWriter(target: ExecuteTarget, fresh: boolean): Promise<RunWriter> {
  const { store, sessionKey, runId } = target;
  const writer = target.writer ?? await store.openWriter({ sessionKey, runId }, { fresh, existing: !fresh, durability: target.durability ?? 'batch', redaction: target.redaction });
  if (target.readAt !== undefined && (writer.lastSeq ?? -1) !== target.readAt) {
    const now = writer.lastSeq ?? -1;
    await writer.close();
    throw new StoreError(
      `run ${sessionKey}/${runId} moved on while this resume was starting: its log ended at seq ${target.readAt} when the resume read it, ` +
        `and at seq ${now} once it held the run (another process resumed it meanwhile). Nothing was written; see where it stands ` +
        `('runs show ${runId}') and resume it again if it still needs it`,
    );
  }
  return writer;
}

/**
 * Runs `flow` as `claim`'s run (see claimTopLevelRun) from `start`, wired to the stores: events in, checkpoints at step
 * boundaries, projection, and the writer lock. The claim ends with it.
 */
function execute(flow: Flow, claim: TopLevelClaim, target: ExecuteTarget, start: StartPoint): Promise<RunResult> {
  return executeClaimed(flow, claim, target, start).finally(claim.release);
}

async function executeClaimed(flow: Flow, claim: TopLevelClaim, target: ExecuteTarget, start: StartPoint): Promise<RunResult> {
  const { store, sessionKey, runId, keyframeInterval } = target;
  // Secret-named environment variables set since the last run (dotenv loaded late, a vault's secret) are known to
  // this run's redaction (see Redactor.renewEnvironment).
  renewEnvironmentSecrets();
  const writer = await takeWriter(target, start.fresh);
  const streamer = flow.eventStreamer;
  streamer.setNextSeq(runId, (writer.lastSeq ?? 0) + 1);

  const backpack: Backpack = flow.backpack;
  const tracker = new StateTracker(backpack, start.fresh, redactorFor(target.redaction));
  let buffer: StreamEvent[] = [];
  let step = start.step;
  const unsubscribe = streamer.on('*', (event) => {
    if (event.runId === runId) buffer.push(event);
  });
  // With deltas kept, a model call whose whole text holds a secret is folded all the same (see ModelDeltaStorage).
  const redactor = target.modelDeltas === 'keep' ? redactorFor(target.redaction) : undefined;
  const holdsSecret = (text: string): boolean => redactor!.redactText(text) !== text;
  /** The last batch given to the writer: the failure path finds out whether it was stored (see persistFailure). */
  let attempted: StreamEvent[] = [];
  /** Commits the buffered events as one step (events, projection; see RunWriter.commit). */
  const persist = (): Promise<void> => {
    // Not an async function (one promise less per step); a throw still becomes a rejection.
    try {
      const batch = target.modelDeltas === 'keep' ? foldModelDeltas(buffer, holdsSecret) : foldModelDeltas(buffer);
      buffer = [];
      if (batch.length === 0) return Promise.resolve();
      attempted = batch;
      return writer.commit(batch);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  /**
   * Keyframes are taken at the step boundary (the state, the log's chain and line, synchronously) and written off
   * the step's path, one after another, while the run goes on: a step does not wait for a file to be created. A
   * write that fails fails the run at the next keyframe or at its end; a keyframe a crash kept from being written
   * is only missing (readers use the previous one plus the deltas).
   */
  let keyframes: Promise<void> = Promise.resolve();
  let keyframeError: { error: unknown } | undefined;
  /** The last keyframe: its step, the log's size then, its own size. */
  const lastKeyframe = { step: start.step - (start.step % keyframeInterval), logBytes: 0, bytes: 0 };
  const keyframe = (position: string[]): void => {
    if (keyframeError) throw keyframeError.error;
    const input: KeyframeInput = { step, createdAt: Date.now(), position, state: { kind: 'keyframe', backpack: backpack.exportState() } as unknown as KeyframeInput['state'] };
    // Tied to the log as it stands now (its chain hash and the line of this step's checkpoint.saved event), and sized
    // now: the next keyframe is spaced by its size even while its write waits (a flow that never yields to the event
    // loop finishes no write before its end).
    const taken = writer.takeKeyframe(input);
    Object.assign(lastKeyframe, { step, logBytes: writer.byteLength, bytes: taken.bytes });
    keyframes = keyframes
      .then(() => taken.write())
      .catch((error: unknown) => {
        keyframeError ??= { error };
      });
  };
  const keyframesWritten = async (): Promise<void> => {
    await keyframes;
    if (keyframeError) throw keyframeError.error;
  };
  /**
   * The start of the record, right after `run.started` (the flow calls it then) and committed with it as one batch
   * before the first node runs (the flow awaits it): for a new run or a fork the whole state as one delta, for a
   * resume with an answer its `interrupt.answered`. So a node never acts on an answer the log does not hold (a crash
   * from then on resumes with it), and a start that cannot be stored fails the run before any node runs.
   */
  const recordStart = (): Promise<void> => {
    if (start.fresh) {
      const position = start.position.length ? start.position : entryPosition(flow);
      const delta = tracker.next();
      const payload: CheckpointPayload = { step, position, keyframe: false, start: true, ...(delta ? { delta } : {}), ...(start.forkedFrom ? { forkedFrom: start.forkedFrom } : {}) };
      // The digests of the documents stored with the run before it started (its flow config, its recipe), none
      // included: readers check a document against this record, and refuse one it does not name
      // (store/run-documents.ts).
      payload.documents = { ...writer.documents };
      streamer.emit({ type: StreamEventType.CHECKPOINT_SAVED, runId, payload });
    }
    if (start.answered) streamer.emit({ type: StreamEventType.INTERRUPT_ANSWERED, runId, nodeId: start.answered.nodeId, namespace: start.answered.namespace, payload: { ...start.answered } });
    return persist();
  };
  /** A step boundary: its checkpoint.saved event, the step's batch committed, and a keyframe when one is due. */
  const boundaryStep = (boundary: StepBoundary): Promise<void> => {
    step++;
    const position = boundary.next === undefined ? [] : [...boundary.path, boundary.next];
    const delta = tracker.next();
    // A keyframe every `keyframeInterval` steps, unless the last one was large and the log has grown by less than its
    // size since it: then later (see RunFlowOptions.keyframeInterval).
    const spacing = lastKeyframe.bytes > LARGE_KEYFRAME_BYTES ? lastKeyframe.bytes : 0;
    const isKeyframe = step - lastKeyframe.step >= keyframeInterval && writer.byteLength - lastKeyframe.logBytes >= spacing;
    // The flow's last step records the action it ended with: a resume records the run's end from it when its writer
    // died before `run.completed` (see recordEnd).
    const payload: CheckpointPayload = { step, position, keyframe: isKeyframe, ...(delta ? { delta } : {}), ...(boundary.next === undefined ? { action: boundary.action } : {}) };
    streamer.emit({ type: StreamEventType.CHECKPOINT_SAVED, runId, payload });
    const persisted = persist();
    return isKeyframe ? persisted.then(() => keyframe(position)) : persisted;
  };
  const onStep = (boundary: StepBoundary): Promise<void> | undefined => {
    // Not an async function: a step whose batch is committed when persist returns (see RunWriter.commit) makes no
    // promise of its own here. A throw still becomes a rejection.
    try {
      // The end of a nested flow is not a resumable position; its changes go with the enclosing node's boundary.
      if (boundary.next === undefined && boundary.path.length > 0) return undefined;
      return boundaryStep(boundary);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  /** The last batch given to the writer when the writer has not stored it (its commit failed), else undefined. */
  const unconfirmed = (): StreamEvent[] | undefined => {
    const last = attempted.at(-1);
    return last !== undefined && (writer.lastSeq ?? 0) < last.seq ? attempted : undefined;
  };
  /**
   * Whether `batch`, whose commit lost the store's connection, is in the log all the same (the commit went through and
   * only its reply was lost), or `{ unknown }` with the error that kept the log from being read again. Read by new
   * writers of the run, once this one is given up: the first fences off a commit still in flight (on Postgres its
   * lease takes a new fencing token, after that commit's transaction), the second reads the log as it stands after it.
   */
  const landed = async (batch: StreamEvent[]): Promise<boolean | { unknown: unknown }> => {
    await writer.close().catch(() => undefined);
    try {
      let lastSeq: number | undefined;
      for (let i = 0; i < 2; i++) {
        const again = await store.openWriter({ sessionKey, runId }, { fresh: false, existing: true, durability: target.durability ?? 'batch', redaction: target.redaction });
        lastSeq = again.lastSeq;
        await again.close();
      }
      return (lastSeq ?? 0) >= batch.at(-1)!.seq;
    } catch (unknown) {
      return { unknown };
    }
  };
  /** How messages name a batch: its seqs and event types. */
  const described = (events: StreamEvent[]): string =>
    events.length === 0 ? "the run's last events" : `the run's last events (seq ${events[0]!.seq}-${events.at(-1)!.seq}: ${[...new Set(events.map((e) => e.type))].join(', ')})`;
  /**
   * A commit of `batch` that lost the store's connection (`lost`, in its causes): a lost connection stops the run, it
   * is not the run's failure, and nothing more is written (no `run.failed`). Finds out whether the batch was stored
   * (see {@link landed}): 'ended' when it was and it ended the run (the run ended as recorded), else the error for the
   * caller, which says so ("may not have been stored" only when the log could not be read again), with `lost` as
   * its cause. The log has no seq gap either way: the next writer continues from the last stored event.
   */
  const stopped = async (batch: StreamEvent[], lost: Error, error: unknown): Promise<Error | 'ended'> => {
    const stored = await landed(batch);
    if (stored === true && ENDS_RUN.has(batch.at(-1)!.type)) return 'ended';
    const verdict =
      stored === true
        ? 'they were stored (only the reply to the commit was lost)'
        : stored === false
          ? 'they were not stored'
          : `they may not have been stored (reading the log again failed too: ${messageOf(stored.unknown)})`;
    const own = lostConnection(error) === undefined && (pauseInfo(error) === undefined || error instanceof InterruptAnswerError) ? ` The run had failed (${messageOf(error)}); that failure is not recorded.` : '';
    return new StoreError(
      `run ${sessionKey}/${runId} stopped: the connection to its store was lost while committing ${described(batch)} (${messageOf(lost)}); ${verdict}.${own} ` +
        `The run is stopped, not failed: nothing more was written, and it resumes from its last recorded step ('runs resume ${runId}')`,
      { cause: lost },
    );
  };

  /**
   * The failure path: what became of the last batch given to the writer, and the commit of the events left (the
   * failure's `run.failed` or `run.waiting` among them).
   * - A commit that lost the store's connection (this batch's or the one before, which ended the run): see
   *   {@link stopped}.
   * - A batch the store refused (an event the encoding or redaction cannot take, e.g. a payload nested too deep) is
   *   not in the log: the events after it continue from the writer's last seq, so the log has no seq gap. When the
   *   events left cannot be stored either, the run must not be left looking resumable with no error: a `run.failed`
   *   event alone records the failure and why the batch was lost.
   * Returns undefined when the run's end is recorded as it happened, 'ended' when the batch that ended the run was
   * stored though its commit failed, else the error for the caller (naming the events not stored and why, with the
   * run's own error, or the lost connection, as cause). Only on the failure path.
   */
  const persistFailure = async (error: unknown): Promise<Error | 'ended' | undefined> => {
    // The writer lost the run to another process (its lease ran out, see FileLock.confirm): it writes nothing more,
    // not even the failure, which is the new holder's run to record.
    if (error instanceof LockError) return error;
    const before = unconfirmed();
    const lostBefore = before === undefined ? undefined : lostConnection(error);
    if (before !== undefined && lostBefore !== undefined) return stopped(before, lostBefore, error);
    const next = (writer.lastSeq ?? 0) + 1;
    const shift = buffer.length > 0 ? buffer[0]!.seq - next : 0;
    if (shift > 0) buffer = buffer.map((event) => ({ ...event, seq: event.seq - shift }));
    const events = buffer;
    try {
      await persist();
      return undefined;
    } catch (lost) {
      const connection = lostConnection(lost);
      if (connection !== undefined) return stopped(events, connection, error);
      const last = events.at(-1);
      const reason = `${described(events)} could not be stored: ${messageOf(lost)}`;
      const failure = new StoreError(`run ${sessionKey}/${runId} failed (${messageOf(error)}), and ${reason}`, { cause: error });
      if (last === undefined || lost instanceof LockError) return failure;
      const run = last.type === StreamEventType.RUN_ERROR || last.type === StreamEventType.RUN_WAITING ? last : undefined;
      // The payload of a run.failed (an ErrorSummary, the run's duration and steps: the lost one's when it was one).
      const lostFailure = (run?.type === StreamEventType.RUN_ERROR ? run.payload : {}) as Partial<EventPayloadMap['run.failed']>;
      const payload: EventPayloadMap['run.failed'] & { unstored: string } = {
        durationMs: lostFailure.durationMs ?? 0,
        ...(lostFailure.steps !== undefined ? { steps: lostFailure.steps } : {}),
        error: { name: error instanceof Error ? error.name : 'Error', message: `${messageOf(error)} (${reason})` },
        unstored: reason,
      };
      const record: StreamEvent = {
        v: last.v,
        id: last.id,
        // Right after the last stored event: the batch that was not stored leaves no gap.
        seq: (writer.lastSeq ?? 0) + 1,
        timestamp: last.timestamp,
        runId,
        sessionKey: last.sessionKey,
        type: StreamEventType.RUN_ERROR,
        ...(run?.namespace !== undefined ? { namespace: run.namespace } : {}),
        ...(run?.spanId !== undefined ? { spanId: run.spanId } : {}),
        payload,
      };
      await writer.commit([record]).catch((again: unknown) => {
        failure.message += `; recording the failure failed too: ${messageOf(again)}`;
      });
      return failure;
    }
  };

  let action: string | undefined;
  try {
    const onStart = start.fresh || start.answered ? recordStart : undefined;
    action = await claim.run({ runId, signal: target.signal, onStart, onStep, resume: start.position.length ? [...start.position] : undefined, resumeAtEnd: start.atEnd === undefined ? undefined : { action: start.atEnd }, answers: start.answers, sameQuestion: sameQuestion(start.questions, target.redaction), forkedFrom: start.forkedFrom });
    await persist();
    await keyframesWritten();
    return { runId, sessionKey, dataDir: store.location, status: 'completed', action: action ?? 'default', steps: step };
  } catch (error) {
    // The keyframes taken are written (or failed) before the failure path may give the writer up (see landed).
    await keyframes;
    const unstored = await persistFailure(error);
    if (unstored === 'ended' && attempted.at(-1)!.type === StreamEventType.RUN_END) {
      // The run's end was stored, only the reply to its commit was lost: it completed.
      if (keyframeError) throw keyframeError.error;
      return { runId, sessionKey, dataDir: store.location, status: 'completed', action: action ?? 'default', steps: step };
    }
    if (unstored instanceof Error) throw unstored;
    // Paused for a person: the run is recorded as waiting (run.waiting is in the log, with what interrupt() captured:
    // flow.run passes on only the pauses of this run) and this process is done.
    const interrupt = pauseInfo(error);
    if (interrupt !== undefined && !(error instanceof InterruptAnswerError)) {
      if (keyframeError) throw keyframeError.error;
      // Named as readers of the log name it: by the seq of its run.waiting, the last event stored.
      const waiting = attempted.findLast((event) => event.type === StreamEventType.RUN_WAITING);
      return { runId, sessionKey, dataDir: store.location, status: 'waiting', interrupt: waiting === undefined ? interrupt : { ...interrupt, pause: waiting.seq }, action: undefined, steps: step };
    }
    throw error;
  } finally {
    unsubscribe();
    await writer.close();
  }
}

/**
 * How the events after a run's last checkpoint (`events`, that checkpoint first) say the run ended, for a message
 * ('failed (…)', 'completed', 'waited'), or undefined when they hold no run end: its writer died before it.
 */
function endAfterLastStep(events: readonly StreamEvent[]): string | undefined {
  for (const event of events) {
    if (isEventOf(event, StreamEventType.RUN_ERROR)) return `${event.payload.aborted === true ? 'was stopped' : 'failed'} (${event.payload.error?.message ?? 'no message recorded'})`;
    if (event.type === StreamEventType.RUN_END) return 'completed';
    if (event.type === StreamEventType.RUN_WAITING) return 'was recorded waiting';
  }
  return undefined;
}

/** An error's message (its name when it has none), or the thrown value as text. */
function messageOf(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}

/** The events that end a run's process: a batch ending with one, once stored, records how the run ended. */
const ENDS_RUN: ReadonlySet<string> = new Set([StreamEventType.RUN_END, StreamEventType.RUN_ERROR, StreamEventType.RUN_WAITING]);

function entryPosition(flow: Flow): string[] {
  return flow.entryNode ? [flow.entryNode.id] : [];
}
