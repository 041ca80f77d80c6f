/**
 * The documents kept with a run (its flow config, its recipe: `flow.json` and `run.recipe.json` beside the log, or
 * rows beside it in Postgres) are tied to its log, as keyframes are: the writer that stores one keeps the BLAKE3 of
 * the text it stored, and the run's start record (the `checkpoint.saved` event with `start: true` in the log's first
 * batch, which the chain covers) carries those digests as `documents`. A reader hashes the text it finds and compares:
 * a document changed or replaced after the run recorded it is an error naming it, never a different flow served in
 * silence; so is a document the start record does not name (added after the run started, or left by an earlier start
 * of the id that never ran). A run without a start record (none yet: a queued start) or whose start record has no
 * `documents` (written before documents were tied to the log) has nothing to check them against: its documents are
 * served as found.
 *
 * Like the chain, the digests have no key: they prove a document unchanged against damage and edits by hand, not
 * against someone who also rewrites the log and recomputes its hashes.
 */
import { isEventOf } from '../events/types.js';
import { writeJsonAtomic } from '../fs/index.js';
import { sharedHashBackend } from '../hash/blake3.js';
import { DocumentGoneError, StoreError } from './errors.js';
import type { RunDocumentName, RunRef, RunStore } from './run-store.js';

/** The digests a run's start record carries (see the module comment). */
export type DocumentDigests = Partial<Record<RunDocumentName, string>>;

/** The BLAKE3 (hex) of a document's stored text. */
export async function documentDigest(text: string): Promise<string> {
  return (await sharedHashBackend()).digest(Buffer.from(text)).toString('hex');
}

/**
 * Writes the JSON of `value` to `path` atomically, in pieces (the whole text of a large flow config never exists at
 * once), and returns the {@link documentDigest} of exactly the bytes written.
 */
export async function writeDocumentFile(path: string, value: unknown): Promise<string> {
  const hasher = (await sharedHashBackend()).hasher();
  await writeJsonAtomic(path, value, {}, (bytes) => hasher.update(bytes));
  return hasher.digest().toString('hex');
}

/** The start record of a run is the log's first batch: looked for no further than this many lines. */
const START_RECORD_LINES = 16;

/**
 * The document digests of run `ref`'s start record and its line, read through the chain (a damaged first batch is the
 * reader's error, naming its lines); undefined when the log has no start record (no events yet) or its start record
 * has no `documents` (written before documents were tied to the log).
 */
export async function recordedDigests(store: Pick<RunStore, 'readVerified'>, ref: RunRef): Promise<{ digests: DocumentDigests; line: number } | undefined> {
  for await (const { event, line } of store.readVerified(ref)) {
    if (line >= START_RECORD_LINES) return undefined;
    if (!isEventOf(event, 'checkpoint.saved')) continue;
    if (event.payload.start !== true) return undefined;
    const digests = event.payload.documents;
    if (digests === null || typeof digests !== 'object') return undefined;
    return { digests, line };
  }
  return undefined;
}

/**
 * Document `name` of run `ref` from its stored `text` (undefined: there is none), parsed and checked against the digest
 * its start record carries: a StoreError naming `where` when it is not JSON, or when its text is not the one the run
 * recorded. A document that is not there is undefined only when the run did not record it: one the start record names
 * is a {@link DocumentGoneError} ("the run recorded it when it started ..., and it is gone"), never taken for a run
 * recorded without it (its readers would then build the run's flow without it, and fail on what it held).
 */
export async function checkedDocument(store: Pick<RunStore, 'readVerified' | 'describeLog'>, ref: RunRef, name: RunDocumentName, text: string | undefined, where: string): Promise<unknown> {
  if (text === undefined) {
    const recorded = await recordedDigests(store, ref);
    if (recorded?.digests[name] !== undefined) throw new DocumentGoneError(name, where, store.describeLog(ref), recorded.line + 1);
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    throw new StoreError(`corrupt ${where}: ${(error as Error).message}`, { path: where });
  }
  const recorded = await recordedDigests(store, ref);
  if (recorded === undefined) return value;
  const expected = recorded.digests[name];
  if (expected === undefined) {
    throw new StoreError(
      `${where} is not a document of run ${ref.sessionKey}/${ref.runId}: the run's start record (${store.describeLog(ref)}, line ${recorded.line + 1}) records no ${name} document, so it was added after the run started, or left by an earlier start of the id that never ran`,
      { path: where },
    );
  }
  if ((await documentDigest(text)) !== expected) {
    throw new StoreError(
      `${where} is not the ${name} document run ${ref.sessionKey}/${ref.runId} recorded: its BLAKE3 differs from the one the run's start record holds (${store.describeLog(ref)}, line ${recorded.line + 1}); it was changed or replaced after the run started`,
      { path: where },
    );
  }
  return value;
}
