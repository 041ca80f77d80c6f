/**
 * Runs stored in PostgreSQL (DESIGN D15): the {@link RunStore} of many workers sharing one database.
 *
 * - Events: one row per committed batch (a step's events), its lines exactly as the file store writes them
 *   (validated, redacted, the batch sealed with the running BLAKE3 chain hash of chain.ts), keyed by (run, number of
 *   its first line), so that a second writer's insert at the same place fails (fencing). Readers verify the chain as
 *   the file readers do, so an edited row is reported, never served.
 * - One writer per run: opening a writer takes the run's lease (`lease_owner`, `lease_expires_at`, renewed while the
 *   writer lives) and gives it a new fencing token, in one statement that also reads where the log stands. Tokens come
 *   from one sequence (migration 6), so none is handed out twice, not even to a run deleted and started again under
 *   the same id: a stalled writer of the deleted run is fenced out of the new one. A step is
 *   one statement: the projection update fenced by the token, and the step's events inserted only when the fence
 *   held. A writer whose lease expired and was taken over finds the token changed (or its first line taken) and gets a
 *   {@link FencedError}; nothing of it is stored. The batch that ends the run (run.completed, run.failed,
 *   run.waiting) gives the lease up in its own transaction.
 * - Keyframes: sealed JSON with their checksum and chain hash, as `checkpoint/<step>.json` holds them; written off
 *   the step's path, fenced by the token.
 * - The projection: the run's RunMeta (redacted), current with every step, sealed with its checksum as
 *   `run.meta.json` is (hash/sealed.ts). One that is edited, or is another run's, is not served: readers rebuild it
 *   from the log with a warning; one that recorded more than the log serves (the log lost its tail) is kept and
 *   reported, and its run is not continued (see {@link PostgresRunStore.currentRunMeta}).
 * - What waits for the server's disk: a step's commit (durability 'batch', the default), once per step. Taking and
 *   giving up the lease and writing a keyframe do not (connection.ts: asyncCommit): a server crash can only undo them
 *   as if they had not happened, and the next step's commit makes them durable with it.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { StreamEventType, type StreamEvent } from '../../events/types.js';
import { sharedHashBackend, type HashBackend } from '../../hash/blake3.js';
import { openSealed, seal, sealText, sealedSize } from '../../hash/sealed.js';
import { redactConfig, redactorFor, type Redactor } from '../../redact/index.js';
import { CHAIN_BACKEND, CHAIN_FORMAT, ChainReader, SEAL_LENGTH, chainFormatOf, chainOf, genesis, sealBatch, type ChainFormat } from '../chain.js';
import { prepareCheckpoint } from '../checkpoint-store.js';
import { encodeEvent } from '../event-encode.js';
import type { CorruptLine, ReadOptions, VerifiedEvent, VerifyResult } from '../event-store.js';
import { CheckpointStoreError, EventStoreError, FencedError, LockError, ProjectionStoreError, RunExistsError, RunGoneError, StoreError, describeIssues, lostConnection } from '../errors.js';
import { decodeLine } from '../log-format.js';
import { assertValidId, isValidId } from '../paths.js';
import { continuedRunMeta, emptyRunMeta, foldRunMeta, foldRunMetaBatch } from '../run-meta.js';
import { RunChangedError } from '../retention.js';
import { checkedDocument, documentDigest } from '../run-documents.js';
import type { DeleteRunCondition, KeyframeInput, OpenWriterOptions, RunDocumentName, RunRef, RunStore, RunWriter, TakenKeyframe } from '../run-store.js';
import { CheckpointSchema, RunMetaSchema, durabilityOf, type Checkpoint, type RunMeta } from '../types.js';
import type postgres from 'postgres';
import { asyncCommit, openDatabase, type Database } from './connection.js';

/** The channel every committed step is announced on, with {@link commitNotice} of its run (see `onCommits`). */
const EVENTS_CHANNEL = 'backpackflow_events';

/** What a step's commit announces on {@link EVENTS_CHANNEL}: its run, as `session/run`. */
function commitNotice(ref: RunRef): string {
  return `${ref.sessionKey}/${ref.runId}`;
}

/** Options of {@link PostgresRunStore}. */
export interface PostgresRunStoreOptions {
  /** `postgres://user[:password]@host:port/database`. */
  url: string;
  /** How long a writer's lease lasts without renewal, in ms (default 30 s); the writer renews it every third of that. */
  leaseMs?: number;
  /** Pool size (default 4). */
  maxConnections?: number;
  /** Names this process's writers in leases (default host:pid:random). */
  owner?: string;
  /** Called with every statement sent to the server (to count them: `npm run bench:pg` reports statements per step). */
  onStatement?: (query: string) => void;
}

const ROWS_PER_FETCH = 500;
/** How many runs' last rows {@link PostgresRunStore.logHead} keeps the chain hash of. */
const LAST_ROWS_KEPT = 1000;

function checkRef(ref: RunRef): void {
  assertValidId(ref.sessionKey, 'sessionKey');
  assertValidId(ref.runId, 'runId');
}

/** See the module comment. */
export class PostgresRunStore implements RunStore {
  readonly kind = 'postgres' as const;
  readonly location: string;
  readonly leaseMs: number;
  readonly owner: string;
  private readonly db: Database;
  /** The chain hash of the last row of recently looked-at runs, by the row's version (see {@link logHead}). */
  private readonly lastRows = new Map<string, { version: string; chain: string | undefined }>();

  constructor(options: PostgresRunStoreOptions) {
    this.db = openDatabase(options.url, { max: options.maxConnections, onStatement: options.onStatement });
    this.location = this.db.location;
    this.leaseMs = options.leaseMs ?? 30_000;
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 100) throw new StoreError(`leaseMs must be an integer >= 100, got ${String(options.leaseMs)}`);
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  }

  /** The pool, once the schema is current (for the worker queue and the tail, which share it). */
  async sql(): Promise<Database['sql']> {
    await this.db.ready;
    return this.db.sql;
  }

  /**
   * Calls `onCommit` each time a step of run `ref` commits, announced by the commit itself (LISTEN/NOTIFY; the live
   * tails of `runs tail` and the Studio); resolves to the function that stops listening. A commit announces itself
   * only while a tail is registered on its run (migration 5: `runs.tailed_until`): this listens first, then
   * registers (a run not stored yet gets its row, as a queued run does), renewing the registration every third of
   * {@link leaseMs} while it listens, so a step committed once this resolves is announced. A registration left by a
   * tail that is gone runs out after `leaseMs`.
   */
  async onCommits(ref: RunRef, onCommit: () => void): Promise<() => Promise<void>> {
    checkRef(ref);
    const notice = commitNotice(ref);
    const sql = await this.sql();
    const listener = await sql.listen(EVENTS_CHANNEL, (payload) => payload === notice && onCommit());
    const register = async (): Promise<void> => {
      await sql`
        insert into backpackflow.runs as r (session_key, run_id, tailed_until)
        select ${ref.sessionKey}, ${ref.runId}, now() + ${this.leaseMs} * interval '1 millisecond' from ${asyncCommit(sql)}
        on conflict (session_key, run_id) do update set tailed_until = greatest(r.tailed_until, excluded.tailed_until)`;
    };
    try {
      await register();
    } catch (error) {
      await listener.unlisten().catch(() => undefined);
      throw error;
    }
    const renewal = setInterval(() => void register().catch(() => undefined), Math.max(50, Math.floor(this.leaseMs / 3)));
    renewal.unref();
    return async () => {
      clearInterval(renewal);
      await listener.unlisten().catch(() => undefined);
    };
  }

  describeLog(ref: RunRef): string {
    return `the event log of run ${ref.sessionKey}/${ref.runId} in ${this.location}`;
  }

  describeKeyframe(ref: RunRef, step: number): string {
    return `the keyframe of step ${step} of run ${ref.sessionKey}/${ref.runId} in ${this.location}`;
  }

  describeProjection(ref: RunRef): string {
    return `the projection of run ${ref.sessionKey}/${ref.runId} in ${this.location}`;
  }

  async openWriter(ref: RunRef, options: OpenWriterOptions): Promise<RunWriter> {
    checkRef(ref);
    const durability = durabilityOf(options, 'openWriter');
    const writer = new PostgresRunWriter(this, await this.sql(), ref, redactorFor(options.redaction), durability === 'never');
    await writer.open(options.fresh, options.existing ?? false);
    return writer;
  }

  /** Undefined: a row changed in place is not seen without reading the rows (see {@link RunStore.logVersion}). */
  async logVersion(ref: RunRef): Promise<string | undefined> {
    checkRef(ref);
    return undefined;
  }

  /**
   * See {@link RunStore.logHead}: the seal at the end of the run's last row (its last batch), one indexed statement.
   * A large row is stored compressed, and taking its end decompresses it whole; so the chain hash found is kept with
   * the row's version (its first line, and the system columns `xmin` and `ctid`, which a new row, an update in place
   * or a move all change), and the statement sends the row's end back only when that version is not the one kept.
   */
  async logHead(ref: RunRef): Promise<string | null | undefined> {
    checkRef(ref);
    const sql = await this.sql();
    const key = `${ref.sessionKey}/${ref.runId}`;
    const known = this.lastRows.get(key);
    const [row] = await sql<{ version: string; tail: string | null }[]>`
      select v.version, case when v.version = ${known?.version ?? ''} then null else right(b.body, ${SEAL_LENGTH + 1}) end as tail
      from backpackflow.event_batches b, lateral (select b.first_line::text || ':' || b.xmin::text || ':' || b.ctid::text as version) v
      where b.session_key = ${ref.sessionKey} and b.run_id = ${ref.runId} order by b.first_line desc limit 1`;
    if (row === undefined) {
      this.lastRows.delete(key);
      return null;
    }
    if (row.tail === null && known !== undefined) return known.chain;
    const chain = row.tail === null ? undefined : chainOf(Buffer.from(row.tail));
    this.lastRows.delete(key);
    this.lastRows.set(key, { version: row.version, chain });
    if (this.lastRows.size > LAST_ROWS_KEPT) this.lastRows.delete(this.lastRows.keys().next().value!);
    return chain;
  }

  async hasEvents(ref: RunRef): Promise<boolean> {
    checkRef(ref);
    const sql = await this.sql();
    const rows = await sql`select 1 from backpackflow.event_batches where session_key = ${ref.sessionKey} and run_id = ${ref.runId} limit 1`;
    return rows.length > 0;
  }

  /**
   * A RunExistsError when the run has events, or a record of them whose events are gone: its projection (`meta`,
   * stored by every step's commit) or keyframes. Such a run is not started again under its id: its first step would
   * store its projection over the only evidence of the old run (see {@link recordedRunExists}). A row that only a
   * queued start, a live tail or documents made (no projection, no keyframes) is not a run.
   */
  async assertNewRun(ref: RunRef): Promise<void> {
    checkRef(ref);
    const sql = await this.sql();
    const [row] = await sql<{ events: boolean; meta: string | null; keyframes: number }[]>`
      select exists (select 1 from backpackflow.event_batches e where e.session_key = r.session_key and e.run_id = r.run_id) as events, r.meta,
        (select count(*)::int from backpackflow.keyframes k where k.session_key = r.session_key and k.run_id = r.run_id) as keyframes
      from backpackflow.runs r where r.session_key = ${ref.sessionKey} and r.run_id = ${ref.runId}`;
    if (row === undefined) return;
    if (row.events) throw new RunExistsError(ref.sessionKey, ref.runId, this.describeLog(ref));
    if (row.meta !== null || row.keyframes > 0) throw await recordedRunExists(this, ref, row.meta, row.keyframes);
  }

  /**
   * The stored lines of the run, each with its number, from the rows whose first line is `start` or later: a row holds a
   * committed batch (migration 5), its lines numbered from its `first_line`. A row whose text holds more or fewer
   * lines than it should shows as a line stored twice or missing where the next row starts.
   */
  private async *storedLines(sql: Database['sql'], ref: RunRef, start: number, onRow?: (row: BatchRow) => void): AsyncGenerator<{ line: number; body: string }> {
    const cursor = sql<BatchRow[]>`
      select first_line, last_line, last_seq, body from backpackflow.event_batches
      where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and first_line >= ${start}
      order by first_line`.cursor(ROWS_PER_FETCH);
    for await (const rows of cursor) {
      for (const row of rows) {
        onRow?.(row);
        const lines = row.body.split('\n');
        for (let i = 0; i < lines.length; i++) yield { line: row.first_line + i, body: lines[i]! };
      }
    }
  }

  /**
   * The committed lines from line `from` on, verified against the chain: reading starts after the last batch that
   * ends before `from`, from the chain hash on its last line (read from its own text), so every batch served is
   * checked; in a log whose chain does not hash line numbers (v1), from the start.
   */
  private async *verifiedLines(ref: RunRef, from: number, options: ReadOptions): AsyncGenerator<{ line: number; text: string; chain: string }> {
    if (!Number.isInteger(from) || from < 0) throw new EventStoreError(`read: from must be a non-negative integer, got ${from}`);
    checkRef(ref);
    const sql = await this.sql();
    const backend = await sharedHashBackend(CHAIN_BACKEND);
    const where = this.describeLog(ref);
    const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'EventStoreWarning'));
    let start = 0;
    let reader = new ChainReader(backend, genesis(backend, ref.sessionKey, ref.runId));
    if (from > 0) {
      // The last batch that ends before `from` (of the two last rows that start before it, the one that does not
      // hold it).
      const [anchor] = await sql<{ last_line: number; body: string }[]>`
        select last_line, body from backpackflow.event_batches
        where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and first_line < ${from} and last_line < ${from}
        order by first_line desc limit 1`;
      const chain = anchor === undefined ? undefined : chainOf(Buffer.from(lastLineOf(anchor.body)));
      if (anchor !== undefined && chain !== undefined) {
        // The log's chain format, from its first line (see chain.ts), so that a batch of the other format is a mismatch.
        const [head] = await sql<{ line: string }[]>`
          select split_part(body, E'\n', 1) as line from backpackflow.event_batches
          where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and first_line = 0`;
        const format = head === undefined ? undefined : chainFormatOf(backend, genesis(backend, ref.sessionKey, ref.runId), Buffer.from(head.line));
        // Only a chain that hashes its lines' numbers (v2) proves the rows' line numbers from the anchor on; a log
        // whose chain does not (v1, or a first line that matches neither) is read from its start, every batch
        // hashed, as the file store reads it: a row deleted before the anchor and the later rows renumbered would
        // otherwise shift every line served.
        if (format === 'v2') {
          start = anchor.last_line + 1;
          reader = new ChainReader(backend, Buffer.from(chain, 'hex'), format);
        }
      }
    }
    let batch: { line: number; text: string }[] = [];
    let batchStart = start;
    let lastSealed = start - 1;
    let expected = start;
    for await (const row of this.storedLines(sql, ref, start)) {
      if (row.line !== expected) {
        // A row was deleted or edited: the batch around it cannot match its chain hash; say where.
        const message = `${where}: ${gapProblem(expected, row.line)}`;
        if ((options.onCorrupt ?? 'error') === 'error') throw new EventStoreError(message, { path: where, line: expected + 1 });
        warn(`${message}; what follows up to the next chain hash is not served`);
      }
      expected = row.line + 1;
      const step = reader.feed(Buffer.from(row.body), row.line);
      if (row.line >= from) batch.push({ line: row.line, text: row.body });
      if (step.kind === 'open') continue;
      lastSealed = row.line;
      if (step.kind === 'verified') {
        for (const line of batch) yield { ...line, chain: step.chain };
      } else {
        this.damagedBatch(where, batch, batchStart, row.line, options, warn);
      }
      batch = [];
      batchStart = row.line + 1;
    }
    if (expected - 1 > lastSealed) {
      warn(`${where}: lines ${lastSealed + 2}-${expected} come after its last chain hash (line ${lastSealed + 1}): the log was cut or damaged there; they are not served`);
    }
  }

  private damagedBatch(where: string, batch: { line: number; text: string }[], first: number, last: number, options: ReadOptions, warn: (message: string) => void): void {
    const onCorrupt = corruptHandler(where, options);
    for (const line of batch) {
      const decoded = decodeLine(line.text, line.line, 0);
      if ('error' in decoded) onCorrupt(decoded);
    }
    const message = `${where}: lines ${first + 1}-${last + 1} do not match the chain hash on line ${last + 1}: the log was changed there`;
    if ((options.onCorrupt ?? 'error') === 'error') throw new EventStoreError(message, { path: where, line: first + 1 });
    warn(`${message}; they are not served`);
  }

  async *readVerified(ref: RunRef, options: ReadOptions = {}): AsyncGenerator<VerifiedEvent> {
    const onCorrupt = corruptHandler(this.describeLog(ref), options);
    const wanted = options.types?.map((type) => `"type":${JSON.stringify(type)}`);
    for await (const { line, text, chain } of this.verifiedLines(ref, options.from ?? 0, options)) {
      if (wanted !== undefined && !wanted.some((w) => text.includes(w))) continue;
      const decoded = decodeLine(text, line, 0);
      if ('error' in decoded) onCorrupt(decoded);
      else if (options.types === undefined || options.types.includes(decoded.type)) yield { event: decoded, line, chain };
    }
  }

  async readPage(ref: RunRef, pageSize: number, offset: number, options: ReadOptions = {}): Promise<StreamEvent[]> {
    if (!Number.isInteger(pageSize) || pageSize < 0) throw new EventStoreError(`readPage: pageSize must be a non-negative integer, got ${pageSize}`);
    if (!Number.isInteger(offset) || offset < 0) throw new EventStoreError(`readPage: offset must be a non-negative integer, got ${offset}`);
    const events: StreamEvent[] = [];
    if (pageSize === 0) return events;
    const onCorrupt = corruptHandler(this.describeLog(ref), options);
    for await (const { line, text } of this.verifiedLines(ref, offset, options)) {
      if (line >= offset + pageSize) break;
      const decoded = decodeLine(text, line, 0);
      if ('error' in decoded) onCorrupt(decoded);
      else events.push(decoded);
    }
    return events;
  }

  async countEvents(ref: RunRef, options: ReadOptions = {}): Promise<number> {
    let count = 0;
    for await (const _line of this.verifiedLines(ref, 0, options)) count++;
    return count;
  }

  async verifyLog(ref: RunRef): Promise<VerifyResult> {
    checkRef(ref);
    const sql = await this.sql();
    const backend = await sharedHashBackend(CHAIN_BACKEND);
    const where = this.describeLog(ref);
    const reader = new ChainReader(backend, genesis(backend, ref.sessionKey, ref.runId));
    const result: VerifyResult = { ok: true, chain: 'verified', verifiedLines: 0, lines: 0, events: 0, corruptLines: [], tornTailBytes: 0 };
    const damage = (line: number, problem: string): void => {
      if (result.problem !== undefined) return;
      result.firstBadLine = line;
      result.problem = `${where}: ${problem}`;
    };
    let batchStart = 0;
    let lastSealed = -1;
    let expected = 0;
    // A row's last_line and last_seq (which the chain hash does not cover; a writer takes where the log ends from
    // them no more, but other statements do) must say what its text holds. Reported when the lines themselves are
    // intact (a change to the text is reported as such first).
    let columns: { line: number; problem: string } | undefined;
    const columnDamage = (line: number, problem: string): void => {
      columns ??= { line, problem };
    };
    const checkRow = (row: BatchRow): void => {
      const count = lineCount(row.body);
      const lastLine = row.first_line + count - 1;
      const named = `the row of lines ${row.first_line + 1}-${lastLine + 1} (first_line ${row.first_line})`;
      if (row.last_line !== lastLine) {
        columnDamage(row.first_line + 1, `${named} has last_line ${row.last_line}, but its text holds ${count} line${count === 1 ? '' : 's'} (last_line ${lastLine}): the row was changed`);
        return;
      }
      const last = decodeLine(lastLineOf(row.body), lastLine, 0);
      if (!('error' in last) && String(last.seq) !== String(row.last_seq)) {
        columnDamage(lastLine + 1, `${named} has last_seq ${row.last_seq}, but its last line has seq ${last.seq}: the row was changed`);
      }
    };
    for await (const row of this.storedLines(sql, ref, 0, checkRow)) {
      if (row.line !== expected) damage(expected + 1, gapProblem(expected, row.line));
      expected = row.line + 1;
      result.lines++;
      const decoded = decodeLine(row.body, row.line, 0);
      if ('error' in decoded) result.corruptLines.push(decoded);
      else result.events++;
      const step = reader.feed(Buffer.from(row.body), row.line);
      if (step.kind === 'open') continue;
      if (step.kind === 'verified') {
        if (result.problem === undefined) result.verifiedLines = row.line + 1;
        result.chainHead = step.chain;
      } else damage(batchStart + 1, `lines ${batchStart + 1}-${row.line + 1} do not match the chain hash on line ${row.line + 1}: the log was changed there`);
      lastSealed = row.line;
      batchStart = row.line + 1;
    }
    if (expected - 1 > lastSealed) damage(lastSealed + 2, `lines ${lastSealed + 2}-${expected} come after its last chain hash (line ${lastSealed + 1}): the log was cut or damaged there`);
    const first = result.corruptLines[0];
    if (first !== undefined) damage(first.line, `line ${first.line} is corrupt: ${first.error}`);
    if (columns !== undefined) damage(columns.line, columns.problem);
    if (result.problem !== undefined) {
      result.ok = false;
      result.chain = 'damaged';
    }
    return result;
  }

  async keyframeSteps(ref: RunRef): Promise<number[]> {
    checkRef(ref);
    const sql = await this.sql();
    const rows = await sql<{ step: number }[]>`select step from backpackflow.keyframes where session_key = ${ref.sessionKey} and run_id = ${ref.runId} order by step`;
    return rows.map((r) => r.step);
  }

  async loadKeyframe(ref: RunRef, step: number): Promise<Checkpoint | null> {
    checkRef(ref);
    const sql = await this.sql();
    const [row] = await sql<{ body: string }[]>`select body from backpackflow.keyframes where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and step = ${step}`;
    if (row === undefined) return null;
    const where = this.describeKeyframe(ref, step);
    const opened = openSealed(row.body, await sharedHashBackend());
    if (!opened.ok) throw new CheckpointStoreError(`corrupt checkpoint ${where}: ${opened.problem}`, { path: where });
    const parsed = CheckpointSchema.safeParse(opened.data);
    if (!parsed.success) throw new CheckpointStoreError(`corrupt checkpoint ${where}: ${describeIssues(parsed.error, '(root)')}`, { path: where });
    return parsed.data;
  }

  async loadRunMeta(ref: RunRef): Promise<RunMeta | null> {
    checkRef(ref);
    const sql = await this.sql();
    const [row] = await sql<{ meta: string | null }[]>`select meta from backpackflow.runs where session_key = ${ref.sessionKey} and run_id = ${ref.runId}`;
    if (row?.meta == null) return null;
    return openProjection(row.meta, ref, this.describeProjection(ref), await sharedHashBackend());
  }

  /**
   * The projection of run `ref` as its log stands now, as the file store's (ProjectionStore.currentRunMeta) is: the
   * stored one when it is intact, the run's, and agrees with the log (the event at line `eventCount - 1` has its
   * `lastSeq`), brought up to date with the events after it; otherwise (missing, edited, another run's, or not
   * matching the log) rebuilt from the log, an edited or foreign one with a warning naming it. Nothing is stored:
   * the run's writer stores the projection with its next step.
   *
   * A stored projection that recorded more events than the log now serves (more of them, or a later seq) means the
   * log lost what it had: the projection rebuilt from the log is returned and `onWarning` told, and the stored one
   * is left as it is (a writer does not continue the run: see PostgresRunWriter.open), so that every reader goes on
   * reporting the loss until the user clears it (sets the run's `meta` to null), which takes the log as it stands
   * for the run.
   */
  async currentRunMeta(ref: RunRef, onWarning: (message: string) => void = (m) => process.emitWarning(m, 'ProjectionBehindLog')): Promise<RunMeta> {
    let stored: RunMeta | null = null;
    try {
      stored = await this.loadRunMeta(ref);
    } catch (error) {
      if (!(error instanceof ProjectionStoreError)) throw error;
      process.emitWarning(`${error.message}; rebuilding it from the run's log`, 'ProjectionStoreRebuild');
    }
    if (stored !== null && stored.eventCount > 0) {
      const meta = await continuedRunMeta(stored, this.readVerified(ref, { from: stored.eventCount - 1 }));
      if (meta !== undefined) return meta === stored ? meta : RunMetaSchema.parse(meta);
    }
    let meta = emptyRunMeta(ref.sessionKey, ref.runId);
    for await (const { event } of this.readVerified(ref)) meta = foldRunMeta(meta, event);
    if (meta.eventCount === 0) throw new ProjectionStoreError(`run ${ref.sessionKey}/${ref.runId} has no events to project: ${this.describeLog(ref)} serves none`, { path: this.describeProjection(ref) });
    if (stored !== null && (stored.eventCount > meta.eventCount || stored.lastSeq > meta.lastSeq)) {
      const seqs = stored.eventCount > meta.eventCount ? '' : ` up to seq ${stored.lastSeq} (the log's last is ${meta.lastSeq})`;
      onWarning(
        `${this.describeLog(ref)} serves ${meta.eventCount} events, but ${this.describeProjection(ref)} recorded ${stored.eventCount}${seqs}: ` +
          `the log lost its tail (cut or damaged; check it with 'runs verify ${ref.runId}'); the run is shown as its log stands, and the projection ` +
          `is kept as the evidence (set it to null, update backpackflow.runs set meta = null where session_key = '${ref.sessionKey}' and ` +
          `run_id = '${ref.runId}', to take the log as it stands for the run)`,
      );
    }
    return RunMetaSchema.parse(meta);
  }

  async listRuns(sessionKey?: string): Promise<RunRef[]> {
    if (sessionKey !== undefined) assertValidId(sessionKey, 'sessionKey');
    const sql = await this.sql();
    const rows = await sql<{ session_key: string; run_id: string }[]>`
      select r.session_key, r.run_id from backpackflow.runs r
      where ${sessionKey === undefined ? sql`true` : sql`r.session_key = ${sessionKey}`}
        and (r.meta is not null or exists (select 1 from backpackflow.event_batches e where e.session_key = r.session_key and e.run_id = r.run_id))
      order by r.session_key collate "C", r.run_id collate "C"`;
    // A row whose ids no run of ours has (written by another tool, a manual fix, a restore) is left out, as the file
    // store leaves out a folder so named, with a warning: one such row never breaks the listing of the others.
    const valid = rows.filter((r) => isValidId(r.session_key) && isValidId(r.run_id));
    if (valid.length < rows.length) {
      process.emitWarning(
        `${this.location}: left out ${rows.length - valid.length} row(s) of backpackflow.runs whose session key or run id is not a valid id ` +
          `(a path segment of letters, digits, '_', '.' and '-'): no run of backpackflow has such ids; fix or delete them`,
        'RunStoreWarning',
      );
    }
    return valid.map((r) => ({ sessionKey: r.session_key, runId: r.run_id }));
  }

  async loadDocument(ref: RunRef, name: RunDocumentName): Promise<unknown> {
    checkRef(ref);
    const sql = await this.sql();
    const [row] = await sql<{ body: string }[]>`select body from backpackflow.run_documents where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and name = ${name}`;
    return this.checkDocument(ref, name, row?.body);
  }

  /**
   * A document's stored text (undefined: none) as {@link loadDocument} answers it: parsed and checked against the
   * run's start record (a StoreError naming it when it is not JSON or not the text the run recorded).
   */
  checkDocument(ref: RunRef, name: RunDocumentName, body: string | undefined): Promise<unknown> {
    return checkedDocument(this, ref, name, body, this.describeDocument(ref, name));
  }

  describeDocument(ref: RunRef, name: RunDocumentName): string {
    return `the ${name} document of run ${ref.sessionKey}/${ref.runId} in ${this.location}`;
  }

  /**
   * Deletes the run (its events, keyframes, projection and documents) when no other owner's writer holds it: a live
   * lease of another owner gets a {@link LockError} naming it. A writer of this store may hold it (the caller deleting
   * what it writes: a LangGraph `deleteThread`); that writer's later commits are fenced. Resolves to whether there was
   * a run to delete.
   */
  /**
   * See {@link RunStore.deleteRun}: one statement, which takes the run's row, so that a writer taking the run (its
   * lease) and the delete exclude each other; with `expected`, it deletes only while the run's last stored batch
   * ends at `expected.lastSeq`.
   */
  async deleteRun(ref: RunRef, expected?: DeleteRunCondition): Promise<boolean> {
    checkRef(ref);
    const sql = await this.sql();
    const lastSeq = sql`(select max(e.last_seq) from backpackflow.event_batches e where e.session_key = r.session_key and e.run_id = r.run_id)`;
    const deleted = await sql`
      delete from backpackflow.runs r where session_key = ${ref.sessionKey} and run_id = ${ref.runId}
        and (lease_owner is null or lease_expires_at < now() or lease_owner = ${this.owner})
        and (${expected === undefined}::boolean or ${lastSeq} = ${expected?.lastSeq ?? null})
      returning 1`;
    if (deleted.length > 0) return true;
    const [holder] = await sql<{ lease_owner: string | null; lease_expires_at: Date | null; live: boolean; last_seq: string | null }[]>`
      select lease_owner, lease_expires_at, lease_owner is not null and lease_expires_at >= now() and lease_owner <> ${this.owner} as live,
        ${lastSeq} as last_seq
      from backpackflow.runs r where session_key = ${ref.sessionKey} and run_id = ${ref.runId}`;
    if (holder === undefined) return false;
    if (!holder.live && expected !== undefined) {
      const now = holder.last_seq === null ? 'it has no events now' : `its log ends at seq ${holder.last_seq} now`;
      throw new RunChangedError(ref.sessionKey, ref.runId, `${now}, not at seq ${expected.lastSeq}`, this.describeLog(ref));
    }
    throw new LockError(
      `run ${ref.sessionKey}/${ref.runId} is being written by ${holder.lease_owner ?? 'another writer'} (its lease runs until ${holder.lease_expires_at?.toISOString() ?? '?'}) in ${this.location}: it is not deleted`,
      { path: this.describeLog(ref) },
    );
  }

  async writerAlive(ref: RunRef): Promise<boolean> {
    checkRef(ref);
    const sql = await this.sql();
    const [row] = await sql<{ alive: boolean }[]>`
      select lease_owner is not null and lease_expires_at > now() as alive from backpackflow.runs
      where session_key = ${ref.sessionKey} and run_id = ${ref.runId}`;
    return row?.alive === true;
  }

  async describeWriter(ref: RunRef): Promise<string | undefined> {
    checkRef(ref);
    const sql = await this.sql();
    const [row] = await sql<{ owner: string; expires: Date }[]>`
      select lease_owner as owner, lease_expires_at as expires from backpackflow.runs
      where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and lease_owner is not null and lease_expires_at > now()`;
    return row === undefined ? undefined : `the lease of ${row.owner}, until ${row.expires.toISOString()} unless renewed`;
  }

  async close(): Promise<void> {
    await this.db.sql.end({ timeout: 5 });
  }
}

/**
 * A step's commit: the call of the function of migration 5 (migrations.ts), whose parameters are, in order, the run,
 * the writer's token, the projection, whether the batch ends the run, the lease, the first line's number, the number
 * of lines, the last line's seq, the lines, whether the commit waits for the disk, and the channel of live tails.
 */
const COMMIT_STEP = 'select backpackflow.commit_step($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) as held';

/** `value` as a JSON parameter, encoded natively (JSON.stringify). */
export function json(sql: Database['sql'], value: unknown[]): postgres.Parameter<never> {
  return sql.typed(value as never, JSON_OID);
}

const JSON_OID = 114;

/**
 * A stored projection (sealed as the file store's run.meta.json; one stored before seals existed, plain JSON, still
 * reads), verified, validated and checked to be run `ref`'s: else a ProjectionStoreError naming `where` and what is
 * wrong (as ProjectionStore.loadRunMeta says it of a file).
 */
function openProjection(text: string, ref: RunRef, where: string, backend: HashBackend): RunMeta {
  const opened = openSealed(text, backend, true);
  if (!opened.ok) throw new ProjectionStoreError(`corrupt run projection ${where}: ${opened.problem}`, { path: where });
  const parsed = RunMetaSchema.safeParse(opened.data);
  if (!parsed.success) throw new ProjectionStoreError(`corrupt run projection ${where}: ${describeIssues(parsed.error, '(root)')}`, { path: where });
  const meta = parsed.data;
  if (meta.runId !== ref.runId || meta.sessionKey !== ref.sessionKey) {
    throw new ProjectionStoreError(`corrupt run projection ${where}: it is the projection of run ${meta.sessionKey}/${meta.runId}, not of ${ref.sessionKey}/${ref.runId}`, { path: where });
  }
  return meta;
}

/**
 * The {@link RunExistsError} of a new run under the id of run `ref`, whose log holds no events but whose projection
 * (`meta`, stored text) or `keyframes` remain: the run existed and its event rows were deleted (or a restore lost
 * them). Said as the file store says it of a log its close marker shows was cut: what the record says the run held,
 * what the log holds now, and that the run is not started again under its id (its first step would store its
 * projection over the only record of the old run).
 */
export async function recordedRunExists(store: PostgresRunStore, ref: RunRef, meta: string | null, keyframes: number): Promise<RunExistsError> {
  const where = store.describeLog(ref);
  let recorded: string;
  if (meta === null) recorded = `${keyframes} keyframe${keyframes === 1 ? '' : 's'} of it remain${keyframes === 1 ? 's' : ''}`;
  else {
    try {
      const stored = openProjection(meta, ref, store.describeProjection(ref), await sharedHashBackend());
      recorded = `${store.describeProjection(ref)} records ${stored.eventCount} events (up to seq ${stored.lastSeq})`;
    } catch (error) {
      recorded = `${store.describeProjection(ref)} is stored (${(error as Error).message})`;
    }
    if (keyframes > 0) recorded += ` and ${keyframes} keyframe${keyframes === 1 ? '' : 's'} of it remain${keyframes === 1 ? 's' : ''}`;
  }
  // Without a projection the run is not listed, so `runs delete` does not find it: its row is deleted by hand.
  const remove =
    meta === null
      ? `delete from backpackflow.runs where session_key = '${ref.sessionKey}' and run_id = '${ref.runId}', which deletes its keyframes with it`
      : `'backpackflow runs delete ${ref.runId}'`;
  const error = new RunExistsError(ref.sessionKey, ref.runId, where);
  // The message of RunExistsError tells to resume the run, which cannot be done here: say what is wrong instead.
  error.message =
    `${where}: ${recorded}, but it now holds no events: its rows were deleted, or a restore lost them, after they were committed. ` +
    `Check it with 'backpackflow runs verify ${ref.runId}'; it is not started again under its id (a new run would overwrite the only record of run ` +
    `${ref.sessionKey}/${ref.runId}): delete it (${remove}) to reuse the id, or start a new run with another id`;
  return error;
}

/** A row of backpackflow.event_batches: one committed batch (last_seq is a bigint, read as text). */
interface BatchRow {
  first_line: number;
  last_line: number;
  last_seq: string;
  body: string;
}

/** The number of lines of a batch row's text. */
function lineCount(body: string): number {
  let count = 1;
  for (let at = body.indexOf('\n'); at !== -1; at = body.indexOf('\n', at + 1)) count++;
  return count;
}

/** The last line of a batch row's text. */
function lastLineOf(body: string): string {
  return body.slice(body.lastIndexOf('\n') + 1);
}

/** What a line numbered `found` where line `expected` should be says about the log (numbers from 0). */
function gapProblem(expected: number, found: number): string {
  return found > expected
    ? `line ${expected + 1} is missing (the next stored line is ${found + 1}): the log was changed there`
    : `${found + 1 === expected ? `line ${expected} is` : `lines ${found + 1}-${expected} are`} stored twice: the log was changed there`;
}

function corruptHandler(where: string, options: ReadOptions): (corrupt: CorruptLine) => void {
  const mode = options.onCorrupt ?? 'error';
  if (typeof mode === 'function') return mode;
  if (mode === 'skip') return (c) => process.emitWarning(`skipped corrupt line ${c.line} of ${where}: ${c.error}`, 'EventStoreCorruptLine');
  return (c) => {
    throw new EventStoreError(`corrupt event at line ${c.line} of ${where}: ${c.error}`, { path: where, line: c.line });
  };
}

/** The writer of one run in Postgres: see the module comment of run-store.ts and of this file. */
class PostgresRunWriter implements RunWriter {
  lastSeq: number | undefined;
  eventCount = 0;
  chainHead: string | undefined;
  byteLength = 0;
  private token = 0;
  private meta: RunMeta;
  private backend: HashBackend | undefined;
  /** The chain format of the log (see chain.ts): a new log's, or the one an existing log was written in. */
  private format: ChainFormat = CHAIN_FORMAT;
  private heartbeat: NodeJS.Timeout | undefined;
  private broken: Error | undefined;
  /**
   * The connection was lost during a commit: it may have landed or not, so this writer's view of the log may be
   * stale and it commits nothing more (the next commit would leave a seq gap, or collide). A new writer reads where
   * the log stands.
   */
  private unsettled: Error | undefined;
  private closed = false;
  /** The run's last batch gave the lease up in its own transaction (see commit): close has nothing left to do. */
  private released = false;
  /** Keyframes taken and not yet written (the lease is kept for them). */
  private pendingKeyframes = 0;
  private readonly where: string;

  constructor(
    private readonly store: PostgresRunStore,
    private readonly sql: Database['sql'],
    private readonly ref: RunRef,
    private readonly redactor: Redactor,
    /** Durability 'never': a step's commit does not wait for the server's disk (see OpenWriterOptions.durability). */
    private readonly lazyCommit: boolean,
  ) {
    this.meta = emptyRunMeta(ref.sessionKey, ref.runId);
    this.where = store.describeLog(ref);
  }

  /**
   * Takes the run's lease with a fencing token never handed out before (migration 6) in one statement (its commit
   * does not wait for the disk: see asyncCommit), which also reads where the log stands: its last line and its size. A fresh run whose log has lines is not taken (RunExistsError);
   * a run whose lease another writer holds is a LockError naming it.
   */
  async open(fresh: boolean, existing: boolean): Promise<void> {
    const { sql, ref, store } = this;
    this.backend = await sharedHashBackend(CHAIN_BACKEND);
    const [row] = await sql<
      { token: string | null; holder: string | null; holder_until: Date | null; first: number | null; body: string | null; meta: string | null; keyframes: number; bytes: string; head: string | null }[]
    >`
      with taken as (
        insert into backpackflow.runs as r (session_key, run_id, writer_token, lease_owner, lease_expires_at)
        select ${ref.sessionKey}, ${ref.runId}, nextval('backpackflow.writer_tokens'), ${store.owner}, now() + ${store.leaseMs} * interval '1 millisecond' from ${asyncCommit(sql)}
        on conflict (session_key, run_id) do update set writer_token = excluded.writer_token, lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at
        where (r.lease_owner is null or r.lease_expires_at < now())
          and not (${fresh}::boolean and (r.meta is not null
            or exists (select 1 from backpackflow.event_batches e where e.session_key = r.session_key and e.run_id = r.run_id)
            or exists (select 1 from backpackflow.keyframes k where k.session_key = r.session_key and k.run_id = r.run_id)))
        returning r.writer_token
      )
      select (select writer_token from taken) as token, runs.lease_owner as holder, runs.lease_expires_at as holder_until, last.first_line as first, last.body,
        runs.meta, (select count(*)::int from backpackflow.keyframes where session_key = ${ref.sessionKey} and run_id = ${ref.runId}) as keyframes,
        (select coalesce(sum(octet_length(body) + 1), 0) from backpackflow.event_batches where session_key = ${ref.sessionKey} and run_id = ${ref.runId}) as bytes,
        (select split_part(body, E'\n', 1) from backpackflow.event_batches where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and first_line = 0) as head
      from (select 1) as one
      left join backpackflow.runs on runs.session_key = ${ref.sessionKey} and runs.run_id = ${ref.runId}
      left join lateral (
        select first_line, body from backpackflow.event_batches where session_key = ${ref.sessionKey} and run_id = ${ref.runId} order by first_line desc limit 1
      ) as last on true`;
    const { token, first, body } = row!;
    // A fresh run whose log has no events but whose projection or keyframes remain: the run existed and lost its
    // events (see PostgresRunStore.assertNewRun).
    const recorded = first === null && (row!.meta !== null || row!.keyframes > 0);
    if (token === null) {
      if (fresh && first !== null) throw new RunExistsError(ref.sessionKey, ref.runId, this.where);
      if (fresh && recorded) throw await recordedRunExists(store, ref, row!.meta, row!.keyframes);
      throw new LockError(
        `run ${ref.sessionKey}/${ref.runId} is being written by ${row!.holder ?? 'another writer'} (its lease runs until ${row!.holder_until?.toISOString() ?? '?'}) in ${store.location}`,
        { path: this.where },
      );
    }
    this.token = Number(token);
    try {
      // The statement's snapshot predates the lease (see below): a record it shows is refused here too.
      if (fresh && recorded) throw await recordedRunExists(store, ref, row!.meta, row!.keyframes);
      if (first !== null && body !== null) {
        // The statement's snapshot predates the lease; a writer that committed in between makes this view stale,
        // and then the first commit of this writer collides with its lines and is refused (fenced), never merged.
        if (fresh) throw new RunExistsError(ref.sessionKey, ref.runId, this.where);
        // Where the log ends, from the last row's own text (its first line and its lines), not from its last_line and
        // last_seq columns, which the chain hash does not cover (runs verify checks them against the text).
        const line = first + lineCount(body) - 1;
        const last = decodeLine(lastLineOf(body), line, 0);
        if ('error' in last) {
          throw new EventStoreError(`${this.where}: its last line (${line + 1}) is corrupt (${last.error}): it cannot be continued; check it with 'runs verify ${ref.runId}'`, { path: this.where, line: line + 1 });
        }
        const chain = chainOf(Buffer.from(lastLineOf(body)));
        if (chain === undefined) {
          throw new EventStoreError(`${this.where}: its last line (${line + 1}) carries no chain hash: the log was cut or damaged there; it cannot be continued`, { path: this.where });
        }
        // The log is continued in its own chain format (see chain.ts), which its first line shows.
        const format = row!.head === null ? undefined : chainFormatOf(this.backend, genesis(this.backend, ref.sessionKey, ref.runId), Buffer.from(row!.head));
        if (format === undefined) {
          throw new EventStoreError(`${this.where}: its first line does not match its chain hash: the log was changed there; it cannot be continued; check it with 'runs verify ${ref.runId}'`, { path: this.where, line: 1 });
        }
        this.format = format;
        this.chainHead = chain;
        this.eventCount = line + 1;
        this.byteLength = Number(row!.bytes);
        this.lastSeq = last.seq;
        // A projection that recorded more than the log serves is the evidence of a lost tail: the run is not
        // continued past it (its next step would store its projection over it), as the file store's writer does not.
        let lost: string | undefined;
        this.meta = await store.currentRunMeta(ref, (warning) => (lost = warning));
        if (lost !== undefined) throw new ProjectionStoreError(`${lost}. The run is not continued`, { path: store.describeProjection(ref) });
      } else if (existing) throw new RunGoneError(ref.sessionKey, ref.runId, this.where);
    } catch (error) {
      await this.release();
      throw error;
    }
    this.heartbeat = setInterval(() => void this.renew(), Math.max(50, Math.floor(store.leaseMs / 3)));
    this.heartbeat.unref();
  }

  /** Extends the lease while this writer holds the run; a lost run stops the renewals (the next commit is fenced). */
  private async renew(): Promise<void> {
    if (this.closed || this.broken) return;
    try {
      const rows = await this.sql`
        update backpackflow.runs set lease_expires_at = now() + ${this.store.leaseMs} * interval '1 millisecond'
        from ${asyncCommit(this.sql)}
        where session_key = ${this.ref.sessionKey} and run_id = ${this.ref.runId} and writer_token = ${this.token} and lease_owner = ${this.store.owner}`;
      if (rows.count === 0) clearInterval(this.heartbeat);
    } catch {
      // A connection problem: the lease may run out; the next commit finds out whether the run is still ours.
    }
  }

  private assertWritable(): void {
    if (this.closed) throw new EventStoreError(`the writer of ${this.where} is closed`, { path: this.where });
    if (this.broken) throw new FencedError(`the writer of ${this.where} cannot go on: ${this.broken.message}`, { path: this.where, cause: this.broken });
    if (this.unsettled) {
      throw new EventStoreError(
        `the writer of ${this.where} cannot go on: the database connection was lost during its last commit, which may or may not have been stored (${this.unsettled.message}); open the run's writer again to read where its log stands`,
        { path: this.where, cause: this.unsettled },
      );
    }
  }

  /** A refused commit: fenced (the token changed, or another writer stored these lines first), or another error. */
  private refused(error: unknown, what: string): never {
    if ((error as { code?: string }).code === '23505') {
      this.broken = error as Error;
      throw new FencedError(`${this.where}: another writer stored ${what} first: this writer lost the run`, { path: this.where, cause: error });
    }
    throw error;
  }

  private fenced(what: string): never {
    this.broken = new Error(`fencing token ${this.token} is no longer the run's`);
    throw new FencedError(`${this.where}: this writer's lease was taken over by another writer (fencing token ${this.token} is stale): ${what} was not stored`, { path: this.where });
  }

  async commit(events: StreamEvent[]): Promise<void> {
    this.assertWritable();
    if (events.length === 0) return;
    const { ref, sql } = this;
    const target = { sessionKey: ref.sessionKey, runId: ref.runId, redactor: this.redactor, where: this.where };
    const lines: string[] = [];
    let previous = this.lastSeq;
    for (let i = 0; i < events.length; i++) {
      const encoded = encodeEvent(target, events[i]!, previous, events.length > 1 ? ` ${i} of the batch` : '');
      // A row is text: a large line's pieces are joined here (the file store writes them without joining).
      lines.push(typeof encoded.line === 'string' ? encoded.line : Buffer.concat(encoded.line).toString('utf8'));
      previous = encoded.seq;
    }
    const backend = this.backend!;
    const sealFirst = this.eventCount === 0;
    const start = this.chainHead === undefined ? genesis(backend, ref.sessionKey, ref.runId) : Buffer.from(this.chainHead, 'hex');
    const batch = sealBatch(backend, start, lines, sealFirst, { line: this.eventCount, format: this.format });
    const head = batch.head.toString('hex');
    const bytes = batch.bytes;
    for (let i = 0; i < lines.length; i++) {
      const seal = batch.seals[i];
      // The row holds the line as the file store writes it, without its newline (a seal replaces the closing brace).
      if (seal === undefined) continue;
      lines[i] = `${lines[i]!.slice(0, -1)}${seal.slice(0, -1)}`;
    }
    // The batch that ends the run (its run.completed, run.failed or run.waiting) gives the lease up in its own
    // transaction, unless keyframes are still being written: the writer's close then has no statement of its own.
    const ends = ENDS_RUN.has(events[events.length - 1]!.type) && this.pendingKeyframes === 0;
    const meta = foldRunMetaBatch(this.meta, events);
    const metaText = seal(this.redactor.redact(meta).value, backend);
    let held: boolean;
    try {
      // One statement, so one transaction (migrations.ts: commit_step): the projection update fenced by the token,
      // and the step's lines inserted as one row and announced (when a live tail is registered: onCommits) only if
      // it held. A fixed text with plain parameters, prepared once per connection: the lines go as one text
      // parameter, unescaped.
      const [row] = await sql.unsafe<{ held: boolean }[]>(
        COMMIT_STEP,
        [ref.sessionKey, ref.runId, this.token, metaText, ends, this.store.leaseMs, this.eventCount, lines.length, previous!, lines.join('\n'), this.lazyCommit, EVENTS_CHANNEL],
        { prepare: true },
      );
      held = row!.held;
    } catch (error) {
      this.unsettled = lostConnection(error);
      this.refused(error, `lines ${this.eventCount + 1}-${this.eventCount + lines.length}`);
    }
    if (!held) this.fenced('the step');
    if (ends) {
      this.released = true;
      clearInterval(this.heartbeat);
    }
    this.chainHead = head;
    this.eventCount += lines.length;
    this.byteLength += bytes;
    this.lastSeq = previous;
    this.meta = meta;
  }

  takeKeyframe(keyframe: KeyframeInput): TakenKeyframe {
    const { ref } = this;
    const where = this.store.describeKeyframe(ref, keyframe.step);
    const checkpoint = { v: 1 as const, ...keyframe, ...(this.chainHead !== undefined ? { chain: this.chainHead } : {}), line: this.eventCount - 1 };
    const prepared = prepareCheckpoint(checkpoint, { sessionKey: ref.sessionKey, runId: ref.runId, redactor: this.redactor, where });
    const body = JSON.stringify(prepared);
    const token = this.token;
    this.pendingKeyframes++;
    return {
      bytes: sealedSize(body.length),
      write: async () => {
        try {
          await this.writeKeyframe(prepared.step, body, token);
        } finally {
          this.pendingKeyframes--;
        }
      },
    };
  }

  readonly documents: Partial<Record<RunDocumentName, string>> = {};

  async saveDocument(name: RunDocumentName, value: unknown): Promise<void> {
    this.assertWritable();
    const { ref } = this;
    const body = JSON.stringify(redactConfig(this.redactor, value));
    // Fenced like a commit: stored only while this writer's token is the run's.
    const rows = await this.sql`
      with fence as (${this.fence(this.token)})
      insert into backpackflow.run_documents (session_key, run_id, name, body)
      select ${ref.sessionKey}, ${ref.runId}, ${name}, ${body}
      where exists (select 1 from fence)
      on conflict (session_key, run_id, name) do update set body = excluded.body
      returning 1`;
    if (rows.length === 0) this.fenced(`its ${name} document`);
    this.documents[name] = await documentDigest(body);
  }

  /** Stores the keyframe of `step` whose checkpoint's JSON is `json`, sealed, fenced by `token`. */
  private async writeKeyframe(step: number, json: string, token: number): Promise<void> {
    const { ref } = this;
    this.assertWritable();
    const body = sealText(json, await sharedHashBackend());
    let rows: { step: number }[];
    try {
      rows = await this.sql<{ step: number }[]>`
        with fence as (${this.fence(token)})
        insert into backpackflow.keyframes (session_key, run_id, step, body)
        select ${ref.sessionKey}, ${ref.runId}, ${step}, ${body} from ${asyncCommit(this.sql)}
        where exists (select 1 from fence)
        on conflict (session_key, run_id, step) do update set body = excluded.body
        returning step`;
    } catch (error) {
      this.refused(error, `the keyframe of step ${step}`);
    }
    if (rows.length === 0) this.fenced(`the keyframe of step ${step}`);
  }

  /**
   * The fence of a write beside the step's commit (a document, a keyframe): the run's row while `token` is its
   * writer's, locked for share, so a take-over committing meanwhile is waited for and then seen (as a step's commit
   * sees it through its update), never read from an older snapshot. Used as a CTE: `with fence as (...)`.
   */
  private fence(token: number): postgres.PendingQuery<postgres.Row[]> {
    const { ref } = this;
    return this.sql`select 1 from backpackflow.runs where session_key = ${ref.sessionKey} and run_id = ${ref.runId} and writer_token = ${token} for share`;
  }

  private async release(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.sql`
      update backpackflow.runs set lease_owner = null, lease_expires_at = null
      from ${asyncCommit(this.sql)}
      where session_key = ${this.ref.sessionKey} and run_id = ${this.ref.runId} and writer_token = ${this.token}`;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.released) return;
    await this.release();
  }
}

/** The events that end a run's process (see commit). */
const ENDS_RUN: ReadonlySet<string> = new Set([StreamEventType.RUN_END, StreamEventType.RUN_ERROR, StreamEventType.RUN_WAITING]);
