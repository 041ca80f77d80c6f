/**
 * Sealed JSON documents: `{"checksum": <BLAKE3 hex of the data's JSON>, "data": ...}` and a newline. The context
 * store's files, the run keyframes and the run projections are written this way, so that a reader tells a damaged
 * or edited file from a good one.
 */
import type { HashBackend } from './blake3.js';

/** The sealed text of `data`. */
export function seal(data: unknown, backend: HashBackend): string {
  return sealText(JSON.stringify(data), backend);
}

/** The sealed text of the data whose JSON is `body`. */
export function sealText(body: string, backend: HashBackend): string {
  return `{"checksum":"${backend.digest(Buffer.from(body)).toString('hex')}","data":${body}}\n`;
}

/** What comes before the checksum's hex and between it and the data in a sealed document. */
const BEFORE_CHECKSUM = '{"checksum":"';
const BEFORE_DATA = '","data":';
const DATA_AT = BEFORE_CHECKSUM.length + 64 + BEFORE_DATA.length;

/** The size of the sealed document of data whose JSON is `length` long (bytes or characters alike: the rest is ASCII). */
export function sealedSize(length: number): number {
  return DATA_AT + length + 2;
}

/**
 * The sealed document of the data whose JSON is `body`, as UTF-8 bytes: the same bytes as {@link seal}'s text. The
 * JSON is encoded once, into the Buffer that is hashed and written (a keyframe of a large state is hundreds of
 * kilobytes).
 */
export function sealJson(body: string, backend: HashBackend): Buffer {
  const length = Buffer.byteLength(body);
  const out = Buffer.allocUnsafe(DATA_AT + length + 2);
  out.write(body, DATA_AT);
  out.write('}\n', DATA_AT + length, 'latin1');
  const checksum = backend.digest(out.subarray(DATA_AT, DATA_AT + length)).toString('hex');
  out.write(`${BEFORE_CHECKSUM}${checksum}${BEFORE_DATA}`, 0, 'latin1');
  return out;
}

/** What {@link openSealed} found. */
export type Unsealed = { ok: true; data: unknown; sealed: boolean } | { ok: false; problem: string };

/**
 * Parses and verifies a sealed document. With `legacy`, a JSON document that is not sealed (written before seals
 * existed) is accepted as it is, with `sealed: false`; without it, that is a problem.
 */
export function openSealed(text: string, backend: HashBackend, legacy = false): Unsealed {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: `not valid JSON (${(error as Error).message})` };
  }
  const isSealed = doc !== null && typeof doc === 'object' && !Array.isArray(doc) && Object.keys(doc).join(',') === 'checksum,data';
  if (!isSealed) return legacy ? { ok: true, data: doc, sealed: false } : { ok: false, problem: 'checksum mismatch' };
  const { checksum, data } = doc as { checksum: unknown; data: unknown };
  const body = JSON.stringify(data);
  if (typeof checksum !== 'string' || body === undefined || backend.digest(Buffer.from(body)).toString('hex') !== checksum) {
    return { ok: false, problem: 'checksum mismatch' };
  }
  return { ok: true, data, sealed: true };
}
