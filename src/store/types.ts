import { z } from 'zod';
import { jsonProblem } from '../fs/index.js';

/** When writes reach the disk: fsync on every write (`'always'`), at step/batch boundaries (`'batch'`), or never. */
export type Durability = 'always' | 'batch' | 'never';

/** The durability in `options` (default `'batch'`); throws a TypeError naming `owner` for any other value. */
export function durabilityOf(options: { durability?: Durability }, owner: string): Durability {
  const value = options.durability ?? 'batch';
  if (value !== 'always' && value !== 'batch' && value !== 'never') {
    throw new TypeError(`${owner}: durability must be 'always', 'batch' or 'never', got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * JSON data, checked where it is rather than copied (`z.json()` builds a copy, and its copy drops a key named
 * `__proto__`): the value parsed is the value given, so a large keyframe is not copied either. An issue names the
 * path of the first thing that is not JSON.
 */
const JsonDataSchema = z.custom<z.core.util.JSONType>().superRefine((value, ctx) => checkJsonData(value, ctx));

/**
 * Metadata: an object of JSON data, typed `unknown` as it was before it was checked. A field whose value is
 * undefined passes (JSON leaves it out); a Map, Set or Date, which JSON would write as `{}` or a string, does not.
 */
const MetadataSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => checkJsonData(value, ctx, true));

function checkJsonData(value: unknown, ctx: z.RefinementCtx, undefinedFields = false): void {
  const path: (string | number)[] = [];
  const problem = jsonProblem(value, path, undefinedFields);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, path, input: value });
}

/**
 * A checkpoint of a run at a step boundary. `position` is the stack of node ids, outermost flow first, so a run
 * stopped inside a composite node's internal flow resumes there. `state` is opaque to the store: the runtime puts a
 * Backpack keyframe or a delta there; it must be JSON data and is kept as given (not copied). `redaction` says
 * whether secrets were replaced before it was written; `chain` is the event log's chain hash at this step, which
 * readers compare with the log.
 */
export const CheckpointSchema = z.object({
  v: z.literal(1),
  runId: z.string().min(1),
  sessionKey: z.string().min(1),
  step: z.number().int().nonnegative(),
  createdAt: z.number().int().nonnegative(),
  position: z.array(z.string()),
  state: JsonDataSchema,
  meta: z.record(z.string(), z.unknown()).optional(),
  redaction: z.object({ containsSecrets: z.boolean() }).optional(),
  /** The chain hash of the event log after this step's batch (see chain.ts): ties a keyframe to its log. */
  chain: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  /** The log line (0-based) of this step's `checkpoint.saved` event: readers start replaying there, through the index. */
  line: z.number().int().nonnegative().optional(),
});

/** A checkpoint as saved and loaded. */
export type Checkpoint = z.infer<typeof CheckpointSchema>;

/**
 * `CheckpointSchema.safeParse(value)`: the other fields are parsed (copied) by zod, and `state`, most of a keyframe,
 * is checked in place and kept as it is, own `__proto__` keys included.
 */
export function parseCheckpoint(value: unknown): ReturnType<typeof CheckpointSchema.safeParse> {
  return CheckpointSchema.safeParse(value);
}

/**
 * A long-term memory item. `id` is used as a file name, so it must be a valid id. `metadata` holds JSON data only: a
 * Map, Set, Date or class instance (which JSON would write as `{}` or a string) is refused, naming where it is.
 */
export const MemoryItemSchema = z.object({
  id: z.string().min(1),
  content: z.string(),
  keywords: z.array(z.string()).optional(),
  metadata: MetadataSchema.optional(),
  createdAt: z.number().int().nonnegative(),
  updatedAt: z.number().int().nonnegative().optional(),
});

/** A memory item as written and read. */
export type MemoryItem = z.infer<typeof MemoryItemSchema>;

/** Token counts summed over `model.completed` events. */
export const TokenUsageSchema = z.object({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  total: z.number().nonnegative(),
});

/**
 * The projection of one run's events (`projections/run.meta.json`), for listing runs without reading their logs.
 * `nodeIds` holds the distinct nodes started (namespace when the event has one, else node id), in first-start order;
 * it is what makes the incremental fold equal to the full fold.
 */
const RunSegmentSchema = z.object({
  startedAt: z.number(),
  endedAt: z.number().optional(),
  durationMs: z.number().optional(),
  /** How the segment ended; absent while it runs (or when its writer died: the listing says 'stopped'). */
  outcome: z.enum(['completed', 'failed', 'waiting']).optional(),
});

/** One process's stretch of a run: from a `run.started` to the run's end, failure or pause. */
export type RunSegment = z.infer<typeof RunSegmentSchema>;

const InterruptInfoSchema = z.object({
  nodeId: z.string(),
  namespace: z.string(),
  index: z.number().int().nonnegative(),
  payload: z.unknown(),
  schema: z.record(z.string(), z.unknown()).optional(),
  pause: z.number().int().nonnegative().optional(),
});

/**
 * A run's status (DESIGN D16): `running` (a live writer holds it), `waiting` (paused for a person's answer),
 * `stopped` (its writer died or was aborted mid-run: resumable; only listings say it, from the writer lock),
 * `completed`, `failed`.
 */
export const RunStatusSchema = z.enum(['running', 'waiting', 'stopped', 'completed', 'failed']);

/** The schema of a run's projection (`projections/run.meta.json`, {@link RunMeta}): what `runs list` and `runs show` read. */
export const RunMetaSchema = z.object({
  v: z.literal(1),
  runId: z.string().min(1),
  sessionKey: z.string().min(1),
  status: RunStatusSchema,
  /** When the run first started (kept across resumes). */
  startedAt: z.number(),
  endedAt: z.number().optional(),
  /** The time the run ran: the sum of its segments. */
  durationMs: z.number().optional(),
  /** Each stretch a process ran it, in order (a resume starts a new one). */
  segments: z.array(RunSegmentSchema).optional(),
  /** What a waiting run waits for. */
  interrupt: InterruptInfoSchema.optional(),
  /** The run and step a fork started from. */
  forkedFrom: z.object({ runId: z.string(), step: z.number().int() }).optional(),
  updatedAt: z.number(),
  lastSeq: z.number().int(),
  eventCount: z.number().int().nonnegative(),
  /** Node executions that completed (`node.completed` events; a composite's inner nodes count too): not a step number. */
  stepCount: z.number().int().nonnegative(),
  /**
   * The last step recorded (the number `loadRunPoint`, `runs state --step` and `runs fork --step` take; a resumed
   * run's steps go on from its earlier ones); absent before the first step boundary, and in projections stored
   * before it existed.
   */
  lastStep: z.number().int().nonnegative().optional(),
  nodeCount: z.number().int().nonnegative(),
  nodeIds: z.array(z.string()),
  toolCallCount: z.number().int().nonnegative(),
  errorCount: z.number().int().nonnegative(),
  tokenUsage: TokenUsageSchema,
  lastNodeId: z.string().optional(),
  error: z.string().optional(),
  /**
   * Set only in listings (never stored), when the run's files cannot be read: what is wrong, naming the file. The
   * other fields are then those of the stored projection, or of an empty one.
   */
  damaged: z.string().optional(),
});

/** Metadata of a run, folded from its events. */
export type RunMeta = z.infer<typeof RunMetaSchema>;
