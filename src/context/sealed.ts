import { ContextError } from './errors.js';
import type { HashBackend } from './hash.js';
import { openSealed } from '../hash/sealed.js';

/** The error for a store file that fails to parse or verify; `file` names it. */
export function corruptStoreFile(file: string, why: string): ContextError {
  return new ContextError('CORRUPT_STORE', `corrupt store file ${file}: ${why}`, { file });
}

export { seal } from '../hash/sealed.js';

/**
 * The data of a sealed JSON document, verified against its checksum; `file` names it in errors, which never quote
 * its text (JSON.parse's message does: the file may be anyone's, put in the store's place).
 */
export function unseal<T>(text: string, file: string, backend: HashBackend): T {
  const opened = openSealed(text, backend);
  if (!opened.ok) throw corruptStoreFile(file, opened.problem.startsWith('not valid JSON') ? 'not valid JSON' : opened.problem);
  return opened.data as T;
}
