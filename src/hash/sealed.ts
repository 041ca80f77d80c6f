/**
 * Sealed JSON documents: `{"checksum": <BLAKE3 hex of the data's JSON>, "data": ...}` and a newline. The context
 * store's files, the run keyframes and the run projections are written this way, so that a reader tells a damaged
 * or edited file from a good one.
 */
import type { HashBackend } from './blake3.js';

/** The sealed text of `data`. */
export function seal(data: unknown, backend: HashBackend): string {
  const body = JSON.stringify(data);
  return `{"checksum":"${backend.digest(Buffer.from(body)).toString('hex')}","data":${body}}\n`;
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
