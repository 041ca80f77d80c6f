import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { isAbsolute, join, relative, resolve as resolvePath, sep } from 'node:path';
import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { authorize, checkAgentId, checkIdentity, type AgentIdentity, type AgentRole } from './agents.js';
import { composeFrames, type ComposedContext, type CompositionPolicy } from './compose.js';
import { ContextError } from './errors.js';
import {
  checkFrameInput,
  checkFrameType,
  computeFrameId,
  nodeBasisHash,
  synthesisBasisHash,
  type Frame,
  type FrameInput,
} from './frames.js';
import { compareCodePoints, isHexId, loadHashBackend, type HashBackend } from './hash.js';
import { IgnoreRules } from './ignore-rules.js';
import { displayPath, parentPath, toWorkspacePath } from './paths.js';
import { quickCheck, treeStats, type StaleLeaf } from './quick-check.js';
import { scanWorkspace, type ScanResult } from './scan.js';
import { StatPool } from './stat-pool.js';
import { plainRecord } from './stored-nodes.js';
import { MerkleStore } from './store.js';
import { headEntry, markStale, own, recordFrame, referencedFrames, type StoreState } from './state.js';
import {
  policyFromKey,
  resolvePolicy,
  type CustomSynthesisFn,
  type ResolvedPolicy,
  type SynthesisChild,
  type SynthesisPolicy,
} from './synthesis.js';
import { MIN_TREE_RECORD_BYTES, racyInstant, storedRacyInstant, type NodeRecord, type Tree } from './tree.js';
import { validateStore, type ValidationReport } from './validate.js';
import { candidatesOf, checkList, checkMaxFrames, checkView, comparatorFor, filterCandidates, type ContextView } from './view.js';
import { startWatch, type ContextWatcher, type WatchEvent, type WatchOptions } from './watch.js';

/** Options for {@link ContextEngine.open}. */
export interface ContextEngineOptions {
  /** Extra `.gitignore`-syntax patterns, relative to the workspace root. */
  readonly ignore?: readonly string[];
  /** Apply the default ignored names (`.git`, `node_modules`, …; default true). `.merkle/` is always ignored. */
  readonly defaultIgnores?: boolean;
  /** Force a BLAKE3 implementation (default: native, falling back to wasm). */
  readonly hashBackend?: 'native' | 'wasm';
  /** How long a writer waits for the workspace lock (default 10 s). */
  readonly lockTimeoutMs?: number;
  /**
   * Trees with at least this many nodes are stat'ed on two threads during a rescan, which share the work chunk by
   * chunk. Default: 20,000 while a core is idle (on Linux: fewer runnable threads right now than cores, this process's
   * own not counted), otherwise one thread (a helper thread then costs CPU and gains no time).
   */
  readonly parallelStatThreshold?: number;
  /**
   * Secrets of your own to redact from frames (content and metadata) before they are stored, on top of the
   * built-in catalogue (see the README's Redaction section). A frame's id covers its redacted form.
   */
  readonly redaction?: RedactionOptions;
  /**
   * Told, once per message, when a reader answers from a damaged or missing file of the tree or the frame state (a
   * journal such as `.merkle/state.journal`, a witness, or the base `.merkle/tree` or `.merkle/state.json` itself):
   * the message names the file and what was lost, and the answer may be older than the last acknowledged write. Default: `process.emitWarning` (printed on stderr). {@link ContextEngine.status} and
   * {@link ContextEngine.scan} also return these messages; `validate` reports them as errors.
   */
  readonly onWarning?: (message: string) => void;
}

/** Result of {@link ContextEngine.scan}. */
export interface ScanReport {
  readonly root: string;
  readonly nodes: number;
  /** Files and symlinks read and hashed by this scan (the rest came from the stat cache). */
  readonly hashed: number;
  /** Whether the stored tree changed. */
  readonly changed: boolean;
  /** Paths whose NodeID changed, appeared or disappeared, in code-point order. */
  readonly changedPaths: string[];
  /**
   * Damage found in the stored tree (a damaged or missing tree file, journal or witness), which this scan rebuilt
   * from the workspace, and entries of the workspace left out of the tree (a name that is not valid UTF-8), each
   * named with its directory.
   */
  readonly warnings: string[];
}

/** Result of {@link ContextEngine.status}. */
export interface StatusReport {
  /** Root NodeID, null before the first scan. */
  readonly root: string | null;
  readonly nodes: number;
  readonly frames: number;
  readonly heads: number;
  /** Heads marked stale or made for a node version that is no longer current. */
  readonly stale: number;
  readonly agents: number;
  /** Damaged or missing files (journals, witnesses, bases) the counts were read from, each naming it and what was lost. */
  readonly warnings: string[];
}

/** The spec's NodeContext: a node and the frames a view selects. */
export interface NodeContext {
  readonly nodeId: string;
  readonly nodeRecord: NodeRecord;
  readonly frames: Frame[];
  /** All frames attached to the node, whatever the view selects. */
  readonly frameCount: number;
}

/** One frame of a node's frame set, without its content. */
export interface FrameSummary {
  readonly frameId: string;
  readonly type: string;
  readonly agentId: string;
  readonly seq: number;
  readonly nodeId: string;
  readonly isHead: boolean;
}

/** A head, named by node path and frame type. */
export interface HeadRef {
  readonly path: string;
  readonly type: string;
  readonly frameId: string;
}

/** A node with frames or heads, as {@link ContextEngine.listAnnotated} lists it. */
export interface NodeAnnotation {
  /** Workspace path (`''` is the root). */
  readonly path: string;
  /** Frames attached to the node (any version of it). */
  readonly frames: number;
  /** Its heads by frame type, each with its stale marker. */
  readonly heads: ReadonlyArray<{ readonly type: string; readonly frameId: string; readonly stale: boolean }>;
}

/** Result of {@link ContextEngine.regenerate}. */
export interface RegenerateResult {
  /** New frames, bottom-up. */
  readonly regenerated: string[];
  /** Agent-written heads whose basis changed: only their agent can renew them. */
  readonly needsAgent: HeadRef[];
  /** Heads outside the scope that depend on a regenerated frame, now marked stale (not regenerated). */
  readonly markedStale: HeadRef[];
}

/** Options for {@link ContextEngine.regenerate}. */
export interface RegenerateOptions {
  /** Regenerate the node's whole subtree, bottom-up (default: the node only). */
  readonly recursive?: boolean;
}

/**
 * Read and write access bound to one agent (the spec's AgentAdapter). The role is checked on every call.
 */
export interface AgentAdapter {
  /** The agent every call acts as. */
  readonly agentId: string;
  /** {@link ContextEngine.getNode} of `node` (a path or node id) through `view`; the agent must be registered. */
  readContext(node: string, view?: ContextView): Promise<NodeContext>;
  /** {@link ContextEngine.putFrame} on `node` as this agent (a writer); resolves to the new FrameID. */
  writeContext(node: string, frame: FrameInput): Promise<string>;
  /** {@link ContextEngine.synthesizeBranch} of `frameType` under `node` as this agent (a synthesis agent). */
  synthesize(node: string, frameType: string, policy?: SynthesisPolicy): Promise<string>;
}

interface Transaction {
  readonly tree: Tree;
  readonly state: StoreState;
  readonly agents: Readonly<Record<string, AgentIdentity>>;
  /** Frames made in this transaction, written before the state. */
  readonly pending: Map<string, Frame>;
}

/**
 * A content-addressed, Merkle-hashed view of one workspace with immutable frames attached by agents
 * (DESIGN.md D18). All state lives in `<workspace>/.merkle/`; writers serialize on a workspace lock, readers never
 * lock and never write.
 */
export class ContextEngine {
  private readonly store: MerkleStore;
  private readonly policies = new Map<string, CustomSynthesisFn>();
  private readonly statPool = new StatPool();
  private readonly redactor: Redactor;
  /** Messages already given to onWarning. */
  private readonly warned = new Set<string>();

  private constructor(
    /** Absolute workspace root, its symbolic links resolved (see {@link open}). */
    readonly workspaceRoot: string,
    /** The root as the caller spelled it (absolute), when that differs: absolute paths under it are accepted too. */
    private readonly givenRoot: string | undefined,
    private readonly backend: HashBackend,
    private readonly options: ContextEngineOptions,
  ) {
    this.store = new MerkleStore(workspaceRoot, backend);
    this.redactor = redactorFor(options.redaction);
  }

  /**
   * Opens the engine for a workspace directory: a ContextError (INVALID_ARGUMENT, naming it) when it does not exist,
   * is not a directory or is a loop of symbolic links. Nothing is written until a write operation runs. The root is
   * taken with its symbolic links resolved, as git takes a work tree's: a workspace reached through a symlink (the
   * root itself, or a directory above it) is the directory it points to, with the same tree and store whichever
   * spelling opened it. Symlinks inside the workspace are never followed.
   */
  static async open(workspaceRoot: string, options: ContextEngineOptions = {}): Promise<ContextEngine> {
    const backend = await loadHashBackend(options.hashBackend);
    const given = resolvePath(workspaceRoot);
    let real: string;
    try {
      real = realpathSync.native(given);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'does not exist' : code === 'ELOOP' ? 'is a loop of symbolic links' : `cannot be read (${code ?? String(error)})`;
      throw new ContextError('INVALID_ARGUMENT', `workspace ${given} ${why}`, { workspace: given });
    }
    if (!statSync(real).isDirectory()) throw new ContextError('INVALID_ARGUMENT', `workspace ${given} is not a directory`, { workspace: given });
    return new ContextEngine(real, real === given ? undefined : given, backend, options);
  }

  /** {@link toWorkspacePath} for this workspace: an absolute path under the root as it was given is accepted too. */
  private workspacePath(input: string): string {
    if (this.givenRoot !== undefined && isAbsolute(input)) {
      const underGiven = relative(this.givenRoot, input);
      if (underGiven !== '..' && !underGiven.startsWith(`..${sep}`) && !isAbsolute(underGiven)) return toWorkspacePath(this.workspaceRoot, underGiven);
    }
    return toWorkspacePath(this.workspaceRoot, input);
  }

  /** The BLAKE3 implementation in use. */
  get hashBackend(): 'native' | 'wasm' {
    return this.backend.name;
  }

  // ── Workspace ────────────────────────────────────────────────────────────────────────────────────────────────

  /**
   * Scans the workspace into the tree (respecting `.gitignore`, default ignores and `.merkle/`). Files whose size,
   * mtime and inode are unchanged are not re-read unless `force`, and directories whose own stat is unchanged are not
   * re-listed. `paths` limits the walk to the directories holding those paths (used by `watch`). Nothing is written
   * when nothing changed (not even the lock file: that case is decided before the lock is taken, the way a reader
   * reads); a small change is appended to the tree journal.
   */
  async scan(options: { force?: boolean; paths?: readonly string[] } = {}): Promise<ScanReport> {
    // A path no file can have (a NUL byte) would limit the scan to nothing, and report nothing changed.
    checkList(options.paths, 'scan: paths', 'workspace paths', (path, where) => {
      if (typeof path !== 'string' || path.includes('\0')) throw new ContextError('INVALID_ARGUMENT', `${where} must be a path (a string without NUL bytes)`);
    });
    const started = Date.now();
    // Entries this scan checks, and finds unchanged or reads, are trusted by later scans only when last changed before
    // this instant: one changed after this scan stat'ed or read it has an mtime at or after it (see racyInstant).
    const nextRacyFromMs = racyInstant(started);
    // Each record takes at least MIN_TREE_RECORD_BYTES of the tree file, so a smaller file cannot reach the default
    // threshold, and whether a core is idle (a few /proc reads) need not be asked.
    const treeBytes = this.store.treeFileBytes();
    const threshold =
      this.options.parallelStatThreshold ?? (treeBytes >= DEFAULT_PARALLEL_STAT_THRESHOLD * MIN_TREE_RECORD_BYTES && hasIdleCore() ? DEFAULT_PARALLEL_STAT_THRESHOLD : Number.POSITIVE_INFINITY);
    // A tree file that large will be rescanned with the helper thread: start it now, so that it boots while this
    // thread reads the tree.
    if (!options.force && treeBytes >= threshold * MIN_TREE_RECORD_BYTES) this.statPool.warm();
    const rules = new IgnoreRules(this.workspaceRoot, { patterns: this.options.ignore, defaults: this.options.defaultIgnores });
    // The quick check needs no lock: it reads the stored tree (written atomically, its journal checked entry by
    // entry) and stats the workspace. When it finds nothing changed, that is the answer; otherwise its findings
    // serve the locked scan, provided the tree is still the one it checked.
    let checked: { key: string; stale: readonly StaleLeaf[] | undefined } | undefined;
    if (!options.force && options.paths === undefined) {
      // The tree in memory serves when it is current; else the stat index when it is there (the tree file's hashes
      // are not needed to find nothing changed); else the tree file.
      const cached = this.store.readTreeIfCached();
      const indexed = cached === undefined ? this.store.readStatView() : undefined;
      const read = cached ?? (indexed === undefined ? this.store.readTree() : undefined);
      const stored = indexed !== undefined ? { ...indexed, stats: indexed.view, basis: indexed.view.basis, rootId: indexed.view.rootId, size: indexed.view.size } : read?.tree === undefined ? undefined : { ...read, stats: treeStats(read.tree), basis: read.tree.basis, rootId: read.tree.rootId, size: read.tree.size };
      // A damaged tree journal: the locked scan below rebuilds the tree (a constant check, no work added here).
      if (stored !== undefined && stored.damage === undefined) {
        const helper = stored.size >= threshold ? this.statPool : undefined;
        const stale = await quickCheck({ root: this.workspaceRoot, tree: stored.stats, rulesKey: rules.key, racyFromMs: storedRacyInstant(stored.basis, stored.writtenMs), helper });
        if (stale !== undefined && stale.length === 0) return { root: stored.rootId, nodes: stored.size, hashed: 0, changed: false, changedPaths: [], warnings: [] };
        checked = { key: stored.key, stale };
      }
    }
    const release = await this.store.lock(this.options.lockTimeoutMs);
    try {
      let previous: ReturnType<MerkleStore['readTree']>;
      try {
        previous = this.store.readTree();
      } catch (error) {
        if (!options.force) throw error;
        previous = undefined; // a forced scan rebuilds a corrupt tree from the filesystem
      }
      // A tree whose journal lost entries is older than the last scan, and its write time is not that of its
      // records: every file is read again (a forced scan), and the tree written whole, which ends the damage.
      const damage = previous?.damage;
      const warnings = damage === undefined ? [] : [`${damage}; the tree was rebuilt from the workspace`];
      for (const warning of warnings) this.warn(warning);
      const parallel = (previous?.tree?.size ?? 0) >= threshold;
      const result = await scanWorkspace({
        workspaceRoot: this.workspaceRoot,
        rules,
        backend: this.backend,
        previous: previous?.tree,
        force: options.force || damage !== undefined,
        racyFromMs: previous?.tree === undefined ? undefined : storedRacyInstant(previous.tree.basis, previous.writtenMs),
        nextRacyFromMs,
        only: options.paths?.map((p) => this.workspacePath(p)),
        helper: parallel ? this.statPool : undefined,
        quick: checked !== undefined && checked.key === previous?.key ? { stale: checked.stale } : undefined,
      });
      for (const warning of result.warnings) this.warn(warning);
      warnings.push(...result.warnings);
      if (damage !== undefined) this.store.writeTree(result.tree);
      else if (result.delta !== undefined) this.store.updateTree(result.tree, result.delta);
      else if (result.changed) this.store.writeTree(result.tree);
      // Racily clean entries were read again and found unchanged: this scan's racy instant is recorded, so the next
      // scan trusts their stat, but only when they were last changed before that instant: a change made after this
      // scan read an entry then has a later mtime than the one it recorded, so it cannot go unseen. An mtime in the
      // future (another machine's clock, an archive) stays racy, and nothing is written for it.
      else if (result.racyMtimeMs !== undefined && result.nextRacyFromMs !== undefined && result.racyMtimeMs < result.nextRacyFromMs) this.store.refreshTree(result.tree.withRacyInstant(result.nextRacyFromMs));
      return {
        root: result.tree.rootId,
        nodes: result.tree.size,
        hashed: result.hashed,
        changed: result.changed,
        changedPaths: !result.changed ? [] : result.delta !== undefined && previous?.tree !== undefined ? deltaPaths(previous.tree, result.delta) : diffTrees(previous?.tree, result.tree),
        warnings,
      };
    } finally {
      release();
    }
  }

  /** Releases the helper thread used by large rescans (the engine stays usable; it is re-created on demand). */
  async close(): Promise<void> {
    await this.statPool.close();
  }

  /** Root id and counts. Read-only. */
  async status(): Promise<StatusReport> {
    const stored = this.store.readTree();
    const tree = stored?.tree;
    const { state, damage } = this.store.readStateChecked();
    const warnings = [stored?.damage, damage].filter((w): w is string => w !== undefined);
    for (const warning of warnings) this.warn(warning);
    let frames = 0;
    let heads = 0;
    let stale = 0;
    for (const entries of Object.values(state.frames)) frames += entries.length;
    for (const [path, byType] of Object.entries(state.heads)) {
      for (const type of Object.keys(byType)) {
        heads++;
        if (this.isStale(tree, state, path, type)) stale++;
      }
    }
    return {
      root: tree?.rootId ?? null,
      nodes: tree?.size ?? 0,
      frames,
      heads,
      stale,
      agents: Object.keys(this.store.readAgents()).length,
      warnings,
    };
  }

  /**
   * Accepts the loss that a damaged or missing file of the tree or the frame state reported (a journal, a witness,
   * or `state.json` or `tree` itself), so that writes can go on: a damaged `state.journal` (or `state.json` that
   * fails to decode) is kept beside the store (`state.journal.damaged-<time>`) and the frame state that survives
   * becomes the new base (the empty state when `state.json` was lost); a damaged tree is rebuilt by a scan. Frame
   * files that no frame set references (the lost transactions wrote them) are moved out of `frames/` into
   * `frames.lost-<time>/`, kept for inspection, so that `validate` passes again. A damaged `agents.json` is kept beside it
   * (`agents.json.damaged-<time>`) and the registry starts empty (agents are registered again). Returns what was
   * repaired (nothing when no file was damaged).
   */
  async repair(): Promise<{ repaired: string[] }> {
    const repaired: string[] = [];
    const release = await this.store.lock(this.options.lockTimeoutMs);
    try {
      const state = this.store.repairState();
      if (state !== undefined) repaired.push(state);
      // What lost transactions committed (this repair's, or an earlier one's): out of frames/, so validate passes.
      const lost = this.store.keepUnreferencedFrames(referencedFrames(this.store.readStateChecked().state), new Date().toISOString().replace(/[:.]/g, '-'));
      if (lost !== undefined) repaired.push(lost);
      const agents = this.store.repairAgents();
      if (agents !== undefined) repaired.push(agents);
    } finally {
      release();
    }
    let treeDamage: string | undefined;
    try {
      treeDamage = this.store.readTree()?.damage;
    } catch (error) {
      // A tree file that fails to decode: a forced scan rebuilds it from the workspace.
      if (!(error instanceof ContextError && error.code === 'CORRUPT_STORE')) throw error;
      await this.scan({ force: true });
      repaired.push(`rebuilt the tree from the workspace: ${error.message}`);
    }
    if (treeDamage !== undefined) repaired.push(...(await this.scan()).warnings);
    return { repaired };
  }

  /** Verifies every stored structure (tree ids, frames, heads, basis index, agents). Read-only. */
  async validate(): Promise<ValidationReport> {
    return validateStore({
      store: this.store,
      backend: this.backend,
      workspaceRoot: this.workspaceRoot,
      rules: new IgnoreRules(this.workspaceRoot, { patterns: this.options.ignore, defaults: this.options.defaultIgnores }),
    });
  }

  // ── Agents ───────────────────────────────────────────────────────────────────────────────────────────────────

  /** Registers (or updates) an agent; persisted in `.merkle/agents.json`. */
  async registerAgent(identity: { agentId: string; role: AgentRole; capabilities?: readonly string[] }): Promise<AgentIdentity> {
    const agent = checkIdentity(identity);
    this.refuseSecretNames('registerAgent', [['agent id', agent.agentId], ...agent.capabilities.map((c): [string, string] => ['capability', c])]);
    const release = await this.store.lock(this.options.lockTimeoutMs);
    try {
      this.store.writeAgents({ ...this.store.readAgents(), [agent.agentId]: agent });
      return agent;
    } finally {
      release();
    }
  }

  /**
   * Agent ids, capabilities and frame types are stored as they are (in `agents.json`, `state.json` and every frame
   * file: they name what readers look up), never redacted: one that holds a secret by the engine's redaction is
   * refused, as the run store refuses such node and run ids. The error does not quote it.
   */
  private refuseSecretNames(where: string, names: readonly [what: string, name: string][]): void {
    for (const [what, name] of names) {
      if (this.redactor.holdsSecret(name)) {
        throw new ContextError('INVALID_ARGUMENT', `${where}: the ${what} holds a secret-looking value; names are stored as they are (never redacted), so they must not hold secrets: rename it`);
      }
    }
  }

  /** Registered agents, by id. */
  async listAgents(): Promise<AgentIdentity[]> {
    return Object.values(this.store.readAgents());
  }

  /** Access bound to one agent, enforcing its role on every call. */
  as(agentId: string): AgentAdapter {
    checkAgentId(agentId, 'as');
    return {
      agentId,
      readContext: async (node, view) => {
        this.requireAgent(agentId, 'getNode');
        return this.getNode(node, view);
      },
      writeContext: (node, frame) => this.putFrame(node, frame, agentId),
      synthesize: (node, frameType, policy) => this.synthesizeBranch(node, frameType, agentId, policy),
    };
  }

  /** Registers a deterministic custom synthesis function under `name` (for policy `{ kind: 'custom', name }`). */
  registerSynthesisPolicy(name: string, fn: CustomSynthesisFn): void {
    checkFrameType(name, 'registerSynthesisPolicy');
    this.refuseSecretNames('registerSynthesisPolicy', [['policy name', name]]);
    if (typeof fn !== 'function') throw new ContextError('INVALID_ARGUMENT', `registerSynthesisPolicy('${name}'): fn must be a function`);
    this.policies.set(name, fn);
  }

  // ── Reads ────────────────────────────────────────────────────────────────────────────────────────────────────

  /** Resolves a NodeID or workspace path to its node in the current tree. */
  async resolveNode(node: string): Promise<NodeRecord> {
    return plainRecord(this.resolve(this.requireTree(), node, 'resolveNode'));
  }

  /** The nodes of the subtree at `under` (default the whole tree), parents before children, children in order. */
  async listNodes(under = ''): Promise<NodeRecord[]> {
    const tree = this.requireTree();
    return tree.walk(this.resolve(tree, under, 'listNodes').path).map(plainRecord);
  }

  /**
   * The spec's GetNode: the node and the frames `view` selects, in the view's deterministic order. A selected frame
   * whose file is missing is skipped (the next one takes its place) and reported through `onWarning`, naming it.
   * Read-only.
   */
  async getNode(node: string, view: ContextView = {}): Promise<NodeContext> {
    checkView(view, 'getNode: view');
    const record = this.resolve(this.requireTree(), node, 'getNode');
    const state = this.readState();
    const all = candidatesOf(record.path, own(state.frames, record.path), own(state.heads, record.path));
    const selected = filterCandidates(all, view).sort(comparatorFor(view.ordering ?? 'recency', view, 'getNode'));
    const maxFrames = checkMaxFrames(view.maxFrames, 'getNode', 50);
    // A frame file deleted by hand (or by a cleaner) is skipped with a warning naming it, not the whole node lost.
    const frames: Frame[] = [];
    for (const candidate of selected) {
      if (frames.length === maxFrames) break;
      try {
        frames.push(this.store.readFrame(candidate.entry.frameId));
      } catch (error) {
        if (!(error instanceof ContextError && error.code === 'UNKNOWN_FRAME')) throw error;
        this.warn(`getNode: ${error.message} (a frame of '${displayPath(record.path)}'); skipped. Run 'backpackflow context validate'`);
      }
    }
    return { nodeId: record.nodeId, nodeRecord: plainRecord(record), frames, frameCount: all.length };
  }

  /** Every frame attached to a node, oldest first, optionally of one type. Read-only. */
  async listFrames(node: string, options: { type?: string } = {}): Promise<FrameSummary[]> {
    const record = this.resolve(this.requireTree(), node, 'listFrames');
    const state = this.readState();
    return candidatesOf(record.path, own(state.frames, record.path), own(state.heads, record.path))
      .filter((c) => options.type === undefined || c.entry.type === options.type)
      .map((c) => ({
        frameId: c.entry.frameId,
        type: c.entry.type,
        agentId: c.entry.agentId,
        seq: c.entry.seq,
        nodeId: c.entry.nodeId,
        isHead: c.isHead,
      }));
  }

  /**
   * The nodes at or under `node` (default: the whole tree) that have frames or heads, in path order: how many frames
   * each holds and its heads, each marked stale when it was marked so or was made for a node version that is no
   * longer current (as {@link status} counts them). Paths no longer in the tree are included (their heads are
   * stale). One read of the frame state; cost grows with the annotated paths, not with the tree. Read-only.
   */
  async listAnnotated(node = ''): Promise<NodeAnnotation[]> {
    const tree = this.requireTree();
    const root = this.resolve(tree, node, 'listAnnotated').path;
    const state = this.readState();
    const inside = (path: string): boolean => root === '' || path === root || path.startsWith(`${root}/`);
    const paths = [...new Set([...Object.keys(state.frames), ...Object.keys(state.heads)])].filter(inside).sort();
    return paths.map((path) => ({
      path,
      frames: own(state.frames, path)?.length ?? 0,
      heads: Object.entries(own(state.heads, path) ?? {})
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([type, frameId]) => ({ type, frameId, stale: this.isStale(tree, state, path, type) })),
    }));
  }

  /** The head FrameID of `type` on a node, or null. Read-only. */
  async getHead(node: string, type: string): Promise<string | null> {
    checkFrameType(type, 'getHead');
    const record = this.resolve(this.requireTree(), node, 'getHead');
    return own(own(this.readState().heads, record.path), type) ?? null;
  }

  /** One frame by id, verified against its id. */
  async getFrame(frameId: string): Promise<Frame> {
    if (!isHexId(frameId)) throw new ContextError('INVALID_ARGUMENT', `getFrame: '${frameId}' is not a 64-hex FrameID`);
    return this.store.readFrame(frameId);
  }

  /** Multi-frame composition: bounded, deterministic, read-only; unreadable sources and frames are skipped. */
  async compose(node: string, policy: CompositionPolicy): Promise<ComposedContext> {
    const tree = this.requireTree();
    const record = this.resolve(tree, node, 'compose');
    return composeFrames(
      {
        tree,
        state: this.readState(),
        readFrame: (id) => this.store.readFrame(id),
        resolve: (ref) => this.resolve(tree, ref, 'compose'),
      },
      record,
      policy,
    );
  }

  // ── Writes ───────────────────────────────────────────────────────────────────────────────────────────────────

  /**
   * The spec's PutFrame: appends an immutable frame to a node (its FrameID covers the node version, the agent, the
   * type, the content and the metadata) and makes it the head of its type, atomically. Re-putting an identical
   * frame changes nothing and returns the same id.
   */
  async putFrame(node: string, frame: FrameInput, agentId: string): Promise<string> {
    const where = `putFrame(${JSON.stringify(node)})`;
    const checked = checkFrameInput(frame, checkAgentId(agentId, where), where);
    this.refuseSecretNames(where, [['frame type', checked.type]]);
    // Stored (and hashed) redacted: a frame quoting a .env file never keeps the secret.
    const input = { ...checked, content: this.redactor.redactText(checked.content), metadata: this.redactor.redact(checked.metadata).value };
    return this.transact((tx) => {
      authorize(tx.agents, agentId, 'put-frame', input.type);
      const record = this.resolve(tx.tree, node, 'putFrame');
      const basisHash = nodeBasisHash(record.nodeId, agentId, this.backend);
      const frameId = computeFrameId({ basisHash, path: record.path, agentId, ...input }, this.backend);
      const stored: Frame = {
        v: 1,
        frameId,
        nodeId: record.nodeId,
        path: record.path,
        type: input.type,
        agentId,
        content: input.content,
        metadata: input.metadata,
        basis: { kind: 'node', hash: basisHash },
      };
      tx.pending.set(frameId, stored);
      recordFrame(tx.state, record.path, { frameId, type: input.type, agentId, nodeId: record.nodeId, at: Date.now() }, basisHash);
      return frameId;
    });
  }

  /**
   * Branch synthesis: synthesizes `frameType` for every directory of the subtree at `dir`, bottom-up, from the child
   * frames (file heads of the policy's source type, directory frames just synthesized), and returns the FrameID
   * made for `dir`. Only `synthesis` agents may call it; nothing else ever synthesizes implicitly.
   */
  async synthesizeBranch(
    dir: string,
    frameType: string,
    agentId: string,
    policy: SynthesisPolicy = { kind: 'concatenation' },
  ): Promise<string> {
    checkFrameType(frameType, 'synthesizeBranch');
    checkAgentId(agentId, 'synthesizeBranch');
    // The policy is stored with every frame it makes (its canonical form in the basis): its names and filter text too.
    const p = (policy ?? {}) as { name?: unknown; sourceType?: unknown; agents?: unknown; types?: unknown; contains?: unknown };
    const texts = (what: string, value: unknown): [string, string][] => stringsIn(value).map((text) => [what, text]);
    this.refuseSecretNames('synthesizeBranch', [
      ['frame type', frameType],
      ...texts('policy source type', p.sourceType),
      ...texts('policy name', p.name),
      ...texts('policy agent id', p.agents),
      ...texts('policy frame type', p.types),
      ...texts('policy filter text', p.contains),
    ]);
    const resolved = resolvePolicy(policy, frameType, this.policies);
    return this.transact((tx) => {
      authorize(tx.agents, agentId, 'synthesize', frameType);
      const top = this.resolve(tx.tree, dir, 'synthesizeBranch');
      if (top.kind !== 'dir') {
        throw new ContextError('NOT_A_DIRECTORY', `synthesizeBranch: '${displayPath(top.path)}' (${top.nodeId}) is a ${top.kind}, not a directory`, {
          path: top.path,
          nodeId: top.nodeId,
        });
      }
      let frameId = '';
      for (const d of tx.tree.directoriesBottomUp(top.path)) frameId = this.synthesizeOne(tx, d, frameType, agentId, resolved);
      return frameId;
    });
  }

  /**
   * Regenerates synthesized heads whose basis changed (or that were invalidated) on `node`, or on its whole subtree
   * bottom-up with `recursive`. Old frames stay readable; unchanged heads are not touched; heads outside the scope
   * that depend on a regenerated frame are marked stale, not regenerated. Idempotent.
   */
  async regenerate(node: string, options: RegenerateOptions = {}): Promise<RegenerateResult> {
    return this.transact((tx) => {
      const top = this.resolve(tx.tree, node, 'regenerate');
      const scope = options.recursive ? tx.tree.walk(top.path).reverse() : [top];
      const regenerated: string[] = [];
      const needsAgent: HeadRef[] = [];
      const replaced = new Set<string>();
      for (const record of scope) {
        const heads = own(tx.state.heads, record.path);
        if (heads === undefined) continue;
        for (const type of Object.keys(heads).sort()) {
          const headId = heads[type];
          const stale = this.isStale(tx.tree, tx.state, record.path, type);
          const frame = this.readFrameIn(tx, headId);
          if (frame.basis.kind === 'node' || record.kind !== 'dir') {
            if (stale) needsAgent.push({ path: record.path, type, frameId: headId });
            continue;
          }
          const policy = resolvePolicy(policyFromKey(frame.basis.policy), type, this.policies);
          authorize(tx.agents, frame.agentId, 'regenerate', type);
          const basisHash = synthesisBasisHash(
            record.nodeId,
            type,
            policy.sourceType,
            frame.agentId,
            policy.key,
            this.childFrames(tx, record, type, policy).map((c) => c.frameId),
            this.backend,
          );
          if (basisHash === frame.basis.hash && !stale) continue;
          const newId = this.synthesizeOne(tx, record, type, frame.agentId, policy);
          if (newId !== headId) {
            regenerated.push(newId);
            replaced.add(headId);
          }
        }
      }
      const markedStale = this.markDependentsStale(tx, top, replaced);
      return { regenerated, needsAgent, markedStale };
    });
  }

  /** Marks every head of a node stale (a later `regenerate` renews synthesized ones). Idempotent. */
  async invalidate(node: string): Promise<{ invalidated: HeadRef[] }> {
    return this.transact((tx) => {
      const record = this.resolve(tx.tree, node, 'invalidate');
      const heads = own(tx.state.heads, record.path) ?? {};
      const invalidated: HeadRef[] = [];
      for (const type of Object.keys(heads).sort()) {
        markStale(tx.state, record.path, type);
        invalidated.push({ path: record.path, type, frameId: heads[type] });
      }
      return { invalidated };
    });
  }

  /**
   * Watches the workspace (chokidar) and rescans the directories of changed paths, reporting changed nodes to
   * `onChange`. Opt-in; call `close()` on the result to stop.
   */
  watch(onChange: (event: WatchEvent) => void, options: WatchOptions = {}): Promise<ContextWatcher> {
    return startWatch(this, onChange, options);
  }

  // ── Internals ────────────────────────────────────────────────────────────────────────────────────────────────

  private async transact<T>(fn: (tx: Transaction) => T): Promise<T> {
    const release = await this.store.lock(this.options.lockTimeoutMs);
    try {
      const damage = this.store.readTree()?.damage;
      if (damage !== undefined) {
        throw new ContextError('CORRUPT_STORE', `${damage}. Run 'backpackflow context scan' to rebuild the tree from the workspace before writing frames`, {
          file: join(this.store.dir, 'tree.journal'),
        });
      }
      const tx: Transaction = {
        tree: this.requireTree(),
        state: this.store.readStateForUpdate(),
        agents: this.store.readAgents(),
        pending: new Map(),
      };
      const result = fn(tx);
      // Frames staged, then the state that references them, then the frames renamed into place (see stageFrames):
      // a final frame file exists only once the state referencing it is durable.
      // (A failure in between leaves the temp files: whether the state was written or not, validate tells.)
      const staged = this.store.stageFrames(tx.pending.values());
      if (this.store.writeState(tx.state)) this.store.commitFrames(staged);
      else this.store.discardFrames(staged);
      return result;
    } finally {
      release();
    }
  }

  /** Reports damage once per message (see ContextEngineOptions.onWarning). */
  private warn(message: string | undefined): void {
    if (message === undefined || this.warned.has(message)) return;
    this.warned.add(message);
    if (this.options.onWarning !== undefined) this.options.onWarning(message);
    else process.emitWarning(message, 'ContextStoreWarning');
  }

  /** The frame state, its damage reported. */
  private readState(): Readonly<StoreState> {
    const { state, damage } = this.store.readStateChecked();
    this.warn(damage);
    return state;
  }

  /** The stored tree, its damage reported; a NOT_SCANNED error before the first scan. */
  private requireTree(): Tree {
    const stored = this.store.readTree();
    this.warn(stored?.damage);
    if (stored?.damage !== undefined && stored.tree === undefined) {
      throw new ContextError('CORRUPT_STORE', `${stored.damage}. Run 'backpackflow context scan' to rebuild the tree from the workspace`, {
        file: join(this.store.dir, 'tree'),
      });
    }
    if (stored?.tree === undefined) {
      throw new ContextError('NOT_SCANNED', `workspace ${this.workspaceRoot} has not been scanned; run 'backpackflow context scan' first`, {
        workspace: this.workspaceRoot,
      });
    }
    return stored.tree;
  }

  private requireAgent(agentId: string, where: string): AgentIdentity {
    const agent = own(this.store.readAgents(), agentId);
    if (agent === undefined) {
      throw new ContextError('UNKNOWN_AGENT', `${where}: agent '${agentId}' is not registered; register it first (backpackflow context agent add ${agentId} --role <role>)`, {
        agentId,
      });
    }
    return agent;
  }

  private resolve(tree: Tree, ref: string, where: string): NodeRecord {
    if (typeof ref !== 'string') {
      throw new ContextError('INVALID_ARGUMENT', `${where}: node must be a NodeID or a workspace path, got ${JSON.stringify(ref)}`);
    }
    if (isHexId(ref)) {
      const byId = tree.getById(ref);
      if (byId !== undefined) return byId;
      if (tree.get(ref) === undefined) {
        throw new ContextError(
          'UNKNOWN_NODE',
          `${where}: node ${ref} is not in the current tree of ${this.workspaceRoot} (an id from an older scan, or a typo); use a path or a current id from 'backpackflow context status'`,
          { nodeId: ref, workspace: this.workspaceRoot },
        );
      }
    }
    const path = this.workspacePath(ref);
    const record = tree.get(path);
    if (record === undefined) {
      throw new ContextError(
        'UNKNOWN_NODE',
        `${where}: no node at '${displayPath(path)}' in ${this.workspaceRoot}; it does not exist, is ignored, or was added since the last scan (run 'backpackflow context scan')`,
        { path, workspace: this.workspaceRoot },
      );
    }
    return record;
  }

  private isStale(tree: Tree | undefined, state: Readonly<StoreState>, path: string, type: string): boolean {
    if (own(state.stale, path)?.includes(type)) return true;
    const entry = headEntry(state, path, type);
    const current = tree?.get(path);
    return entry === undefined || current === undefined || entry.nodeId !== current.nodeId;
  }

  private readFrameIn(tx: Transaction, frameId: string): Frame {
    return tx.pending.get(frameId) ?? this.store.readFrame(frameId);
  }

  /** Child frames of a directory in basis order (child path, then FrameID), after the policy's selection. */
  private childFrames(tx: Transaction, dir: NodeRecord, frameType: string, policy: ResolvedPolicy): SynthesisChild[] {
    const children: SynthesisChild[] = [];
    for (const childPath of dir.children ?? []) {
      const child = tx.tree.get(childPath)!;
      const heads = own(tx.state.heads, childPath);
      if (heads === undefined) continue;
      const types =
        child.kind === 'dir' ? [frameType] : policy.sourceType === '*' ? Object.keys(heads) : [policy.sourceType];
      const ids = types.map((t) => own(heads, t)).filter((id): id is string => id !== undefined).sort();
      for (const id of ids) {
        const frame = this.readFrameIn(tx, id);
        children.push({ path: childPath, kind: child.kind, frameId: id, type: frame.type, agentId: frame.agentId, content: frame.content });
      }
    }
    return policy.select(children);
  }

  /** Synthesizes one directory from its children's current frames and records the frame as its head. */
  private synthesizeOne(tx: Transaction, dir: NodeRecord, frameType: string, agentId: string, policy: ResolvedPolicy): string {
    const children = this.childFrames(tx, dir, frameType, policy);
    const childFrameIds = children.map((c) => c.frameId);
    const basisHash = synthesisBasisHash(dir.nodeId, frameType, policy.sourceType, agentId, policy.key, childFrameIds, this.backend);
    const content = this.redactor.redactText(policy.render({ path: dir.path, frameType, children }));
    const metadata = { agent_id: agentId };
    const frameId = computeFrameId({ basisHash, path: dir.path, type: frameType, agentId, content, metadata }, this.backend);
    tx.pending.set(frameId, {
      v: 1,
      frameId,
      nodeId: dir.nodeId,
      path: dir.path,
      type: frameType,
      agentId,
      content,
      metadata,
      basis: { kind: 'synthesis', hash: basisHash, sourceType: policy.sourceType, policy: policy.key, childFrameIds },
    });
    recordFrame(tx.state, dir.path, { frameId, type: frameType, agentId, nodeId: dir.nodeId, at: Date.now() }, basisHash);
    return frameId;
  }

  /** Marks the synthesized heads of `top`'s parent that were built from a replaced frame as stale. */
  private markDependentsStale(tx: Transaction, top: NodeRecord, replaced: ReadonlySet<string>): HeadRef[] {
    const parent = parentPath(top.path);
    if (parent === undefined || replaced.size === 0) return [];
    const marked: HeadRef[] = [];
    const heads = own(tx.state.heads, parent) ?? {};
    for (const type of Object.keys(heads).sort()) {
      const frame = this.readFrameIn(tx, heads[type]);
      if (frame.basis.kind === 'synthesis' && frame.basis.childFrameIds.some((id) => replaced.has(id))) {
        markStale(tx.state, parent, type);
        marked.push({ path: parent, type, frameId: heads[type] });
      }
    }
    return marked;
  }
}

/**
 * What {@link diffTrees} finds, from an update's delta: its removed paths (every path of a removed subtree), and the
 * records it added or replaced whose NodeID is new (an update replaces the record of every changed path and of its
 * ancestors, and also directories whose stat alone changed). Costs lookups for the change only, not a walk.
 */
function deltaPaths(before: Tree, delta: NonNullable<ScanResult['delta']>): string[] {
  const changed = new Set(delta.removed);
  for (const record of delta.upserts) if (before.get(record.path)?.nodeId !== record.nodeId) changed.add(record.path);
  return [...changed].sort(compareCodePoints);
}

/**
 * Paths whose node appeared, disappeared or changed id between two trees, in code-point order. Equal directory ids
 * mean equal subtrees (ids cover paths and contents), so only changed branches are visited.
 */
function diffTrees(before: Tree | undefined, after: Tree): string[] {
  const changed: string[] = [];
  const stack = [''];
  while (stack.length > 0) {
    const path = stack.pop()!;
    const a = before?.get(path);
    const b = after.get(path);
    if (a !== undefined && b !== undefined && a.nodeId === b.nodeId) continue;
    changed.push(path);
    const had = new Set(a?.children); // a Set: the root of a large tree has thousands of children
    stack.push(...had, ...(b?.children ?? []).filter((c) => !had.has(c)));
  }
  return changed.sort(compareCodePoints);
}


/** Trees with at least this many nodes are stat'ed on two threads while a core is idle (see ContextEngineOptions). */
const DEFAULT_PARALLEL_STAT_THRESHOLD = 20_000;

/**
 * Whether a core is idle now. On 100,000 files a helper thread for lstat costs about 20 ms of CPU to boot; with the
 * machine's cores busy it gains no time. On Linux the answer is the kernel's count of runnable threads at this
 * instant (the fourth field of /proc/loadavg, less this process's own: Node's threads are in it too): the one-minute
 * load average also counts processes that have ended, such as the previous command of a script, and kept the helper
 * away from a machine that was idle again (measured: back-to-back scans on a two-core machine ran at a load average of 1.0-1.4 and never used
 * it). Elsewhere the one-minute load average decides (where it is unknown, Windows: 0, the machine counts as idle).
 * The work is shared chunk by chunk (see SharedStatJob), so a wrong guess costs the boot, never a wait.
 */
function hasIdleCore(): boolean {
  const cores = availableParallelism();
  if (cores < 2) return false;
  try {
    const runnable = Number(/ (\d+)\/\d+ /.exec(readFileSync('/proc/loadavg', 'latin1'))?.[1]);
    if (Number.isInteger(runnable)) return cores - Math.max(1, runnable - ownRunnableThreads() + 1) >= 1;
  } catch {
    // Not Linux.
  }
  return cores - loadavg()[0]! >= 1;
}

/** How many of this process's threads are runnable now (this one included): Node's own threads count in /proc/loadavg. */
function ownRunnableThreads(): number {
  let count = 0;
  for (const task of readdirSync('/proc/self/task')) {
    try {
      // The state follows the command name, which is in parentheses and may hold anything, spaces included.
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'latin1');
      if (stat.charCodeAt(stat.lastIndexOf(')') + 2) === 0x52 /* R */) count++;
    } catch {
      // The thread ended meanwhile.
    }
  }
  return count;
}

/** Every string in `value`, at any depth (lists, Sets, objects' keys and values), as a policy's fields may hold them. */
function stringsIn(value: unknown, out: string[] = [], depth = 0): string[] {
  if (typeof value === 'string') out.push(value);
  else if (depth < 32 && value !== null && typeof value === 'object') {
    const items = value instanceof Set || Array.isArray(value) ? [...value] : Object.entries(value).flat();
    for (const item of items) stringsIn(item, out, depth + 1);
  }
  return out;
}
