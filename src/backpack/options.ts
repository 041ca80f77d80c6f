/** Options of a Backpack and their defaults. */
import { BackpackError } from './errors.js';
import type { BackpackOptions } from './types.js';
import { NO_TAGS, type HistoryLimits } from './history.js';

/** Options after defaults (everything but the event sink is serialized with the Backpack). */
export interface ResolvedOptions extends HistoryLimits {
  maxValueBytes: number;
  strictMode: boolean;
  recordReads: boolean;
}

/** Defaults of {@link BackpackOptions}. */
export const DEFAULT_OPTIONS: Readonly<ResolvedOptions> = Object.freeze({
  maxHistorySize: 10_000,
  maxHistoryBytes: 50 * 1024 * 1024,
  maxValueBytes: 100 * 1024,
  strictMode: false,
  keyframeInterval: 100,
  recordReads: true,
});

/** Validates `options` and fills in defaults; throws BackpackError naming a malformed option. */
export function resolveOptions(options: BackpackOptions | undefined): Readonly<ResolvedOptions> {
  const resolved = { ...DEFAULT_OPTIONS };
  if (options === undefined) return Object.freeze(resolved);
  if (typeof options !== 'object' || options === null) throw new BackpackError('Backpack options must be an object');
  if ((options as { enableAccessControl?: unknown }).enableAccessControl === false) {
    // BackpackFlow v2's switch: here access control always applies, and a node that declares no rules is not restricted.
    throw new BackpackError('Backpack option enableAccessControl is gone: access control always applies, and a node that declares no permissions is not restricted (see MIGRATING.md)');
  }
  for (const name of ['maxHistorySize', 'maxHistoryBytes', 'maxValueBytes', 'keyframeInterval'] as const) {
    const v = options[name];
    if (v === undefined) continue;
    const min = name === 'maxHistorySize' || name === 'maxHistoryBytes' ? 0 : 1;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
      throw new BackpackError(`Backpack option '${name}' must be an integer >= ${min}, got ${String(v)}`);
    }
    resolved[name] = v;
  }
  for (const name of ['strictMode', 'recordReads'] as const) {
    const v = options[name];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw new BackpackError(`Backpack option '${name}' must be a boolean, got ${String(v)}`);
    resolved[name] = v;
  }
  const sink = options.eventStreamer;
  if (sink !== undefined && (typeof sink !== 'object' || sink === null || typeof sink.emit !== 'function')) {
    throw new BackpackError("Backpack option 'eventStreamer' must have an emit(event) method");
  }
  return Object.freeze(resolved);
}


/**
 * Validates the tags of a pack of `key` and returns a frozen copy. The copy is taken first, one read of the length and
 * one of each element, and the copy is what is checked and stored: a getter or a Proxy that answers strings to a check
 * and something else to a second read never gets an object into an item's tags (where it would run in the execution
 * of whichever node touched the tag later).
 */
export function checkTags(key: string, tags: unknown): readonly string[] {
  if (tags === undefined) return NO_TAGS;
  if (!Array.isArray(tags)) throw new BackpackError(`Cannot pack key '${key}': tags must be an array of strings`, { key });
  const length: unknown = tags.length;
  // An array's length is a safe integer; a Proxy's may be anything.
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) throw new BackpackError(`Cannot pack key '${key}': tags must be an array of strings`, { key });
  if (length === 0) return NO_TAGS;
  const copy: unknown[] = [];
  for (let i = 0; i < length; i++) copy.push((tags as unknown[])[i]);
  const bad = copy.findIndex((t) => typeof t !== 'string');
  if (bad >= 0) throw new BackpackError(`Cannot pack key '${key}': tags must be an array of strings (tag ${bad} is not)`, { key });
  return Object.freeze(copy as string[]);
}
