import { ContextError } from './errors.js';
import type { HashBackend } from './hash.js';

/** The error for a store file that fails to parse or verify; `file` names it. */
export function corruptStoreFile(file: string, why: string): ContextError {
  return new ContextError('CORRUPT_STORE', `corrupt store file ${file}: ${why}`, { file });
}

/** Sealed JSON: `{"checksum": <BLAKE3 hex of the data's JSON>, "data": ...}` and a newline. */
export function seal(data: unknown, backend: HashBackend): string {
  const body = JSON.stringify(data);
  return `{"checksum":"${backend.digest(Buffer.from(body)).toString('hex')}","data":${body}}\n`;
}

/** The data of a sealed JSON document, verified against its checksum; `file` names it in errors. */
export function unseal<T>(text: string, file: string, backend: HashBackend): T {
  let doc: { checksum?: unknown; data?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch (error) {
    throw corruptStoreFile(file, `not valid JSON (${(error as Error).message})`);
  }
  const body = JSON.stringify(doc.data);
  if (typeof doc.checksum !== 'string' || body === undefined || backend.digest(Buffer.from(body)).toString('hex') !== doc.checksum) {
    throw corruptStoreFile(file, 'checksum mismatch');
  }
  return doc.data as T;
}
