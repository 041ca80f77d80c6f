import { StreamEventType, type StreamEvent } from '../events/index.js';

/**
 * How a durable run stores a model's streamed tokens (`model.delta` events):
 *
 * - `'fold'` (default): the deltas of one model call in a step's batch are stored as one `model.delta` event holding
 *   the whole text (`folded: true`, `count` deltas, `index` of the first), at the position and seq of the last one.
 *   Subscribers (the live trace, OpenTelemetry) still see every delta as it arrives; only the stored log is folded.
 *   A streamed answer costs one line instead of one line per token (an envelope is ~250 bytes, a token ~4), and the
 *   one redaction pass sees the whole text, so a secret split across tokens is still found and redacted.
 * - `'keep'`: every delta is stored as it arrived (to replay the timing of a stream), except the deltas of a model
 *   call whose whole text holds a secret: those are folded, since a secret split across deltas escapes a redaction
 *   pass that sees one delta at a time.
 */
export type ModelDeltaStorage = 'fold' | 'keep';

/** The option of `runFlow`, `resumeRun` and `forkRun` that chooses {@link ModelDeltaStorage}. */
export interface ModelDeltaOptions {
  /** How streamed tokens are stored (default 'fold': one event per model call and step; see {@link ModelDeltaStorage}). */
  modelDeltas?: ModelDeltaStorage;
}

/** Payload of a folded `model.delta` event. */
export interface FoldedDeltaPayload {
  /** The call's number in its node (LlmNode numbers its calls; two calls made at once are folded apart). */
  call?: unknown;
  model?: unknown;
  purpose?: unknown;
  attempt?: unknown;
  /** Index of the first delta folded in. */
  index: number;
  /** How many deltas were folded in. */
  count: number;
  /** Their text, in order. */
  delta: string;
  folded: true;
  /** When the first of them arrived. */
  firstTimestamp: number;
}

/**
 * The batch with the `model.delta` events of each model call (same run, span, call, purpose and attempt) folded into one
 * (see {@link ModelDeltaStorage}), or only those of the calls whose whole text `fold` accepts. Other events keep
 * their order; a batch without deltas is returned as it is.
 */
export function foldModelDeltas(batch: StreamEvent[], fold: (text: string) => boolean = () => true): StreamEvent[] {
  if (!batch.some((e) => e.type === StreamEventType.MODEL_DELTA)) return batch;
  const groups = new Map<string, StreamEvent[]>();
  for (const event of batch) {
    if (event.type !== StreamEventType.MODEL_DELTA) continue;
    const p = event.payload;
    const key = JSON.stringify([event.runId, event.spanId ?? null, p['call'] ?? null, p['purpose'] ?? null, p['attempt'] ?? null]);
    const group = groups.get(key);
    if (group) group.push(event);
    else groups.set(key, [event]);
  }
  const folded = new Map<StreamEvent, StreamEvent | null>();
  for (const group of groups.values()) {
    const last = group.at(-1)!;
    for (const event of group) folded.set(event, null);
    if (group.length === 1) {
      folded.set(last, last);
      continue;
    }
    const first = group[0]!;
    const text = group.map((e) => (typeof e.payload['delta'] === 'string' ? e.payload['delta'] : '')).join('');
    if (!fold(text)) {
      for (const event of group) folded.set(event, event);
      continue;
    }
    const index = typeof first.payload['index'] === 'number' ? first.payload['index'] : 0;
    const payload: FoldedDeltaPayload = { ...last.payload, index, count: group.length, delta: text, folded: true, firstTimestamp: first.timestamp };
    folded.set(last, { ...last, payload: payload as unknown as Record<string, unknown> });
  }
  const out: StreamEvent[] = [];
  for (const event of batch) {
    const replacement = folded.get(event);
    if (replacement === undefined) out.push(event);
    else if (replacement !== null) out.push(replacement);
  }
  return out;
}
