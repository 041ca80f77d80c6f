/** Reading the lines of the event log and its index: pure helpers the writer, the readers and verify share. */
import type { StreamEvent } from '../events/types.js';
import { parseEvent } from './envelope.js';
import { describeIssues } from './errors.js';
import type { CorruptLine, IndexEntry } from './log-types.js';

/** The `seq` of a stored line, or undefined when it is not JSON with a numeric seq. */
export function seqOf(text: string): number | undefined {
  try {
    const seq = (JSON.parse(text) as { seq?: unknown }).seq;
    return typeof seq === 'number' ? seq : undefined;
  } catch {
    return undefined;
  }
}

/** The entries of an index file's text, up to the first that is not valid or not in order. */
export function parseIndex(text: string): IndexEntry[] {
  const entries: IndexEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      const e = JSON.parse(line) as IndexEntry;
      if (!Number.isInteger(e.line) || !Number.isInteger(e.offset) || typeof e.seq !== 'number') break;
      if (entries.length > 0 && (e.line <= entries[entries.length - 1]!.line || e.offset <= entries[entries.length - 1]!.offset)) break;
      entries.push({ line: e.line, offset: e.offset, seq: e.seq });
    } catch {
      break;
    }
  }
  return entries;
}

/**
 * The head of a line as the writer writes it: `JSON.stringify` of the validated envelope, whose fields come in
 * schema order (`v`, `id`, `seq`, `timestamp`, `runId`, optional `sessionKey`, then `type`), strings without escapes.
 */
const WRITTEN_HEAD = /^\{"v":1,"id":"[^"\\]*","seq":\d+,"timestamp":\d+,"runId":"[^"\\]*",(?:"sessionKey":"[^"\\]*",)?"type":"([a-z_.]+)"[,}]/;

/** How much of a line's head {@link writtenType} reads (the fields before `type` are short). */
const HEAD_BYTES = 512;

/**
 * The event type of a stored line (its bytes, without the newline) read without decoding it, when that is certain:
 * the line starts as the writer writes it and holds the bytes `"type":"` only once (so no later key, e.g. a duplicate
 * `type` that `JSON.parse` would take instead, can name another type). Undefined otherwise: the line must then be
 * decoded to know its type. It is not a validation: a line whose type is wanted is still decoded and validated whole.
 */
export function writtenType(line: Buffer): string | undefined {
  // latin1: one character per byte, so offsets match; bytes of UTF-8 sequences are never '"' or '\\'.
  const head = WRITTEN_HEAD.exec(line.toString('latin1', 0, Math.min(line.length, HEAD_BYTES)));
  if (head === null) return undefined;
  return line.indexOf('"type":"', head[0].length, 'latin1') === -1 ? head[1] : undefined;
}

/** A stored line (0-based `index`, at byte `offset`) as an event, or what makes it corrupt. */
export function decodeLine(text: string, index: number, offset: number): StreamEvent | CorruptLine {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { line: index + 1, offset, error: `not JSON (${(error as Error).message})` };
  }
  const parsed = parseEvent(json);
  if (!parsed.success) return { line: index + 1, offset, error: `not a valid event (${describeIssues(parsed.error, '(event)')})` };
  if (parsed.data.chain === undefined) return parsed.data;
  // The chain hash belongs to the log (its readers check it), not to the event.
  const { chain: _chain, ...event } = parsed.data;
  return event;
}
