import { generateId } from '../events/ids.js';

/** A new session key. */
export function newSessionKey(): string {
  return generateId('ses');
}

/** A new memory item id. */
export function newMemoryId(): string {
  return generateId('mem');
}
