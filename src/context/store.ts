import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeHolder, fsyncDirSync, waitForLock, writeFileAtomicSync } from '../fs/index.js';
import type { AgentIdentity } from './agents.js';
import { ContextError } from './errors.js';
import { verifyFrame, type Frame } from './frames.js';
import type { HashBackend } from './hash.js';
import { STORE_DIR } from './ignore-rules.js';
import { emptyState, type StoreState } from './state.js';
import { corruptStoreFile, seal, unseal } from './sealed.js';
import { Tree } from './tree.js';
import { JournaledFile } from './journal.js';
import { copyForUpdate, stateChange, stateCodec, type StateJournalEntry } from './state-journal.js';
import { treeCodec, type TreeJournalEntry } from './tree-journal.js';

/**
 * The `.merkle/` folder of one workspace:
 *
 * - `tree`: the scanned tree and stat cache (binary, checksummed), and `tree.journal`: the rescans since;
 * - `state.json`: frame sets, heads, stale marks and the basis index (sealed JSON), and `state.journal`: the
 *   transactions since (journals: see `journal.ts`);
 * - `agents.json`: registered agents (sealed JSON);
 * - `frames/<2 hex>/<FrameID>.json`: immutable frames, verified against their id on every read;
 * - `lock`: the writers' lock.
 *
 * Every file is written to a temp file, fsynced and renamed, so readers never see a half-written state.
 */
export class MerkleStore {
  /** Absolute path of `.merkle/`. */
  readonly dir: string;
  private readonly tree: JournaledFile<Tree, TreeJournalEntry>;
  private readonly state: JournaledFile<StoreState, StateJournalEntry>;

  constructor(
    workspaceRoot: string,
    private readonly backend: HashBackend,
  ) {
    this.dir = join(workspaceRoot, STORE_DIR);
    this.tree = new JournaledFile(join(this.dir, 'tree'), join(this.dir, 'tree.journal'), treeCodec(backend), backend);
    this.state = new JournaledFile(join(this.dir, 'state.json'), join(this.dir, 'state.journal'), stateCodec(backend), backend);
  }

  /** Creates `.merkle/` if needed (writers only: reading never creates anything). */
  ensure(): void {
    mkdirSync(join(this.dir, 'frames'), { recursive: true });
  }

  /** Takes the workspace write lock; resolves to its release function. */
  async lock(timeoutMs = 10_000): Promise<() => void> {
    this.ensure();
    const file = join(this.dir, 'lock');
    const result = await waitForLock(file, { timeoutMs });
    if (!('busy' in result)) return () => result.release();
    const who = result.reason === 'unreadable' ? 'a file that is not a lock record' : result.holder === undefined ? 'another writer' : describeHolder(result.holder);
    throw new ContextError('LOCK_TIMEOUT', `workspace lock ${file} is held by ${who}; waited ${timeoutMs} ms. If that process is gone, delete the file.`, { file });
  }

  /**
   * The stored tree (the tree file with its journal applied) and the time it was last written, or undefined before
   * the first scan.
   */
  readTree(): { tree: Tree; writtenMs: number } | undefined {
    const stored = this.tree.read();
    return stored === undefined ? undefined : { tree: stored.value, writtenMs: stored.writtenMs };
  }

  /** Size of the tree file in bytes (0 before the first scan), without reading it. */
  treeFileBytes(): number {
    return statSync(join(this.dir, 'tree'), { throwIfNoEntry: false })?.size ?? 0;
  }

  /** Replaces the stored tree (and drops its journal). */
  writeTree(tree: Tree): void {
    this.ensure();
    this.tree.write(tree);
  }

  /** Stores `tree`, the stored tree updated by `delta`, as one journal entry (see `journal.ts`). */
  updateTree(tree: Tree, delta: Omit<TreeJournalEntry, 'basis'>): void {
    this.tree.append(tree, { ...delta, basis: tree.basis ?? null });
  }

  /** The frame state (empty before any frame was written). Shared and read-only: see {@link readStateForUpdate}. */
  readState(): Readonly<StoreState> {
    return this.state.read()?.value ?? emptyState();
  }

  /**
   * A copy of the frame state for a transaction to modify with the functions of `state.ts`, which replace the
   * per-path values they change rather than mutating them; so the copy is shallow, and {@link writeState} finds
   * what changed by identity.
   */
  readStateForUpdate(): StoreState {
    return copyForUpdate(this.readState());
  }

  /** Stores a state made from {@link readStateForUpdate}: one journal entry of what changed; false when nothing did. */
  writeState(state: StoreState): boolean {
    const before = this.readState();
    const entry = stateChange(before, state);
    if (entry === undefined) return false;
    this.ensure();
    if (this.state.read() === undefined) this.state.write(state);
    else this.state.append(state, entry);
    return true;
  }

  /** Registered agents by id. */
  readAgents(): Record<string, AgentIdentity> {
    const file = join(this.dir, 'agents.json');
    if (!existsSync(file)) return {};
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
      throw corruptStoreFile(file, `frame ${frameId} is not valid JSON`);
    }
    const problem = verifyFrame(frame, frameId, this.backend);
    if (problem !== undefined) throw corruptStoreFile(file, `frame ${frameId} fails verification (${problem})`);
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
      if (existsSync(file)) {
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
    // Frames are durable (contents and directory entries) before the journal entry that references them is written.
    for (const file of written) {
      const fd = openSync(file, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    for (const dir of new Set(written.map((file) => dirname(file)))) fsyncDirSync(dir);
  }

  private readSealed<T>(file: string): T {
    return unseal<T>(readFileSync(file, 'utf8'), file, this.backend);
  }

  private writeSealed(file: string, data: unknown): boolean {
    const text = seal(data, this.backend);
    try {
      if (readFileSync(file, 'utf8') === text) return false;
    } catch {
      // Not written yet.
    }
    this.ensure();
    writeFileAtomicSync(file, text);
    return true;
  }
}
