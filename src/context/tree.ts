import { ContextError } from './errors.js';
import { Encoder, KIND_CODE, compareCodePoints, type HashBackend } from './hash.js';
import type { DirStat } from './listing.js';
import { LayeredMap } from './layered-map.js';
import type { TreeJournalEntry } from './tree-journal.js';
import { baseName, parentPath } from './paths.js';
import { StoredNodes, StoredRecord } from './stored-nodes.js';

/** What a tree entry is. */
export type NodeKind = 'file' | 'dir' | 'symlink';

/**
 * One node of the workspace tree (the spec's NodeRecord). `size`, `mtimeMs` and `ino` are the stat cache used by
 * rescans; they are not part of the NodeID.
 */
export interface NodeRecord {
  readonly path: string;
  readonly kind: NodeKind;
  readonly nodeId: string;
  /** BLAKE3 of the file's bytes (or of a symlink's target); `''` for directories. */
  readonly contentHash: string;
  /** Bytes for files and symlinks, number of children for directories. */
  readonly size: number;
  /** For a directory, the stat of the directory itself when its entries were listed (0 when unknown). */
  readonly mtimeMs: number;
  readonly ino: number;
  /** Child paths in canonical order (directories only). */
  readonly children?: readonly string[];
}

/** A leaf (file or symlink) before directory ids are computed. */
export type LeafRecord = Omit<NodeRecord, 'children'>;

/**
 * How the scan that built a tree filtered the workspace. A later scan may reuse the tree's directory listings
 * only under the same `rules` key, and only when `reusable` (false when some `.gitignore` that was applied is not
 * itself a file of the tree, so that a change to it would go unseen).
 */
export interface ScanBasis {
  readonly rules: string;
  readonly reusable: boolean;
  /**
   * The racy instant of the tree (see {@link racyInstant}): entries whose stat is unchanged are read again by the
   * next scan unless {@link settledMtime} says their mtime is before it. The start of the scan that last checked
   * every entry; absent from trees written before it was recorded (their write time serves instead).
   */
  readonly racyFromMs?: number;
}

/**
 * The racy instant of a tree that a scan begun at `startedMs` (this machine's clock) writes: that time less
 * {@link RACY_CLOCK_SLACK_MS}. A file changed after the scan stat'ed or read it (a change the scan cannot have seen)
 * has an mtime at or after it on a file system whose timestamp tick is finer than that slack (ext4, XFS, Btrfs,
 * APFS, NTFS, exFAT), and at or after it rounded down to {@link RACY_TICK_MS} on one with 1 s or 2 s ticks (FAT, HFS+,
 * ext3): see {@link settledMtime}.
 */
export function racyInstant(startedMs: number): number {
  return startedMs - RACY_CLOCK_SLACK_MS;
}

/** The racy instant `racyFromMs` rounded down to {@link RACY_TICK_MS}: what a whole-second mtime is compared with. */
export function coarseRacyInstant(racyFromMs: number): number {
  return Math.floor(racyFromMs / RACY_TICK_MS) * RACY_TICK_MS;
}

/**
 * Whether an entry whose stat is unchanged since a scan of racy instant `racyFromMs` (`coarseFromMs`: its
 * {@link coarseRacyInstant}) is trusted without being read: its mtime is before the coarse instant, or before the
 * racy instant itself and not a whole second (a file system with 1 s or 2 s timestamps truncates an mtime to a whole
 * second, so a change made after the scan began may carry a time up to 2 s before it; a fraction of a second shows
 * a finer tick). An entry last changed long ago costs one comparison.
 */
export function settledMtime(mtimeMs: number, racyFromMs: number, coarseFromMs: number): boolean {
  return mtimeMs < coarseFromMs || (mtimeMs < racyFromMs && mtimeMs % 1000 !== 0);
}

/**
 * A racy instant after which an entry of mtime `mtimeMs` is trusted (see {@link settledMtime}): the mtime itself, or
 * for a whole-second mtime that time plus {@link RACY_TICK_MS}. A scan records its racy instant after re-reading racy
 * entries it found unchanged when it is above each of theirs.
 */
export function racyKey(mtimeMs: number): number {
  return mtimeMs % 1000 !== 0 ? mtimeMs : mtimeMs + RACY_TICK_MS;
}

/**
 * The racy instant of a stored tree (see {@link ScanBasis.racyFromMs}): the one its basis records, else (a tree
 * written before it was recorded) the time the tree was last written, `writtenMs`, as git uses its index's mtime.
 */
export function storedRacyInstant<W extends number | undefined>(basis: ScanBasis | undefined, writtenMs: W): number | W {
  return basis?.racyFromMs ?? writtenMs;
}

/** The coarsest timestamp tick {@link settledMtime} allows for: FAT's. */
export const RACY_TICK_MS = 2_000;
/**
 * How far an mtime may fall before the instant of the change it stamps: Linux stamps mtimes with a clock that lags by
 * up to a kernel tick (10 ms at most), truncated to the file system's tick (exFAT's is 10 ms); a network file system
 * stamps them with the server's clock, which must then be no further behind.
 */
export const RACY_CLOCK_SLACK_MS = 100;

/** What a rescan found different from the tree it started from (see {@link Tree.update}). */
export interface TreeChange {
  /** New or changed files and symlinks. */
  readonly leaves: readonly LeafRecord[];
  /** Paths of files, symlinks and directories that are gone (a removed directory's whole subtree). */
  readonly removed: readonly string[];
  /** The stat of every directory listed by the scan, new ones included. */
  readonly dirs: ReadonlyMap<string, DirStat>;
  readonly basis: ScanBasis;
}


const childRecordCache = new WeakMap<NodeRecord, readonly NodeRecord[]>();

/** The fewest bytes one record takes in the tree file (kind, path length, stats, two hashes). */
export const MIN_TREE_RECORD_BYTES = 1 + 4 + 24 + 64;

const MAGIC = Buffer.from('MRKLTREE', 'latin1');
/** Format 2 adds the scan basis after the records; format 1 (none) is still read. */
const FORMAT = 2;

/**
 * An immutable scanned workspace: every node by path, directories with their ordered children, the root id.
 * Directory NodeIDs are derived from the sorted children (see `hash.ts`), so equal trees give equal ids anywhere.
 */
export class Tree {
  private byIdCache: Map<string, NodeRecord> | undefined;
  private leafPathsCache: readonly string[] | undefined;
  /** Number of files and symlinks. */
  readonly leafCount: number;

  private constructor(
    private readonly nodes: LayeredMap<NodeRecord>,
    /** How the scan that built this tree filtered the workspace; undefined for trees of format 1. */
    readonly basis: ScanBasis | undefined,
    leafCount?: number,
  ) {
    if (leafCount === undefined) {
      leafCount = 0;
      for (const node of nodes.values()) if (node.kind !== 'dir') leafCount++;
    }
    this.leafCount = leafCount;
  }

  /**
   * This tree with `change` applied: only the directories on the paths from changed entries to the root are
   * re-hashed, so the cost follows the size of the change, not of the tree. Returns the new tree and the records it
   * adds or replaces (for the store's journal), or this tree itself when nothing changed.
   */
  update(change: TreeChange, backend: HashBackend): { tree: Tree; upserts: NodeRecord[]; removed: readonly string[] } {
    const nodes = this.nodes.derive();
    /** Paths this update sets or deletes: every other path keeps this tree's record. */
    const touched = new Set<string>();
    const put = (record: NodeRecord) => {
      nodes.set(record.path, record);
      touched.add(record.path);
    };
    let leafCount = this.leafCount;
    const dirty = new Set<string>();
    const markDirty = (dir: string | undefined) => {
      for (let d = dir; d !== undefined && !dirty.has(d); d = parentPath(d)) dirty.add(d);
    };
    /** Children that were not children of their directory before, by directory. */
    const added = new Map<string, string[]>();
    const addChild = (path: string) => {
      const parent = parentPath(path)!;
      const list = added.get(parent);
      if (list === undefined) added.set(parent, [path]);
      else list.push(path);
    };
    for (const path of change.removed) {
      const old = nodes.get(path);
      if (old === undefined) continue;
      nodes.delete(path);
      touched.add(path);
      if (old.kind !== 'dir') leafCount--;
      markDirty(parentPath(path));
    }
    let structural = change.removed.length > 0;
    for (const leaf of change.leaves) {
      const old = nodes.get(leaf.path);
      if (old === undefined) {
        leafCount++;
        structural = true;
        if (this.nodes.get(leaf.path) === undefined) addChild(leaf.path);
      }
      put(leaf);
      markDirty(parentPath(leaf.path));
    }
    const restat: string[] = [];
    for (const [dir, stat] of change.dirs) {
      const old = nodes.get(dir);
      if (old === undefined) {
        structural = true;
        put({ path: dir, kind: 'dir', nodeId: '', contentHash: '', size: 0, mtimeMs: stat.mtimeMs, ino: stat.ino, children: [] });
        if (dir !== '' && this.nodes.get(dir) === undefined) addChild(dir);
        markDirty(dir);
      } else if (old.kind === 'dir' && (old.mtimeMs !== stat.mtimeMs || old.ino !== stat.ino)) restat.push(dir);
    }
    // The racy instant alone is no change: a tree left as it was keeps its own (the scan that last checked every entry).
    const basisChanged = this.basis?.rules !== change.basis.rules || this.basis?.reusable !== change.basis.reusable;
    if (dirty.size === 0 && restat.length === 0 && !basisChanged) return { tree: this, upserts: [], removed: [] };

    const upserts: NodeRecord[] = [...change.leaves];
    for (const dir of restat) {
      if (dirty.has(dir)) continue;
      const stat = change.dirs.get(dir)!;
      const { path, kind, nodeId, contentHash, size, children } = nodes.get(dir)!;
      const record: NodeRecord = { path, kind, nodeId, contentHash, size, mtimeMs: stat.mtimeMs, ino: stat.ino, children };
      put(record);
      upserts.push(record);
      // A directory record is replaced whenever one of its children's is (see `childRecords`).
      markDirty(parentPath(dir));
    }
    const order = [...dirty].sort((a, b) => depth(b) - depth(a) || compareCodePoints(a, b));
    for (const dir of order) {
      if (nodes.get(dir)?.kind !== 'dir') continue; // removed with its subtree, or now a file
      const before = this.nodes.get(dir);
      // The children's records as they are now: this tree's, unless this update set or deleted them (no lookup by
      // path for the others, which for a directory of the tree file would be a binary search each).
      const children: NodeRecord[] = [];
      if (before?.kind === 'dir') {
        for (const child of this.childRecords(before)) {
          const now = touched.has(child.path) ? nodes.get(child.path) : child;
          if (now !== undefined) children.push(now);
        }
      }
      for (const path of added.get(dir) ?? []) children.push(nodes.get(path)!);
      const stat = change.dirs.get(dir) ?? before;
      const record = dirRecord(dir, children, stat?.mtimeMs ?? 0, stat?.ino ?? 0, backend);
      put(record);
      upserts.push(record);
    }
    const tree = new Tree(nodes, change.basis, leafCount);
    if (!structural) tree.leafPathsCache = this.leafPathsCache; // same files in the same places
    return { tree, upserts, removed: change.removed };
  }

  /**
   * Builds the whole tree from its leaves and directories (with their stats), computing directory NodeIDs
   * bottom-up. A rescan uses {@link Tree.update} instead.
   */
  static build(leaves: Iterable<LeafRecord>, dirs: ReadonlyMap<string, DirStat>, backend: HashBackend, basis?: ScanBasis): Tree {
    const childNames = new Map<string, string[]>();
    childNames.set('', []);
    for (const dir of dirs.keys()) if (!childNames.has(dir)) childNames.set(dir, []);
    const nodes = new Map<string, NodeRecord>();
    for (const leaf of leaves) nodes.set(leaf.path, leaf);
    for (const path of [...nodes.keys(), ...childNames.keys()]) {
      const parent = parentPath(path);
      if (parent === undefined) continue;
      let list = childNames.get(parent);
      if (list === undefined) {
        // A leaf or directory whose parent was not listed: the parent exists implicitly.
        list = [];
        childNames.set(parent, list);
        ensureAncestors(parent, childNames);
      }
      list.push(path);
    }
    // Deepest directories first, so every child id exists before its parent's is computed.
    const order = [...childNames.keys()].sort((a, b) => depth(b) - depth(a) || compareCodePoints(a, b));
    for (const dir of order) {
      const list = childNames.get(dir)!;
      const stat = dirs.get(dir);
      nodes.set(dir, dirRecord(dir, list.map((path) => nodes.get(path)!), stat?.mtimeMs ?? 0, stat?.ino ?? 0, backend));
    }
    return new Tree(LayeredMap.of(nodes), basis);
  }

  /** The root NodeID. */
  get rootId(): string {
    return this.nodes.get('')!.nodeId;
  }

  /** Number of nodes, the root included. */
  get size(): number {
    return this.nodes.size;
  }

  /**
   * The records of a directory's children, in order, without a lookup per child once computed. Cached per record
   * object, which is sound because a directory's record is replaced whenever one of its children's is
   * ({@link Tree.update} re-hashes the ancestors of every change; a journal entry carries them).
   */
  childRecords(dir: NodeRecord): readonly NodeRecord[] {
    // A record read from the file that is still this tree's (not replaced) has the file's children.
    if (dir instanceof StoredRecord && this.nodes.get(dir.path) === dir) return dir.store.childRecordsAt(dir.index);
    let records = childRecordCache.get(dir);
    if (records === undefined) {
      records = (dir.children ?? []).map((child) => this.nodes.get(child)!);
      childRecordCache.set(dir, records);
    }
    return records;
  }

  /**
   * The records read in place from the tree file and what replaced or removed some of them since (journal entries,
   * updates), when this tree was read from a file; undefined for a tree built in memory.
   */
  storedLayers(): { readonly stored: StoredNodes; readonly overlay: ReadonlyMap<string, NodeRecord | undefined> } | undefined {
    const { base, overlay } = this.nodes.layers();
    return base instanceof StoredNodes ? { stored: base, overlay } : undefined;
  }

  /** The node at a workspace path, if any. */
  get(path: string): NodeRecord | undefined {
    return this.nodes.get(path);
  }

  /** The node with this NodeID, if it is part of the tree. */
  getById(nodeId: string): NodeRecord | undefined {
    if (this.byIdCache === undefined) {
      this.byIdCache = new Map();
      for (const node of this.nodes.values()) this.byIdCache.set(node.nodeId, node);
    }
    return this.byIdCache.get(nodeId);
  }

  /** Every node in canonical depth-first order (parents before children). */
  walk(from = ''): NodeRecord[] {
    const start = this.nodes.get(from);
    if (start === undefined) return [];
    const out: NodeRecord[] = [];
    const stack: NodeRecord[] = [start];
    while (stack.length > 0) {
      const node = stack.pop()!;
      out.push(node);
      if (node.kind !== 'dir') continue;
      const children = this.childRecords(node);
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    }
    return out;
  }

  /** Directories under `from` (included) in bottom-up order: every directory after all of its subdirectories. */
  directoriesBottomUp(from = ''): NodeRecord[] {
    return this.walk(from)
      .filter((node) => node.kind === 'dir')
      .reverse();
  }

  /**
   * Paths of files and symlinks in canonical depth-first order (the order a listing of the same workspace finds
   * them). Shared with the tree this one was updated from when no file was added or removed.
   */
  leafPaths(): readonly string[] {
    if (this.leafPathsCache === undefined) {
      const paths: string[] = [];
      for (const node of this.walk()) if (node.kind !== 'dir') paths.push(node.path);
      this.leafPathsCache = paths;
    }
    return this.leafPathsCache;
  }

  /**
   * This tree with journal entries applied in order (see `tree-journal.ts`). `where` names the journal in errors:
   * entries that leave a directory listing a child without a record are rejected as corrupt.
   */
  applyJournal(entries: readonly TreeJournalEntry[], where: string): Tree {
    if (entries.length === 0) return this;
    const nodes = this.nodes.derive();
    let basis = this.basis;
    let leafCount = this.leafCount;
    const touched = new Set<string>();
    // Directories upserted without their children (see MerkleStore.updateTree) have, after the last entry, the
    // existing paths under them among: their children when last listed (before the entries, or in an entry that
    // gave the list), and the paths added under them since. Worked out once per directory at the end: per entry,
    // the root's list alone was a thousand lookups and a sort.
    const derived = new Map<string, { listed: readonly string[]; added: Set<string> }>();
    const addedUnder = (path: string) => {
      const parent = parentPath(path);
      if (parent !== undefined) derived.get(parent)?.added.add(path);
    };
    for (const entry of entries) {
      // A directory removed starts again from nothing; then the directories this entry lists without children,
      // with their lists before it (its upserts come in no particular order: a new file may precede its directory).
      for (const path of entry.removed) derived.delete(path);
      for (const record of entry.upserts) {
        if (record.kind !== 'dir' || record.children !== undefined || derived.has(record.path)) continue;
        const old = nodes.get(record.path);
        derived.set(record.path, { listed: old?.kind === 'dir' ? (old.children ?? []) : [], added: new Set() });
      }
      for (const path of entry.removed) {
        const old = nodes.get(path);
        if (old === undefined) continue;
        if (old.kind !== 'dir') leafCount--;
        nodes.delete(path);
        touched.add(parentPath(path) ?? '');
      }
      for (const record of entry.upserts) {
        const old = nodes.get(record.path);
        leafCount += (record.kind !== 'dir' ? 1 : 0) - (old !== undefined && old.kind !== 'dir' ? 1 : 0);
        if (record.kind !== 'dir' || record.children !== undefined) derived.delete(record.path);
        if (old === undefined) addedUnder(record.path);
        nodes.set(record.path, record);
        touched.add(record.path);
        touched.add(parentPath(record.path) ?? '');
      }
      basis = entry.basis ?? undefined;
    }
    for (const [dir, { listed, added }] of derived) {
      const record = nodes.get(dir);
      if (record?.kind !== 'dir') continue; // removed, or replaced by a file, since
      const kept = new Set<string>();
      for (const child of listed) if (nodes.has(child)) kept.add(child);
      for (const child of added) if (nodes.has(child)) kept.add(child);
      const children = [...kept].sort((a, b) => compareCodePoints(baseName(a), baseName(b)));
      nodes.set(dir, { ...record, children });
    }
    // Only what the entries touched can be broken: each such directory must list exactly existing records.
    if (!nodes.has('')) corruptTree(where, 'the root has no record');
    for (const path of touched) {
      const node = nodes.get(path);
      for (const child of node?.children ?? []) if (!nodes.has(child)) corruptTree(where, `directory '${path}' lists '${child}', which has no record`);
    }
    return new Tree(nodes, basis, leafCount);
  }

  /** This tree with the racy instant `racyFromMs` (see {@link ScanBasis.racyFromMs}); the records are shared. */
  withRacyInstant(racyFromMs: number): Tree {
    const tree = new Tree(this.nodes, { rules: this.basis?.rules ?? '', reusable: this.basis?.reusable ?? false, racyFromMs }, this.leafCount);
    tree.leafPathsCache = this.leafPathsCache;
    return tree;
  }

  /** Every record, in no particular order. */
  records(): IterableIterator<NodeRecord> {
    return this.nodes.values();
  }

  /** The binary stored form: magic, format, BLAKE3 of the body, body (see {@link Tree.decode}). */
  encode(backend: HashBackend): Buffer {
    const records = this.walk();
    const basis = Buffer.from(JSON.stringify(this.basis ?? null), 'utf8');
    let size = 12 + 32 + 4 + 4 + basis.length;
    for (const node of records) size += 1 + 4 + Buffer.byteLength(node.path) + 24 + 64;
    const out = Buffer.alloc(size);
    MAGIC.copy(out, 0);
    out.writeUInt32BE(FORMAT, 8);
    let o = out.writeUInt32BE(records.length, 44);
    for (const node of records) {
      o = out.writeUInt8(KIND_CODE[node.kind], o);
      const len = out.write(node.path, o + 4, 'utf8');
      o = out.writeUInt32BE(len, o) + len;
      o = out.writeDoubleBE(node.size, o);
      o = out.writeDoubleBE(node.mtimeMs, o);
      o = out.writeDoubleBE(node.ino, o);
      if (node.contentHash !== '') out.write(node.contentHash, o, 'hex');
      out.write(node.nodeId, o + 32, 'hex');
      o += 64;
    }
    o = out.writeUInt32BE(basis.length, o);
    basis.copy(out, o);
    backend.digest(out.subarray(44)).copy(out, 12);
    return out;
  }

  /**
   * Parses and verifies a stored tree: the body checksum must match, and the structure must be complete.
   * `where` names the file in errors. NodeIDs are re-derived by `validate`, not on every read.
   */
  static decode(data: Buffer, backend: HashBackend, where: string): Tree {
    const corrupt = (why: string): never => corruptTree(where, why);
    if (data.length < 44 || !data.subarray(0, 8).equals(MAGIC)) corrupt('bad header');
    const format = data.readUInt32BE(8);
    if (format !== 1 && format !== FORMAT) corrupt(`unsupported format ${format}`);
    const body = data.subarray(44);
    if (!backend.digest(body).equals(data.subarray(12, 44))) corrupt('checksum mismatch');
    if (body.length < 4) corrupt('truncated');
    const { nodes, end } = StoredNodes.read(body, 4, body.readUInt32BE(0), corrupt);
    let o = end;
    let basis: ScanBasis | undefined;
    if (format === FORMAT) {
      if (o + 4 > body.length) corrupt('truncated scan basis');
      const len = body.readUInt32BE(o);
      const parsed = parseBasis(body.toString('utf8', o + 4, o + 4 + len));
      if (parsed === undefined) corrupt('invalid scan basis');
      basis = parsed ?? undefined;
      o += 4 + len;
    }
    if (o !== body.length || nodes.size === 0) corrupt('truncated or missing root');
    return new Tree(LayeredMap.of(nodes), basis, nodes.leafCount);
  }
}

/** A directory's record from its children's records: children sorted canonically and its NodeID derived from them. */
function dirRecord(dir: string, children: NodeRecord[], mtimeMs: number, ino: number, backend: HashBackend): NodeRecord {
  const named = children.map((node) => ({ node, name: baseName(node.path) }));
  named.sort((a, b) => compareCodePoints(a.name, b.name));
  const enc = new Encoder('merkle.node.dir.v1').str(dir).u32(named.length);
  for (const { node, name } of named) {
    enc.u8(KIND_CODE[node.kind]).str(name);
    // A record read in place from a tree file gives its id's bytes (a directory's children are mostly such).
    if (node instanceof StoredRecord) node.store.appendNodeId(node.index, enc);
    else enc.id(node.nodeId);
  }
  return { path: dir, kind: 'dir', nodeId: enc.hash(backend), contentHash: '', size: named.length, mtimeMs, ino, children: named.map(({ node }) => node.path) };
}

/** The NodeID of a file or symlink: its path and content hash (see `hash.ts`). */
export function leafNodeId(kind: NodeKind, path: string, contentHash: string, backend: HashBackend): string {
  return new Encoder(kind === 'symlink' ? 'merkle.node.symlink.v1' : 'merkle.node.file.v1').str(path).id(contentHash).hash(backend);
}

/** The stored basis: null (none recorded) or `{ rules, reusable, racyFromMs? }`; undefined when malformed. */
export function parseBasis(text: string): ScanBasis | null | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value === null ? null : checkBasis(value);
  } catch {
    return undefined;
  }
}

/** `value` as a {@link ScanBasis} (its own fields only), or undefined when it is not one. */
export function checkBasis(value: unknown): ScanBasis | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { rules, reusable, racyFromMs } = value as Partial<ScanBasis>;
  if (typeof rules !== 'string' || typeof reusable !== 'boolean') return undefined;
  if (racyFromMs === undefined) return { rules, reusable };
  return typeof racyFromMs === 'number' && Number.isFinite(racyFromMs) ? { rules, reusable, racyFromMs } : undefined;
}

function corruptTree(where: string, why: string): never {
  throw new ContextError('CORRUPT_STORE', `corrupt tree file ${where}: ${why}; run 'backpackflow context scan --force'`, { file: where });
}

function depth(path: string): number {
  if (path === '') return 0;
  let n = 1;
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) n++;
  return n;
}

function ensureAncestors(dir: string, childNames: Map<string, string[]>): void {
  let current = dir;
  for (let parent = parentPath(current); parent !== undefined; parent = parentPath(current)) {
    const list = childNames.get(parent);
    if (list !== undefined) return;
    childNames.set(parent, [current]);
    current = parent;
  }
}
