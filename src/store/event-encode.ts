/**
 * The stored form of an event, shared by the run stores (files and Postgres): validated against the envelope, checked
 * against its run (runId, sessionKey, increasing seq), redacted, and serialized as one log line.
 */
import type { StreamEvent } from '../events/types.js';
import { isLargeJson, writeJsonPieces } from '../fs/index.js';
import type { RedactionResult, Redactor } from '../redact/index.js';
import { parseEvent, plainEnvelope, secretName, secretPlainName, type NameField } from './envelope.js';
import { EventStoreError, describeIssues } from './errors.js';

/** The run a line is encoded for, and how errors name its log. */
export interface EncodeTarget {
  sessionKey: string;
  runId: string;
  redactor: Redactor;
  /** The log, as errors name it (a path, or the run in a database). */
  where: string;
}

/**
 * The stored line of `event` (its JSON, without the newline) and its seq: text, or for an event with a large payload
 * the Buffers of its pieces, so that its whole text never exists at once; an {@link EventStoreError} naming the log and the field
 * when it is not a valid event of this run, its seq is not above `previousSeq`, or one of its names or ids (nodeId,
 * namespace, ...: see NAME_FIELDS) holds a secret (they are written as they are). `position` is added to messages
 * (e.g. ` 3 of the batch`). A `chain` field that comes with the event is dropped: chain hashes are the log's to set.
 */
export function encodeEvent(
  target: EncodeTarget,
  event: StreamEvent,
  previousSeq: number | undefined,
  position: string,
): { line: string | Buffer[]; seq: number } {
  const path = target.where;
  // What the runtime emits: checked as parseEvent checks it, written without building the stored event again. When
  // the redaction pass changes the payload or the payload is large, the general path below writes it.
  const plain = plainEnvelope(event);
  /** The redaction of the payload, when the quick path made it (the general path below takes it over). */
  let redaction: RedactionResult<Record<string, unknown>> | undefined;
  if (plain !== undefined && plain.runId === target.runId && (plain.sessionKey === undefined || plain.sessionKey === target.sessionKey) && (previousSeq === undefined || plain.seq > previousSeq)) {
    const named = secretPlainName(plain, target.redactor);
    if (named !== undefined) throw secretNameError(named, position, path);
    redaction = target.redactor.redact(plain.payload, 'payload');
    if (!redaction.redacted && !isLargeJson(plain.payload)) return { line: `${plain.head}${JSON.stringify(plain.payload)}}`, seq: plain.seq };
  }
  const parsed = parseEvent(event);
  if (!parsed.success) throw new EventStoreError(`invalid event${position}: ${describeIssues(parsed.error, '(event)')}`, { path });
  let valid = parsed.data;
  if (valid.chain !== undefined) {
    const { chain: _chain, ...rest } = valid;
    valid = rest;
  }
  if (valid.runId !== target.runId) {
    throw new EventStoreError(`event${position} belongs to run ${JSON.stringify(valid.runId)}, this log is run ${JSON.stringify(target.runId)}`, { path });
  }
  if (valid.sessionKey !== undefined && valid.sessionKey !== target.sessionKey) {
    throw new EventStoreError(`event${position} has sessionKey ${JSON.stringify(valid.sessionKey)}, this log is session ${JSON.stringify(target.sessionKey)}`, { path });
  }
  if (previousSeq !== undefined && valid.seq <= previousSeq) {
    throw new EventStoreError(`event${position} has seq ${valid.seq}, not greater than the last stored seq ${previousSeq}; continue from lastSeq + 1`, { path });
  }
  const named = secretName(valid, target.redactor);
  if (named !== undefined) throw secretNameError(named, position, path);
  // The quick check accepted this event, so parseEvent kept its payload as it is: its redaction is already made.
  const { value: payload, redacted } = redaction !== undefined && plain!.payload === valid.payload ? redaction : target.redactor.redact(valid.payload, 'payload');
  const stored: StreamEvent = redacted ? { ...valid, payload, redaction: { containsSecrets: true } } : valid;
  if (!isLargeJson(stored.payload)) return { line: JSON.stringify(stored), seq: valid.seq };
  const line: Buffer[] = [];
  writeJsonPieces(stored, (piece) => line.push(Buffer.from(piece)));
  return { line, seq: valid.seq };
}

/** The error for an event whose `field` (a name or id, written as it is) holds a secret; it does not quote the text. */
function secretNameError(field: NameField, position: string, path: string): EventStoreError {
  return new EventStoreError(
    `event${position} has a secret-looking ${field}: names and ids are written to the log as they are (never redacted), so they must not hold secrets; rename it`,
    { path },
  );
}
