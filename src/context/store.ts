import { closeSync, fsyncSync, readdirSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeHolder, fsyncDirSync, randomHex, removeFileIfExists, waitForLock, writeFileAtomicSync } from '../fs/index.js';
import type { AgentIdentity } from './agents.js';
import { ContextError } from './errors.js';
import { verifyFrame, type Frame } from './frames.js';
import type { HashBackend } from './hash.js';
import { STORE_DIR } from './ignore-rules.js';
import { emptyState, type StoreState } from './state.js';
import { corruptStoreFile, seal, unseal } from './sealed.js';
import { Tree, type NodeRecord } from './tree.js';
import { JournaledFile } from './journal.js';
import { copyForUpdate, stateChange, stateCodec, type StateJournalEntry } from './state-journal.js';
import { treeCodec, type TreeJournalEntry } from './tree-journal.js';
import { encodeStatIndex, StatIndex, statView, TREE_HEADER_BYTES, type StatView } from './stat-index.js';
import { checkStoreDir, checkStoreFile, createStoreFile, ensureStoreDir, lstatEntry, readStoreFile } from './store-files.js';

/** The stored tree as read: see {@link MerkleStore.readTree}. */
export interface StoredTree {
  readonly tree: Tree;
  readonly writtenMs: number;
  readonly key: string;
  readonly damage?: string;
}

/** What {@link MerkleStore.readTree} answers when the tree file is missing though it was written: the damage, no tree. */
export interface LostTree {
  readonly tree?: undefined;
  readonly writtenMs?: undefined;
  readonly key?: undefined;
  readonly damage: string;
}

/** A directory's record without its list of children (see `TreeJournalEntry`). */
function withoutChildren(record: NodeRecord): NodeRecord {
  const { path, kind, nodeId, contentHash, size, mtimeMs, ino } = record;
  return { path, kind, nodeId, contentHash, size, mtimeMs, ino };
}

/** The stat index of the tree file, in `.merkle/` (see `stat-index.ts`). */
const STAT_INDEX_FILE = 'tree.stat';

/** A frame written to its temp file by {@link MerkleStore.stageFrames}, not yet renamed to `file`. */
export interface StagedFrame {
  readonly temp: string;
  readonly file: string;
}

/**
 * The `.merkle/` folder of one workspace:
 *
 * - `tree`: the scanned tree and stat cache (binary, checksummed), and `tree.journal`: the rescans since;
 * - `tree.stat`: the stat cache of `tree` alone, for the quick check of a rescan (a cache: see `stat-index.ts`);
 * - `state.json`: frame sets, heads, stale marks and the basis index (sealed JSON), and `state.journal`: the
 *   transactions since (journals: see `journal.ts`);
 * - `agents.json`: registered agents (sealed JSON);
 * - `frames/<2 hex>/<FrameID>.json`: immutable frames, verified against their id on every read;
 * - `lock`: the writers' lock.
 *
 * Every file is written to a temp file, fsynced and renamed, so readers never see a half-written state. Nothing in
 * `.merkle/` is followed or waited on: every method checks that the folders it uses are real directories, and files
 * are opened as `store-files.ts` says (a symlink, FIFO or other special file is a CORRUPT_STORE error naming it).
 */
export class MerkleStore {
  /** Absolute path of `.merkle/`. */
  readonly dir: string;
  private readonly tree: JournaledFile<Tree, TreeJournalEntry>;
  private readonly state: JournaledFile<StoreState, StateJournalEntry>;
  /** The stat index last read, by the stat of its file and the header of the tree file it mirrors. */
  private statIndex: { key: string; index: StatIndex } | undefined;

  constructor(
    workspaceRoot: string,
    private readonly backend: HashBackend,
  ) {
    this.dir = join(workspaceRoot, STORE_DIR);
    this.tree = new JournaledFile(join(this.dir, 'tree'), join(this.dir, 'tree.journal'), treeCodec(backend), backend, (data) => this.writeStatIndex(data));
    this.state = new JournaledFile(join(this.dir, 'state.json'), join(this.dir, 'state.journal'), stateCodec(backend), backend);
  }

  /** Creates `.merkle/` and `frames/` if needed (writers only: reading never creates anything), as real directories. */
  ensure(): void {
    ensureStoreDir(this.dir);
    ensureStoreDir(join(this.dir, 'frames'));
  }

  /** Throws CORRUPT_STORE unless `.merkle/` is a real directory or missing (see `store-files.ts`); readers call it first. */
  private checkDir(): void {
    checkStoreDir(this.dir);
  }

  /** Takes the workspace write lock; resolves to its release function. */
  async lock(timeoutMs = 10_000): Promise<() => void> {
    this.ensure();
    const file = join(this.dir, 'lock');
    // The lock library reads a lock file it finds: one that is not a regular file is refused before it could block.
    checkStoreFile(file);
    checkStoreFile(`${file}.recover`);
    const result = await waitForLock(file, { timeoutMs });
    if (!('busy' in result)) return () => result.release();
    const who = result.reason === 'unreadable' ? 'a file that is not a lock record' : result.holder === undefined ? 'another writer' : describeHolder(result.holder);
    throw new ContextError('LOCK_TIMEOUT', `workspace lock ${file} is held by ${who}; waited ${timeoutMs} ms. If that process is gone, delete the file.`, { file });
  }

  /**
   * The stored tree (the tree file with its journal applied) and the time it was last written, or undefined before
   * the first scan. `damage` names a damaged or missing `tree.journal` or `tree.witness` and what was lost (see
   * `journal.ts`): the tree is then older than the last scan, and a scan rebuilds it from the workspace. A missing
   * tree file that was written is a {@link LostTree}, which a scan rebuilds too.
   */
  readTree(): StoredTree | LostTree | undefined {
    this.checkDir();
    const stored = this.tree.read();
    if (stored?.value === undefined) return stored;
    return { tree: stored.value, writtenMs: stored.writtenMs, key: stored.key, damage: stored.damage };
  }

  /** {@link readTree}'s answer when the tree it would read is the one already in memory; otherwise undefined. */
  readTreeIfCached(): StoredTree | undefined {
    this.checkDir();
    const stored = this.tree.readIfCached();
    return stored === undefined ? undefined : { tree: stored.value, writtenMs: stored.writtenMs, key: stored.key, damage: stored.damage };
  }

  /**
   * What a rescan's quick check needs of the stored tree, from `tree.stat` (see `stat-index.ts`) and the journal,
   * without reading the tree file's body; `key` equals {@link readTree}'s for the same files. Undefined when the
   * stat index is missing, damaged or not that of the tree file: then the tree file serves.
   */
  readStatView(): { view: StatView; writtenMs: number; key: string; damage?: string } | undefined {
    this.checkDir();
    const journaled = this.tree.readEntries(TREE_HEADER_BYTES);
    if (journaled === undefined) return undefined;
    const file = join(this.dir, STAT_INDEX_FILE);
    const stat = lstatEntry(file);
    if (stat === undefined) return undefined;
    // An engine that stays open reads the stat index again only when it or the tree file changed.
    const cacheKey = `${stat.ino}:${stat.mtimeMs}:${stat.size}:${journaled.header.toString('hex')}`;
    let index = this.statIndex?.key === cacheKey ? this.statIndex.index : undefined;
    if (index === undefined) {
      // On a SharedArrayBuffer, so that the quick check's helper thread reads the same bytes without a copy (see
      // SharedStatJob). A cache: when it cannot be read (a special file, say), the tree file serves.
      let data: Buffer | undefined;
      try {
        data = readStoreFile(file, (size) => Buffer.from(new SharedArrayBuffer(size)));
      } catch {
        return undefined;
      }
      if (data === undefined) return undefined;
      index = StatIndex.read(data, journaled.header, this.backend);
      if (index !== undefined) this.statIndex = { key: cacheKey, index };
    }
    const view = index === undefined ? undefined : statView(index, journaled.entries);
    return view === undefined ? undefined : { view, writtenMs: journaled.writtenMs, key: journaled.key, damage: journaled.damage };
  }

  /**
   * Derives `tree.stat` from the tree file just written. It is a cache: when it cannot be written, the one left on
   * disk names another tree file and is ignored, so the failure is not the scan's.
   */
  private writeStatIndex(tree: Buffer): void {
    const file = join(this.dir, STAT_INDEX_FILE);
    const data = encodeStatIndex(tree, this.backend);
    try {
      if (data === undefined) removeFileIfExists(file);
      else writeFileAtomicSync(file, data);
    } catch {
      // See above: a stale or missing stat index is never used.
    }
  }

  /** Size of the tree file in bytes (0 before the first scan), without reading it. */
  treeFileBytes(): number {
    this.checkDir();
    return lstatEntry(join(this.dir, 'tree'))?.size ?? 0;
  }

  /** Replaces the stored tree (and drops its journal). */
  writeTree(tree: Tree): void {
    this.ensure();
    this.tree.write(tree);
  }

  /** Stores `tree`, the stored tree updated by `delta`, as one journal entry (see `journal.ts`). */
  updateTree(tree: Tree, delta: Omit<TreeJournalEntry, 'basis'>): void {
    // Without their children: a change to one file upserts every directory above it, whose child lists (the root's
    // above all) made up most of each entry, and of the time to read a journal near compaction.
    const upserts = delta.upserts.map((record) => (record.children === undefined ? record : withoutChildren(record)));
    this.tree.append(tree, { upserts, removed: delta.removed, basis: tree.basis ?? null });
  }

  /**
   * Records that a scan found `tree` unchanged after reading again entries of its racy window (see
   * ScanResult.racyMtimeMs): an empty journal entry, whose write time becomes the tree's (the journal's mtime), so
   * the next scan trusts the stat of entries older than this one. Without it a workspace scanned within the tick of
   * its last change (a small one, right after `.merkle/` was created in its root, say) was read again at every scan,
   * never by the quick check.
   */
  refreshTree(tree: Tree): void {
    this.tree.append(tree, { upserts: [], removed: [], basis: tree.basis ?? null });
  }

  /**
   * The frame state (empty before any frame was written). Shared and read-only: see {@link readStateForUpdate}.
   * `damage` names a damaged or missing `state.journal`, `state.witness` or `state.json` and what was lost (see
   * `journal.ts`): the state is then older than the last acknowledged transaction (empty when `state.json` is lost).
   */
  readStateChecked(): { state: Readonly<StoreState>; damage?: string } {
    this.checkDir();
    const stored = this.state.read();
    return { state: stored?.value ?? emptyState(), damage: stored?.damage };
  }

  /** The frame state alone, for callers that report its damage elsewhere (see {@link readStateChecked}). */
  readState(): Readonly<StoreState> {
    return this.readStateChecked().state;
  }

  /**
   * A copy of the frame state for a transaction to modify with the functions of `state.ts`, which replace the
   * per-path values they change rather than mutating them; so the copy is shallow, and {@link writeState} finds
   * what changed by identity. Throws CORRUPT_STORE when `state.journal` is damaged: a write would fold the
   * surviving state into a new base and end the damage's report, so writes wait for {@link repairState}.
   */
  readStateForUpdate(): StoreState {
    const { state, damage } = this.readStateChecked();
    if (damage !== undefined) {
      throw new ContextError(
        'CORRUPT_STORE',
        `${damage}. Writes to the frame state are refused so that this stays reported: run 'backpackflow context validate' to see what it affects, then 'backpackflow context repair' to continue from the state that survives (the damaged journal is kept beside it)`,
        { file: join(this.dir, 'state.journal') },
      );
    }
    return copyForUpdate(state);
  }

  /** Stores a state made from {@link readStateForUpdate}: one journal entry of what changed; false when nothing did. */
  writeState(state: StoreState): boolean {
    const before = this.readState();
    const entry = stateChange(before, state);
    if (entry === undefined) return false;
    this.ensure();
    if (this.state.read()?.value === undefined) this.state.write(state);
    else this.state.append(state, entry);
    return true;
  }

  /** Bytes after the committed entries of `state.journal`, described (see `JournaledFile.uncommitted`); undefined when none. */
  stateJournalUncommitted(): string | undefined {
    this.checkDir();
    this.state.read();
    return this.state.uncommitted();
  }

  /**
   * Accepts the loss reported for a damaged or missing `state.journal`, `state.witness` or `state.json` (whose loss
   * leaves the empty state), or for a `state.json` that fails to decode (kept as `state.json.damaged-<time>`, and
   * lost too): keeps a copy of the journal (when there is one) as `state.journal.damaged-<time>` and stores the state
   * that survives as a new base with an empty journal. The journal stays in place until that write replaces it, so a
   * repair killed on the way leaves the store as it found it (the next repair does the same again), never the base
   * without the journal entries it had just said survive. Returns what was repaired, or undefined when nothing was
   * damaged. Callers hold the lock.
   */
  repairState(): string | undefined {
    const base = join(this.dir, 'state.json');
    const journal = join(this.dir, 'state.journal');
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const corrupt = this.keepCorruptBase(base, `${base}.damaged-${stamp}`);
    const { state, damage } = this.readStateChecked();
    if (damage === undefined && corrupt === undefined) return undefined;
    const kept = `${journal}.damaged-${stamp}`;
    const damaged = readStoreFile(journal);
    // A durable copy (temp file, fsync, rename) before the write that replaces the journal.
    if (damaged !== undefined) writeFileAtomicSync(kept, damaged);
    this.state.write(copyForUpdate(state));
    const what = [corrupt, damage].filter((m): m is string => m !== undefined).join('; ');
    return `${what}; the frame state that survives is now ${base}${damaged !== undefined ? `, and the damaged journal is kept as ${kept}` : ''}`;
  }

  /** Moves `base` to `kept` when it fails to decode (a CORRUPT_STORE error naming it); what was moved, or undefined. */
  private keepCorruptBase(base: string, kept: string): string | undefined {
    try {
      this.readStateChecked();
      return undefined;
    } catch (error) {
      if (!(error instanceof ContextError && error.code === 'CORRUPT_STORE' && error.details['file'] === base)) throw error;
      renameSync(base, kept);
      return `${error.message}; it is kept as ${kept}`;
    }
  }

  /** Registered agents by id; a damaged `agents.json` is a CORRUPT_STORE error that says how to go on (repairAgents). */
  readAgents(): Record<string, AgentIdentity> {
    this.checkDir();
    const file = join(this.dir, 'agents.json');
    const data = readStoreFile(file);
    if (data === undefined) return {};
    try {
      return unseal<{ agents: Record<string, AgentIdentity> }>(data.toString('utf8'), file, this.backend).agents;
    } catch (error) {
      if (!(error instanceof ContextError && error.code === 'CORRUPT_STORE')) throw error;
      throw new ContextError(
        'CORRUPT_STORE',
        `${error.message}: the agent registrations cannot be read; 'backpackflow context repair' keeps the file aside and starts an empty registry (then register the agents again)`,
        error.details,
      );
    }
  }

  /**
   * Accepts the loss of a damaged `agents.json`: keeps it as `agents.json.damaged-<time>` and starts an empty registry,
   * so that writes can go on once the agents are registered again. Returns what was repaired, or undefined when the
   * file reads (or is missing). Callers hold the lock.
   */
  repairAgents(): string | undefined {
    const file = join(this.dir, 'agents.json');
    try {
      this.readAgents();
      return undefined;
    } catch (error) {
      if (!(error instanceof ContextError && error.code === 'CORRUPT_STORE' && error.details['file'] === file)) throw error;
      const kept = `${file}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      renameSync(file, kept);
      return `${file} could not be read; it is kept as ${kept}, and the registry starts empty: register the agents again (backpackflow context agent add <id> --role <role>)`;
    }
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

  /**
   * Reads a frame and verifies it against its id. A frame whose write stopped between the state journal and the
   * rename (see {@link stageFrames}) is read from its temp file, once verified.
   */
  readFrame(frameId: string): Frame {
    const file = this.framePath(frameId);
    this.checkFrameDirs(frameId);
    const data = readStoreFile(file);
    if (data !== undefined) return this.parseFrame(data, frameId, file);
    for (const temp of this.unfinishedFrameFiles(frameId)) {
      try {
        const staged = readStoreFile(temp);
        if (staged !== undefined) return this.parseFrame(staged, frameId, temp);
      } catch {
        // Not this one (cut short, another frame's bytes, not a regular file): try the next.
      }
    }
    // A writer in another process may have renamed the temp file into place between the two reads above.
    const renamed = readStoreFile(file);
    if (renamed !== undefined) return this.parseFrame(renamed, frameId, file);
    throw new ContextError('UNKNOWN_FRAME', `frame ${frameId} not found at ${file}`, { frameId, file });
  }

  /**
   * The files in the shards of `frames/` (frames, and temp files of writes in progress or killed). A `frames/` or
   * shard that is not a real directory is reported to `onError` and not listed (see store-files.ts).
   */
  frameFiles(onError: (message: string) => void): { file: string; name: string }[] {
    const root = join(this.dir, 'frames');
    const list = (dir: string): string[] => {
      try {
        return checkStoreDir(dir) ? readdirSync(dir) : [];
      } catch (error) {
        // Not a real directory: reported. Unreadable (or gone meanwhile): nothing to list.
        if (error instanceof ContextError) onError(error.message);
        return [];
      }
    };
    const files: { file: string; name: string }[] = [];
    for (const shard of list(root)) for (const name of list(join(root, shard))) files.push({ file: join(root, shard, name), name });
    return files;
  }

  /**
   * Moves the frame files that no frame set references (committed by transactions whose journal entries were lost:
   * see validate's checkOrphans) out of `frames/` into `frames.lost-<stamp>/<shard>/`, kept for inspection; what
   * was moved, or undefined. Callers hold the lock, so no writer is between a frame's journal entry and its rename.
   */
  keepUnreferencedFrames(referenced: ReadonlySet<string>, stamp: string): string | undefined {
    const lost = this.frameFiles(() => undefined).filter(({ name }) => name.length === 69 && name.endsWith('.json') && !referenced.has(name.slice(0, 64)));
    if (lost.length === 0) return undefined;
    const kept = join(this.dir, `frames.lost-${stamp}`);
    ensureStoreDir(kept);
    fsyncDirSync(this.dir);
    for (const { file, name } of lost) {
      const shard = join(kept, name.slice(0, 2));
      ensureStoreDir(shard);
      fsyncDirSync(kept);
      renameSync(file, join(shard, name));
      fsyncDirSync(shard);
      fsyncDirSync(dirname(file));
    }
    return `${lost.length} frame file${lost.length === 1 ? '' : 's'} no frame set references (their transactions' journal entries were lost) moved out of frames/ and kept in ${kept}`;
  }

  /** Checks that `.merkle/`, `frames/` and the shard of `frameId` are real directories or missing; true when all exist. */
  private checkFrameDirs(frameId: string): boolean {
    const shard = dirname(this.framePath(frameId));
    return checkStoreDir(this.dir) && checkStoreDir(dirname(shard)) && checkStoreDir(shard);
  }

  /**
   * The frame `data` holds, verified against `frameId`; a CORRUPT_STORE error naming `file` and the frame otherwise:
   * not JSON, JSON of another shape (a damaged field name or type: see `frameShapeProblem`), or fields that do not
   * hash to the id.
   */
  private parseFrame(data: Buffer, frameId: string, file: string): Frame {
    let frame: unknown;
    try {
      frame = JSON.parse(data.toString('utf8'));
    } catch {
      throw corruptStoreFile(file, `frame ${frameId} is not valid JSON`);
    }
    let problem: string | undefined;
    try {
      problem = verifyFrame(frame, frameId, this.backend);
    } catch (error) {
      // A backstop: verifyFrame checks the shape it hashes, so nothing should throw here; if anything does, the
      // error still names the file rather than reaching the caller bare.
      problem = `it cannot be verified: ${(error as Error).message}`;
    }
    if (problem !== undefined) throw corruptStoreFile(file, `frame ${frameId} fails verification (${problem})`);
    return frame as Frame;
  }

  /**
   * First half of storing frames, before the state that references them: each new frame is written to a temp file
   * beside its final name and fsynced, with its directory. Frames are immutable: an id that exists is left alone when
   * the stored bytes are the same, and is a FRAME_CONFLICT error when they differ (nothing is overwritten). Returns
   * the temp files for {@link commitFrames}, or for {@link discardFrames} when the state is not written.
   *
   * The order (frames staged, state journal entry fsynced, frames renamed into place) means that a final frame file
   * only ever exists once the journal entry referencing it is durable. So a final frame file that no frame set
   * references can only be the trace of a committed transaction whose journal entry was lost later (a damaged or cut
   * journal): `validate` reports it as an error and never as safe to delete. A crash before the rename leaves the
   * frame in its temp file, which {@link readFrame} accepts (it is verified against its id) until a writer finishes it.
   */
  stageFrames(frames: Iterable<Frame>): StagedFrame[] {
    const staged: StagedFrame[] = [];
    this.ensure();
    for (const frame of frames) {
      const file = this.framePath(frame.frameId);
      const text = Buffer.from(`${JSON.stringify(frame)}\n`);
      ensureStoreDir(dirname(file));
      const stored = readStoreFile(file);
      if (stored !== undefined) {
        if (stored.equals(text)) continue;
        throw new ContextError(
          'FRAME_CONFLICT',
          `frame ${frame.frameId} already exists at ${file} with different bytes; frames are never overwritten`,
          { frameId: frame.frameId, file },
        );
      }
      const temp = `${file}.${process.pid}.${randomHex(4)}.tmp`;
      const fd = createStoreFile(temp, 0o444);
      try {
        for (let done = 0; done < text.length; ) done += writeSync(fd, text, done, text.length - done);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      staged.push({ temp, file });
    }
    for (const dir of new Set(staged.map((s) => dirname(s.file)))) fsyncDirSync(dir);
    return staged;
  }

  /** Second half of storing frames, once the state that references them is durable: renames them into place. */
  commitFrames(staged: readonly StagedFrame[]): void {
    for (const { temp, file } of staged) renameSync(temp, file);
    for (const dir of new Set(staged.map((s) => dirname(s.file)))) fsyncDirSync(dir);
  }

  /** Removes staged frames whose state was not written (nothing changed). */
  discardFrames(staged: readonly StagedFrame[]): void {
    for (const { temp } of staged) removeFileIfExists(temp);
  }

  /**
   * Temp files holding a verified copy of `frameId` (a write that stopped between the state journal and the
   * rename), best first. CORRUPT_STORE when a folder on the way is not a real directory.
   */
  unfinishedFrameFiles(frameId: string): string[] {
    const dir = dirname(this.framePath(frameId));
    if (!this.checkFrameDirs(frameId)) return [];
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    return names.filter((n) => n.startsWith(`${frameId}.json.`) && n.endsWith('.tmp')).map((n) => join(dir, n));
  }

  private writeSealed(file: string, data: unknown): boolean {
    const text = seal(data, this.backend);
    this.ensure();
    if (readStoreFile(file)?.toString('utf8') === text) return false;
    writeFileAtomicSync(file, text);
    return true;
  }
}
