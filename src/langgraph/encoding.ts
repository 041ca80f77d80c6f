import { createHash } from 'node:crypto';
import { isValidId } from '../store/index.js';

/**
 * How LangGraph values are kept in the event log: the saver's serializer (`serde.dumpsTyped`) gives a type and
 * bytes; JSON is stored as the JSON value itself (so the one redaction pass sees it, and `runs state` shows it),
 * anything else as base64.
 */
export type EncodedValue = { t: 'json'; v: unknown } | { t: string; b64: string };

/** The part of LangGraph's `SerializerProtocol` the saver uses. */
export interface Serde {
  dumpsTyped(value: unknown): Promise<[string, Uint8Array]> | [string, Uint8Array];
  loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> | unknown;
}

/** Encodes `value` with `serde` for the log. */
export async function encodeValue(serde: Serde, value: unknown): Promise<EncodedValue> {
  const [type, bytes] = await serde.dumpsTyped(value);
  if (type === 'json') return { t: 'json', v: JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown };
  return { t: type, b64: Buffer.from(bytes).toString('base64') };
}

/** Decodes what {@link encodeValue} stored; `where` names the value in an error. */
export async function decodeValue(serde: Serde, encoded: EncodedValue, where: string): Promise<unknown> {
  if (encoded === null || typeof encoded !== 'object' || typeof encoded.t !== 'string') {
    throw new TypeError(`${where}: not an encoded LangGraph value (expected { t, v } or { t, b64 })`);
  }
  if ('v' in encoded) return serde.loadsTyped('json', JSON.stringify(encoded.v));
  if (typeof encoded.b64 !== 'string') throw new TypeError(`${where}: an encoded value of type '${encoded.t}' needs b64`);
  return serde.loadsTyped(encoded.t, new Uint8Array(Buffer.from(encoded.b64, 'base64')));
}

/** The plain data of an encoded value, as the Backpack mirror holds it (bytes as a Uint8Array). */
export function plainValue(encoded: EncodedValue): unknown {
  return 'v' in encoded ? encoded.v : new Uint8Array(Buffer.from(encoded.b64, 'base64'));
}

const HASHED_PREFIX = 'lgt-';

/**
 * The backpackflow run id of a LangGraph thread: the thread id itself when it is a valid store id (letters,
 * digits, `_`, `-`, `.`, up to 128) and does not start with `lgt-`; else `lgt-` and 40 hex digits of its SHA-256.
 * The run records the thread id it holds, and the saver refuses a run that holds another, so that two thread ids
 * never share a run silently.
 */
export function threadRunId(threadId: string): string {
  if (isValidId(threadId) && !threadId.startsWith('-') && !threadId.startsWith(HASHED_PREFIX)) return threadId;
  return HASHED_PREFIX + createHash('sha256').update(threadId, 'utf8').digest('hex').slice(0, 40);
}

/**
 * The graph node a LangGraph task ran, from its task path (`~__pregel_pull, agent` for a node triggered by its
 * channels), or undefined for a task whose path does not name one (a `Send`, or a write made outside a task).
 */
export function nodeOfTaskPath(taskPath: string | undefined): string | undefined {
  const match = /^~__pregel_pull, (.+)$/.exec(taskPath ?? '');
  return match?.[1];
}

/** A node name as one namespace segment: characters outside `[A-Za-z0-9_-]` become `_`. */
export function namespaceSegment(name: string): string {
  const segment = name.replace(/[^A-Za-z0-9_-]/g, '_');
  return segment === '' ? '_' : segment;
}

/**
 * Whether a channel is mirrored into the Backpack state that `runs state/diff/blame` show: the graph's own state
 * channels, not LangGraph's internal ones (`__start__`, `__pregel_tasks`, `branch:to:node`, ...) nor names that are
 * not valid Backpack keys (an empty dot-separated segment).
 */
export function isMirroredChannel(channel: string): boolean {
  if (channel.startsWith('__') || channel.includes(':')) return false;
  return channel !== '' && !channel.split('.').includes('');
}
