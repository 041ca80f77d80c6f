import { createHash } from 'node:crypto';
import { decodeValue as decodeCodec, encodeValue as encodeCodec } from '../backpack/index.js';
import { isValidId, redactorFor, type Redactor } from '../store/index.js';

/** Bytes in the value codec's form, `{ "$bp": "typed", t: "Uint8Array", v: base64 }` (DESIGN D7). */
export type EncodedBytes = { $bp: 'typed'; t: 'Uint8Array'; v: string };

/**
 * How LangGraph values are kept in the event log: the saver's serializer (`serde.dumpsTyped`) gives a type and
 * bytes; JSON is stored as the JSON value itself (so the one redaction pass sees it, and `runs state` shows it),
 * any other type as its bytes in the value codec's form, which the redaction pass treats as bytes (their text
 * scanned when they hold text, never their base64: base64 of some lengths looks like a key). `{ t, b64 }` is the
 * form of earlier versions, still read (see {@link StoredValue}).
 */
export type EncodedValue = { t: 'json'; v: unknown } | { t: string; bytes: EncodedBytes };

/** What the log may hold: an {@link EncodedValue}, or `{ t, b64 }` (bytes as bare base64) of earlier versions. */
export type StoredValue = EncodedValue | { t: string; b64: string };

/** The part of LangGraph's `SerializerProtocol` the saver uses. */
export interface Serde {
  dumpsTyped(value: unknown): Promise<[string, Uint8Array]> | [string, Uint8Array];
  loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> | unknown;
}

/** Encodes `value` with `serde` for the log. */
export async function encodeValue(serde: Serde, value: unknown): Promise<EncodedValue> {
  const [type, bytes] = await serde.dumpsTyped(value);
  if (type === 'json') return { t: 'json', v: JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown };
  return { t: type, bytes: encodeBytes(bytes) };
}

/** `bytes` in the value codec's form (a Buffer or a Uint8Array alike). */
function encodeBytes(bytes: Uint8Array): EncodedBytes {
  return encodeCodec(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)) as EncodedBytes;
}

/** Decodes what {@link encodeValue} stored; `where` names the value in an error. */
export async function decodeValue(serde: Serde, encoded: StoredValue, where: string): Promise<unknown> {
  if (encoded === null || typeof encoded !== 'object' || typeof encoded.t !== 'string') {
    throw new TypeError(`${where}: not an encoded LangGraph value (expected { t, v } or { t, bytes })`);
  }
  if ('v' in encoded) return serde.loadsTyped('json', JSON.stringify(encoded.v));
  return serde.loadsTyped(encoded.t, bytesOf(encoded, where));
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The bytes of a value of a non-JSON type (either stored form); `where` names it in an error. */
function bytesOf(encoded: Exclude<StoredValue, { t: 'json'; v: unknown }>, where: string): Uint8Array {
  if ('bytes' in encoded) {
    let bytes: unknown;
    try {
      bytes = decodeCodec(encoded.bytes);
    } catch (error) {
      throw new TypeError(`${where}: the bytes of a value of type '${encoded.t}' do not decode: ${(error as Error).message}`);
    }
    if (bytes instanceof Uint8Array) return bytes;
  } else if (typeof encoded.b64 === 'string') {
    // Earlier versions' redaction took some base64 (40 characters) for a key and replaced it: say so, not wrong bytes.
    if (!BASE64.test(encoded.b64)) {
      throw new TypeError(`${where}: the stored bytes of type '${encoded.t}' are not base64 (${JSON.stringify(encoded.b64.slice(0, 40))}): redaction replaced them when an earlier version stored them; the value is lost`);
    }
    return new Uint8Array(Buffer.from(encoded.b64, 'base64'));
  }
  throw new TypeError(`${where}: an encoded value of type '${encoded.t}' needs bytes ({ "$bp": "typed", "t": "Uint8Array", "v": base64 })`);
}

/** The plain data of an encoded value, as the Backpack mirror holds it (bytes as a Uint8Array). */
export function plainValue(encoded: StoredValue): unknown {
  return 'v' in encoded ? encoded.v : bytesOf(encoded, 'plainValue');
}

const HASHED_PREFIX = 'lgt-';

/**
 * The backpackflow run id of a LangGraph thread: the thread id itself when it is a valid store id (letters,
 * digits, `_`, `-`, `.`, up to 128), does not start with `lgt-` and holds nothing `redactor` (default: the built-in
 * catalogue) takes for a secret; else `lgt-` and 40 hex digits of its SHA-256 ({@link threadDigest}), so that a
 * thread id such as a JWT or an API token used as a session id never becomes a directory name. The run records the
 * digest of the thread id it holds, and the saver refuses a run that holds another, so that two thread ids never
 * share a run silently.
 */
export function threadRunId(threadId: string, redactor: Redactor = redactorFor()): string {
  if (isValidId(threadId) && !threadId.startsWith('-') && !threadId.startsWith(HASHED_PREFIX) && !redactor.holdsSecret(threadId)) return threadId;
  return hashedRunId(threadDigest(threadId));
}

/** The run id of a thread whose id is not kept as it is, from its {@link threadDigest}. */
export function hashedRunId(digest: string): string {
  return HASHED_PREFIX + digest.slice(0, 40);
}

/**
 * The SHA-256 of a thread id, in hex: what a thread's run records to say which thread it holds. Its display copy of
 * the thread id is redacted like any payload, so it cannot decide identity when the id holds a secret.
 */
export function threadDigest(threadId: string): string {
  return createHash('sha256').update(threadId, 'utf8').digest('hex');
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
