/**
 * Verifying the event log of a run as a whole (see chain.ts): every chain hash recomputed, every line validated,
 * the index checked against the log. `EventStore.verify()` runs it.
 */
import { lstatSync } from 'node:fs';
import { NotRegularFileError, describeEntry, readTextIfExists } from '../fs/index.js';
import { sharedHashBackend } from '../hash/blake3.js';
import { CHAIN_BACKEND, ChainReader, genesis } from './chain.js';
import type { CorruptLine, IndexEntry, VerifyResult } from './log-types.js';
import { decodeLine, parseIndex, seqOf } from './log-format.js';
import { contradictedMarker, cutSinceClose, markerContradicted, readPending, type PendingBatch } from './batch-marker.js';
import { dataEndOf, readLines } from './lines.js';
import type { RunPaths } from './paths.js';

/**
 * What keeps the batch marker of a log whose data ends at `size` from witnessing its end (see PendingBatch.closed),
 * or undefined: a marker that holds no record (after a writer's retries), none where the log holds data (every writer
 * writes one before its first line), or a close record smaller than the log. Readers go on without it (the chain
 * still proves each line); verify reports it, as a cut at a batch boundary since the close can no longer be seen.
 */
function markerDamage(pending: PendingBatch | undefined | 'torn', size: number, paths: RunPaths): string | undefined {
  const unseen = `whether ${paths.events} was cut at a batch boundary since its writer closed it cannot be checked`;
  if (pending === 'torn') return `${paths.pendingBatch} does not hold a batch record (damaged, or torn by a crash of the machine): ${unseen}`;
  if (pending === undefined) {
    if (size === 0) return undefined;
    const stat = lstatSync(paths.pendingBatch, { throwIfNoEntry: false });
    if (stat !== undefined && !stat.isFile()) return `${paths.pendingBatch} is ${describeEntry(stat)}, not the log's batch marker (a regular file), and is not read: ${unseen}`;
    return `${paths.pendingBatch} is missing or empty, though ${paths.events} holds events (every writer writes it first): ${unseen}`;
  }
  if (pending.closed !== undefined && (pending.start !== 0 || pending.end !== 0)) {
    return `${paths.pendingBatch} records the close of ${paths.events} and names a batch in flight, which no writer writes (damaged): ${unseen}`;
  }
  if (pending.closed !== undefined && size > pending.closed) {
    return `${paths.events}: its writer closed it with ${pending.closed} bytes, it now holds ${size}: lines were added after the close (a writer that continued the run lost its update of ${paths.pendingBatch} in a crash of the machine), or ${paths.pendingBatch} was changed`;
  }
  return undefined;
}

/** Checks the first `end` bytes of the log of `paths` (its committed lines); see EventStore.verify. */
export async function verifyLog(log: { paths: RunPaths; sessionKey: string; runId: string; end: number }): Promise<VerifyResult> {
  const { paths, end } = log;
  // The end of the data (zeros after it are space a writer reserved, not a torn tail: see endOfData), and the batch
  // marker read before and after it, as committedEnd does: a writer that closes meanwhile records a larger size.
  let size = 0;
  let pending: PendingBatch | undefined | 'torn';
  for (let attempt = 0; ; attempt++) {
    const before = readPending(paths.pendingBatch);
    size = (await dataEndOf(paths.events)) ?? 0;
    pending = readPending(paths.pendingBatch);
    if (attempt >= 100 || (before !== 'torn' && pending !== 'torn' && before?.gen === pending?.gen)) break;
  }
  const backend = await sharedHashBackend(CHAIN_BACKEND);
  const reader = new ChainReader(backend, genesis(backend, log.sessionKey, log.runId));
  const corruptLines: CorruptLine[] = [];
  let lines = 0;
  let events = 0;
  let lastSealed = -1;
  let verifiedLines = 0;
  let chainHead: string | undefined;
  let damage: { line: number; problem: string } | undefined;
  let batchStart = 0;
  // Read as every reader reads it: a link or FIFO in the index's place is not read through or waited on, but is
  // damage of the index, said below.
  let notRegularIndex: string | undefined;
  const indexText = await readTextIfExists(paths.index).then(
    (text) => text ?? '',
    (error: unknown) => {
      if (!(error instanceof NotRegularFileError)) throw error;
      notRegularIndex = error.message;
      return '';
    },
  );
  const completeIndex = indexText.slice(0, indexText.lastIndexOf('\n') + 1);
  const entries = parseIndex(completeIndex);
  const indexLines = completeIndex.split('\n').length - 1;
  let nextEntry = 0;
  let badEntry: IndexEntry | undefined;
  for await (const raw of readLines(paths.events, 0, end, 0)) {
    lines++;
    const entry = entries[nextEntry];
    if (entry !== undefined && entry.line === raw.index) {
      nextEntry++;
      if (entry.offset !== raw.offset || seqOf(raw.text) !== entry.seq) badEntry ??= entry;
    } else if (entry !== undefined && entry.line < raw.index) {
      badEntry ??= entry;
      nextEntry++;
    }
    const decoded = decodeLine(raw.text, raw.index, raw.offset);
    if ('error' in decoded) corruptLines.push(decoded);
    else events++;
    const step = reader.feed(raw.bytes, raw.index);
    if (step.kind === 'open') continue;
    if (step.kind === 'verified') verifiedLines += raw.index + 1 - batchStart;
    else {
      damage ??= {
        line: corruptLines.find((c) => c.line > batchStart)?.line ?? batchStart + 1,
        problem: `${paths.events}: lines ${batchStart + 1}-${raw.index + 1} do not match the chain hash on line ${raw.index + 1}: the log was changed there`,
      };
    }
    chainHead = step.chain;
    lastSealed = raw.index;
    batchStart = raw.index + 1;
  }
  const sealed = lastSealed >= 0;
  if (sealed && lines > lastSealed + 1) {
    damage ??= {
      line: lastSealed + 2,
      problem: `${paths.events}: lines ${lastSealed + 2}-${lines} come after its last chain hash (line ${lastSealed + 1}): the log was cut or damaged there`,
    };
  }
  const beyond = entries.find((e) => e.line >= lines || e.offset >= end);
  if (beyond !== undefined) {
    damage ??= {
      line: lines + 1,
      problem: `${paths.index} records event ${beyond.line + 1} at byte ${beyond.offset}, but ${paths.events} has ${lines} complete lines (${end} bytes): the log was cut`,
    };
  }
  if (notRegularIndex !== undefined) damage ??= { line: 1, problem: `${notRegularIndex}: the index is damaged (a writer rebuilds it on open)` };
  if (entries.length < indexLines) {
    damage ??= {
      line: (entries[entries.length - 1]?.line ?? 0) + 1,
      problem: `${paths.index}: line ${entries.length + 1} is not a valid index entry in order: the index is damaged (a writer rebuilds it on open)`,
    };
  }
  if (badEntry !== undefined) {
    damage ??= {
      line: badEntry.line + 1,
      problem: `${paths.index} records event ${badEntry.line + 1} at byte ${badEntry.offset} with seq ${badEntry.seq}, which is not what ${paths.events} holds there: the index is damaged (a writer rebuilds it on open)`,
    };
  }
  const cut = cutSinceClose(pending, size, paths.events) ?? markerDamage(pending, size, paths);
  if (cut !== undefined) damage ??= { line: lines, problem: cut };
  // A marker naming a batch in flight where the log holds sealed lines would hide them from readers: edited.
  const marker = pending !== undefined && pending !== 'torn' && size > pending.start && size < pending.end && (await markerContradicted(paths.events, pending, size)) ? contradictedMarker(paths.pendingBatch, pending, paths.events) : undefined;
  if (marker !== undefined) damage ??= { line: lines, problem: marker };
  if (damage === undefined && corruptLines.length > 0) {
    damage = { line: corruptLines[0]!.line, problem: `${paths.events}: line ${corruptLines[0]!.line} is corrupt: ${corruptLines[0]!.error}` };
  }
  const indexDamaged = beyond !== undefined || badEntry !== undefined || entries.length < indexLines || notRegularIndex !== undefined;
  const chain = damage !== undefined && (sealed || indexDamaged) ? 'damaged' : sealed ? 'verified' : 'unverifiable';
  // A log with lines and no chain hash is not ok: removing the chain fields takes no hash, so it proves nothing.
  const result: VerifyResult = { ok: corruptLines.length === 0 && chain !== 'damaged' && cut === undefined && marker === undefined && (chain !== 'unverifiable' || lines === 0), chain, lines, events, corruptLines, tornTailBytes: size - end, verifiedLines };
  if (damage !== undefined) {
    result.firstBadLine = damage.line;
    result.problem = damage.problem;
  }
  if (chainHead !== undefined) result.chainHead = chainHead;
  return result;
}

