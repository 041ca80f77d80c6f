import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import type { AgentIdentity } from './agents.js';
import { ContextError } from './errors.js';
import { verifyFrame, type Frame } from './frames.js';
import type { HashBackend } from './hash.js';
import { STORE_DIR } from './ignore-rules.js';
import { acquireLock } from './lock.js';
import { emptyState, type StoreState } from './state.js';
import { Tree } from './tree.js';
import { JOURNAL_HEADER_BYTES, decodeJournal, encodeJournalEntry, journalHeader, type JournalEntry } from './tree-journal.js';

interface Cached<T> {
  key: string;
  value: T;
}

/**
 * The `.merkle/` folder of one workspace:
 *
 * - `tree`: the scanned tree and stat cache (binary, checksummed), and `tree.journal`: the rescans since (see
 *   `tree-journal.ts`);
 * - `state.json`: frame sets, heads, stale marks and the basis index (sealed JSON);
 * - `agents.json`: registered agents (sealed JSON);
 * - `frames/<2 hex>/<FrameID>.json`: immutable frames, verified against their id on every read;
 * - `lock`: the writers' lock.
 *
 * Every file is written to a temp file, fsynced and renamed, so readers never see a half-written state.
 */
export class MerkleStore {
  /** Absolute path of `.merkle/`. */
  readonly dir: string;
  /** The tree file as decoded, with its checksum (which a journal names) and size. */
  private baseCache: Cached<{ tree: Tree; checksum: Buffer; size: number }> | undefined;
  /** The tree with its journal applied. */
  private treeCache: Cached<Tree> | undefined;
  /** The journal of the cached tree: where its valid entries end, and its size on disk. */
  private journal: { validLength: number; size: number } | undefined;
  private stateCache: Cached<StoreState> | undefined;

  constructor(
    workspaceRoot: string,
    private readonly backend: HashBackend,
  ) {
    this.dir = join(workspaceRoot, STORE_DIR);
  }

  /** Creates `.merkle/` if needed (writers only: reading never creates anything). */
  ensure(): void {
    mkdirSync(join(this.dir, 'frames'), { recursive: true });
  }

  /** Takes the workspace write lock; resolves to its release function. */
  lock(timeoutMs?: number): Promise<() => void> {
    this.ensure();
    return acquireLock(join(this.dir, 'lock'), { timeoutMs });
  }

  /**
   * The stored tree (the tree file with its journal applied) and the time it was last written, or undefined before
   * the first scan.
   */
  readTree(): { tree: Tree; writtenMs: number } | undefined {
    const file = join(this.dir, 'tree');
    const stat = statOrUndefined(file);
    if (stat === undefined) return undefined;
    const baseKey = statKey(stat);
    if (this.baseCache?.key !== baseKey) {
      const data = readFileSync(file);
      this.baseCache = { key: baseKey, value: { tree: Tree.decode(data, this.backend, file), checksum: Buffer.from(data.subarray(12, 44)), size: data.length } };
    }
    const journalFile = join(this.dir, 'tree.journal');
    const journalStat = statOrUndefined(journalFile);
    const key = `${baseKey}|${journalStat === undefined ? '' : statKey(journalStat)}`;
    if (this.treeCache?.key !== key) {
      const base = this.baseCache.value;
      const journal = journalStat === undefined ? undefined : decodeJournal(readFileSync(journalFile), base.checksum, this.backend);
      const tree = journal === undefined ? base.tree : base.tree.applyJournal(journal.entries, journalFile);
      this.treeCache = { key, value: tree };
      this.journal = journal === undefined ? undefined : { validLength: journal.validLength, size: journalStat!.size };
    }
    return { tree: this.treeCache.value, writtenMs: Math.max(stat.mtimeMs, journalStat?.mtimeMs ?? 0) };
  }

  /** Replaces the stored tree (and drops its journal). */
  writeTree(tree: Tree): void {
    this.ensure();
    const file = join(this.dir, 'tree');
    const journalFile = join(this.dir, 'tree.journal');
    const data = tree.encode(this.backend);
    const checksum = data.subarray(12, 44);
    // A journal left on disk must never apply to the new tree file. It names the tree file it extends by checksum,
    // so normally the new file goes first (a crash in between leaves a journal that names another file, ignored).
    // Only a journal naming this very checksum (an identical file) must go first; a crash in between then leaves
    // exactly the new tree.
    if (journalNames(journalFile, checksum)) rmSync(journalFile, { force: true });
    writeFileAtomic.sync(file, data);
    rmSync(journalFile, { force: true });
    const stat = statSync(file);
    // The tree just written is the tree in memory: the next read need not decode it again.
    this.baseCache = { key: statKey(stat), value: { tree, checksum: Buffer.from(data.subarray(12, 44)), size: data.length } };
    this.treeCache = { key: `${statKey(stat)}|`, value: tree };
    this.journal = undefined;
  }

  /**
   * Stores `tree`, the stored tree updated by `delta`: appended to the journal (one fsynced append), or, when the
   * journal has grown past an eighth of the tree file, by rewriting the tree file.
   */
  updateTree(tree: Tree, delta: Omit<JournalEntry, 'basis'>): void {
    const base = this.baseCache?.value;
    const entry = encodeJournalEntry({ ...delta, basis: tree.basis }, this.backend);
    const journalFile = join(this.dir, 'tree.journal');
    const length = this.journal?.validLength ?? JOURNAL_HEADER_BYTES;
    if (base === undefined || this.treeCache === undefined || length + entry.length > Math.max(64 * 1024, base.size / 8)) {
      this.writeTree(tree);
      return;
    }
    if (this.journal === undefined) {
      writeFileAtomic.sync(journalFile, Buffer.concat([journalHeader(base.checksum), entry]));
    } else {
      const fd = openSync(journalFile, 'r+');
      try {
        // Drop a torn entry left by a crash before appending after it.
        if (this.journal.size !== length) ftruncateSync(fd, length);
        writeSync(fd, entry, 0, entry.length, length);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    const journalStat = statSync(journalFile);
    this.treeCache = { key: `${this.baseCache!.key}|${statKey(journalStat)}`, value: tree };
    this.journal = { validLength: length + entry.length, size: journalStat.size };
  }

  /** The frame state (empty before any frame was written). Shared and read-only: see {@link readStateForUpdate}. */
  readState(): Readonly<StoreState> {
    const file = join(this.dir, 'state.json');
    const stat = statOrUndefined(file);
    if (stat === undefined) return emptyState();
    const key = `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
    if (this.stateCache?.key !== key) this.stateCache = { key, value: this.readSealed<StoreState>(file) };
    return this.stateCache.value;
  }

  /** A private copy of the frame state for a transaction to modify. */
  readStateForUpdate(): StoreState {
    return structuredClone(this.readState()) as StoreState;
  }

  /** Replaces the frame state; false (nothing written) when it is unchanged. */
  writeState(state: StoreState): boolean {
    return this.writeSealed(join(this.dir, 'state.json'), state);
  }

  /** Registered agents by id. */
  readAgents(): Record<string, AgentIdentity> {
    const file = join(this.dir, 'agents.json');
    if (statOrUndefined(file) === undefined) return {};
    return this.readSealed<{ agents: Record<string, AgentIdentity> }>(file).agents;
  }

  /** Replaces the agent registry; false when unchanged. */
  writeAgents(agents: Record<string, AgentIdentity>): boolean {
    const sorted: Record<string, AgentIdentity> = {};
    for (const id of Object.keys(agents).sort()) sorted[id] = agents[id];
    return this.writeSealed(join(this.dir, 'agents.json'), { agents: sorted });
  }

  /** Path of a frame file. */
  framePath(frameId: string): string {
    return join(this.dir, 'frames', frameId.slice(0, 2), `${frameId}.json`);
  }

  /** Reads a frame and verifies it against its id. */
  readFrame(frameId: string): Frame {
    const file = this.framePath(frameId);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      throw new ContextError('UNKNOWN_FRAME', `frame ${frameId} not found at ${file}`, { frameId, file });
    }
    let frame: Frame;
    try {
      frame = JSON.parse(text) as Frame;
    } catch {
      throw corrupt(file, `frame ${frameId} is not valid JSON`);
    }
    const problem = verifyFrame(frame, frameId, this.backend);
    if (problem !== undefined) throw corrupt(file, `frame ${frameId} fails verification (${problem})`);
    return frame;
  }

  /**
   * Stores frames. Frames are immutable: an id that exists is left alone when the stored bytes are the same, and
   * is a FRAME_CONFLICT error when they differ (nothing is overwritten). Each new file is written to a temp name and
   * renamed; all are then fsynced together (one journal commit rather than one per frame).
   */
  writeFrames(frames: Iterable<Frame>): void {
    const written: string[] = [];
    for (const frame of frames) {
      const file = this.framePath(frame.frameId);
      const text = `${JSON.stringify(frame)}\n`;
      if (statOrUndefined(file) !== undefined) {
        if (readFileSync(file, 'utf8') === text) continue;
        throw new ContextError(
          'FRAME_CONFLICT',
          `frame ${frame.frameId} already exists at ${file} with different bytes; frames are never overwritten`,
          { frameId: frame.frameId, file },
        );
      }
      mkdirSync(join(this.dir, 'frames', frame.frameId.slice(0, 2)), { recursive: true });
      const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      writeFileSync(temp, text, { mode: 0o444 });
      renameSync(temp, file);
      written.push(file);
    }
    for (const file of written) {
      const fd = openSync(file, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
  }

  private readSealed<T>(file: string): T {
    let doc: { checksum?: unknown; data?: unknown };
    try {
      doc = JSON.parse(readFileSync(file, 'utf8')) as typeof doc;
    } catch (error) {
      throw corrupt(file, `not valid JSON (${(error as Error).message})`);
    }
    const body = JSON.stringify(doc.data);
    if (typeof doc.checksum !== 'string' || body === undefined || this.backend.digest(Buffer.from(body)).toString('hex') !== doc.checksum) {
      throw corrupt(file, 'checksum mismatch');
    }
    return doc.data as T;
  }

  private writeSealed(file: string, data: unknown): boolean {
    const body = JSON.stringify(data);
    const text = `{"checksum":"${this.backend.digest(Buffer.from(body)).toString('hex')}","data":${body}}\n`;
    try {
      if (readFileSync(file, 'utf8') === text) return false;
    } catch {
      // Not written yet.
    }
    this.ensure();
    writeFileAtomic.sync(file, text);
    return true;
  }
}

function corrupt(file: string, why: string): ContextError {
  return new ContextError('CORRUPT_STORE', `corrupt store file ${file}: ${why}`, { file });
}

/** True when the journal file on disk (if any) extends a tree file with this checksum. */
function journalNames(journalFile: string, checksum: Buffer): boolean {
  let fd: number;
  try {
    fd = openSync(journalFile, 'r');
  } catch {
    return false;
  }
  try {
    const header = Buffer.alloc(JOURNAL_HEADER_BYTES);
    const n = readSync(fd, header, 0, header.length, 0);
    return n === header.length && header.subarray(12).equals(checksum);
  } finally {
    closeSync(fd);
  }
}

function statKey(stat: { ino: number; mtimeMs: number; size: number }): string {
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}

function statOrUndefined(file: string): { ino: number; mtimeMs: number; size: number } | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}
