/**
 * JSON files of a run sealed with their BLAKE3 checksum (keyframes, projections; see hash/sealed.ts): written
 * atomically, verified and validated on read. Files written before seals existed (plain JSON) still read.
 */
import { sharedHashBackend } from '../hash/blake3.js';
import { openSealed, sealJson } from '../hash/sealed.js';
import { NotRegularFileError, readTextIfExists, writeFileAtomic, type AtomicWriteOptions } from '../fs/index.js';
import { describeIssues } from './errors.js';

/** Writes `data` sealed, with {@link writeFileAtomic} and its `options`; resolves to its size in bytes. */
export function writeSealed(path: string, data: unknown, options: AtomicWriteOptions): Promise<number> {
  return writeSealedJson(path, JSON.stringify(data), options);
}

/** {@link writeSealed} of the data whose JSON is `body` (made by the caller when it must be taken at once). */
export async function writeSealedJson(path: string, body: string, options: AtomicWriteOptions): Promise<number> {
  const bytes = sealJson(body, await sharedHashBackend());
  await writeFileAtomic(path, bytes, options);
  return bytes.length;
}

/**
 * The sealed file at `path`, verified and validated with `schema`, or undefined when it does not exist. A file that
 * is not JSON, fails its checksum or does not fit the schema throws `corrupt(reason)`, the reason naming what is wrong.
 */
export async function readSealedIfExists<T>(
  path: string,
  schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> } } },
  corrupt: (reason: string) => Error,
): Promise<T | undefined> {
  let text: string | undefined;
  try {
    text = await readTextIfExists(path);
  } catch (error) {
    // A link or FIFO in its place is a damaged file like any other (the caller falls back: an earlier keyframe, the
    // projection rebuilt from the log), never read through or waited on.
    if (error instanceof NotRegularFileError) throw corrupt(`it is ${error.what}, not a regular file, and is not read`);
    throw error;
  }
  if (text === undefined) return undefined;
  const opened = openSealed(text, await sharedHashBackend(), true);
  if (!opened.ok) throw corrupt(opened.problem);
  const parsed = schema.safeParse(opened.data);
  if (!parsed.success) throw corrupt(describeIssues(parsed.error, '(root)'));
  return parsed.data;
}
