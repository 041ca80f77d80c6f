import { closeSync, constants, lstatSync, readSync, readlinkSync } from 'node:fs';
import { openRegularFile, type NotRegularFile, type OpenedFile } from '../fs/index.js';
import { join, resolve } from 'node:path';
import { ContextError } from './errors.js';
import type { HashBackend } from './hash.js';
import type { IgnoreRules } from './ignore-rules.js';
import { emptyListing, listWorkspace, type DirStat, type Listing } from './listing.js';
import { joinPath } from './paths.js';
import { quickCheck, treeStats, type QuickCheckInput, type StaleLeaf } from './quick-check.js';
import { STAT_FAILED, STAT_FIELDS, statOne, statSerial } from './stat-pool.js';
import { Tree, coarseRacyInstant, leafNodeId, racyKey, settledMtime, type LeafRecord, type NodeRecord, type ScanBasis } from './tree.js';

/** Files above this size are hashed in chunks rather than read whole. */
const STREAM_THRESHOLD = 16 * 1024 * 1024;
const CHUNK = 4 * 1024 * 1024;

/** Inputs of one scan. */
export interface ScanInput {
  readonly workspaceRoot: string;
  readonly rules: IgnoreRules;
  readonly backend: HashBackend;
  /** The tree of the previous scan, whose stat cache lets unchanged files go unread. */
  readonly previous?: Tree;
  /** Re-read every file, ignoring the stat cache. */
  readonly force?: boolean;
  /**
   * Cache entries whose mtime is at or after this instant (the previous tree's racy instant, see
   * `ScanBasis.racyFromMs`) are re-read: the file may have changed after that scan read it, within the same timestamp
   * tick (git's "racy" entries).
   */
  readonly racyFromMs?: number;
  /**
   * The racy instant of the tree this scan builds: `racyInstant` of the time it began, before it stat'ed anything.
   * A scan of only some directories (`only`) checked only those, so its tree keeps the earlier of this and
   * `racyFromMs`. Absent: none is recorded (a rescan that is not written, as validate's).
   */
  readonly nextRacyFromMs?: number;
  /** Only re-walk these directories (workspace paths); everything else is taken from `previous`. */
  readonly only?: readonly string[];
  /** A helper thread for large scans: it stats a share of the files (NUL-joined paths) while this thread stats the rest. */
  readonly helper?: { statOnHelper(joinedPaths: string): Promise<Float64Array> } & QuickCheckInput['helper'];
  /** The result of {@link quickCheck} on `previous` under the same rules and racy instant, when already taken. */
  readonly quick?: { readonly stale: readonly StaleLeaf[] | undefined };
}

/** Share of the files the helper thread stats; this thread lists the workspace and stats the rest. */
const HELPER_SHARE = 0.55;

/** What a scan did. */
export interface ScanResult {
  /** The new tree, or `previous` itself when nothing changed. */
  readonly tree: Tree;
  /** False when the tree (stat cache and scan basis included) is identical to `previous`. */
  readonly changed: boolean;
  /** Files and symlinks read and hashed. */
  readonly hashed: number;
  /**
   * When the tree is unchanged but entries whose stat matched `previous` were read again only because they fell in
   * its racy window (`racyFromMs`: changed after the scan that recorded them began), the highest of their `racyKey`s
   * (their mtimes, a whole-second one 2 s later); else undefined. The window stays where it is until the tree is written again, so every later scan would read them
   * again: the caller records this scan's racy instant (`nextRacyFromMs`) when that key is below it (see
   * `ContextEngine.scan` and `MerkleStore.refreshTree`), as git rewrites its index after refreshing racily clean
   * entries.
   */
  readonly racyMtimeMs?: number;
  /**
   * The racy instant of the tree this scan checked (see `ScanInput.nextRacyFromMs`: a partial scan's is no later
   * than the previous tree's); undefined when none was given.
   */
  readonly nextRacyFromMs?: number;
  /**
   * For a scan that updated the previous tree, the records it added or replaced and the paths it removed (what
   * the store journals instead of rewriting the tree); undefined when the tree was built whole.
   */
  readonly delta?: { readonly upserts: readonly NodeRecord[]; readonly removed: readonly string[] };
  /** Entries left out of the tree, each named with its directory (names that are not valid UTF-8: see `listWorkspace`). */
  readonly warnings: readonly string[];
}

/**
 * Lists the workspace (or the `only` subtrees), reusing the listings of directories whose stat is unchanged and the
 * records of files whose size, mtime and inode are unchanged; hashes the rest and builds the tree. Paths are stored
 * NFC; the filesystem spelling is used for I/O.
 */
export async function scanWorkspace(input: ScanInput): Promise<ScanResult> {
  const root = resolve(input.workspaceRoot);
  const previous = input.force ? undefined : input.previous;
  const racyFrom = input.racyFromMs ?? Number.POSITIVE_INFINITY;
  const coarseFrom = coarseRacyInstant(racyFrom);
  const subtrees = input.only === undefined || input.previous === undefined ? [''] : prune(input.only, root, input.rules);
  const partial = subtrees[0] !== '' && input.previous !== undefined;
  const next = input.nextRacyFromMs === undefined ? undefined : partial ? Math.min(input.nextRacyFromMs, racyFrom) : input.nextRacyFromMs;
  const racy = next === undefined ? {} : { nextRacyFromMs: next };
  if (previous !== undefined && !partial) {
    const stale = input.quick !== undefined ? input.quick.stale : await quickCheck({ root, tree: treeStats(previous), rulesKey: input.rules.key, racyFromMs: racyFrom, helper: input.helper });
    const result = stale === undefined ? undefined : rehashStale(previous, stale, root, input.backend, input.nextRacyFromMs);
    if (result !== undefined) return result;
  }

  const list = (reuse: boolean): Listing => {
    const listing = emptyListing();
    const cache = previous === undefined ? undefined : { tree: previous, racyFromMs: racyFrom, coarseFromMs: coarseFrom, reuse };
    for (const subtree of subtrees) listWorkspace(root, subtree, input.rules, cache, listing);
    return listing;
  };
  // The helper starts on the files the previous tree knows (most likely the listing's result) before the listing.
  const prefetch = input.helper !== undefined && previous !== undefined && !partial ? startPrefetch(root, previous, input.helper) : undefined;
  let listing = list(true);
  let stats = prefetch !== undefined ? await prefetch.complete(listing) : await statAll(listing.fsPaths, input.helper);
  if (listing.reused > 0 && (listing.rulesChanged || gitignoreChanged(listing, stats, racyFrom))) {
    // A .gitignore changed, so listings taken from the cache may keep files the rules now drop, or the reverse.
    listing = list(false);
    stats = await statAll(listing.fsPaths, input.helper);
  }

  const { paths, fsPaths, known } = listing;
  // Without a previous tree every leaf goes into a whole build; with one, only what changed goes into an update.
  const found: LeafRecord[] | undefined = previous === undefined ? [] : undefined;
  const changedLeaves: LeafRecord[] = [];
  let hashed = 0;
  let racyMtimeMs = Number.NEGATIVE_INFINITY;
  let present = 0;
  let added = 0;
  const gitignoreFiles = new Set<string>();
  for (const i of listing.gitignores) if (stats[i * STAT_FIELDS] === 1) gitignoreFiles.add(paths[i]);
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i];
    const j = i * STAT_FIELDS;
    if (stats[j] === STAT_FAILED) throw unstattable(path, fsPaths[i]);
    const kind = stats[j] === 1 ? 'file' : stats[j] === 2 ? 'symlink' : undefined;
    if (kind === undefined) continue; // deleted since it was listed, or no longer a file or symlink
    const size = stats[j + 1];
    const mtimeMs = stats[j + 2];
    const ino = stats[j + 3];
    const cached = known[i];
    if (cached !== undefined && cached.kind === kind && cached.size === size && cached.mtimeMs === mtimeMs && cached.ino === ino) {
      if (settledMtime(cached.mtimeMs, racyFrom, coarseFrom)) {
        present++;
        found?.push(cached);
        continue;
      }
      racyMtimeMs = Math.max(racyMtimeMs, racyKey(mtimeMs));
    }
    const read = readLeaf(fsPaths[i], { kind, size, mtimeMs, ino }, input.backend, path);
    hashed++;
    if (read === undefined || read.kind !== kind) {
      // Replaced since its lstat: recorded as what it is now (gone, or anything but a file or symlink, is not listed).
      stats[j] = read === undefined ? 0 : read.kind === 'file' ? 1 : 2;
      if (read === undefined) continue;
    }
    present++;
    const record = leafRecord(path, read, input.backend);
    if (cached === undefined) added++;
    if (sameLeaf(cached, record)) {
      found?.push(cached!); // a racy entry re-read: unchanged
      continue;
    }
    found?.push(record);
    changedLeaves.push(record);
  }

  const { dirs } = listing;
  const isGitignoreFile = (path: string): boolean =>
    gitignoreFiles.has(path) || (partial && !subtrees.some((s) => isUnder(path, s)) && input.previous!.get(path)?.kind === 'file');
  const listed = scanBasis(input.rules, isGitignoreFile, listing.reused > 0 || partial ? input.previous : undefined);
  const basis: ScanBasis = next === undefined ? listed : { ...listed, racyFromMs: next };
  const { warnings } = listing;
  if (previous === undefined) return { tree: Tree.build(found!, dirs, input.backend, basis), changed: true, hashed, warnings, ...racy };
  const removed = partial ? removedUnder(previous, subtrees, paths, stats, dirs) : removedAll(previous, paths, stats, present - added, dirs);
  const update = previous.update({ leaves: changedLeaves, removed, dirs, basis }, input.backend);
  racyMtimeMs = Math.max(racyMtimeMs, listing.racyMtimeMs);
  if (update.tree === previous) return { tree: previous, changed: false, hashed, warnings, ...racy, ...(racyMtimeMs > Number.NEGATIVE_INFINITY ? { racyMtimeMs } : {}) };
  return { tree: update.tree, changed: true, hashed, delta: { upserts: update.upserts, removed }, warnings, ...racy };
}

/**
 * The scan's result when {@link quickCheck} found only files whose stat changed: those are read and hashed, and the
 * tree is updated with the ones whose record changed (a racy file re-read unchanged keeps its record). Undefined
 * when a stale leaf is not a leaf of `previous` with the stat the check read (it read a stat index that does not
 * match the tree), or is no longer what the check found (the check ran without the lock, so the entry may have been
 * replaced since: by a FIFO, a symlink, another file): the full listing must run.
 */
function rehashStale(previous: Tree, stale: readonly StaleLeaf[], root: string, backend: HashBackend, nextRacyFromMs: number | undefined): ScanResult | undefined {
  const leaves: LeafRecord[] = [];
  for (const { record: cached, kind, size, mtimeMs, ino } of stale) {
    const old = previous.get(cached.path);
    if (old === undefined || old.kind !== cached.kind || old.size !== cached.size || old.mtimeMs !== cached.mtimeMs || old.ino !== cached.ino) return undefined;
    const read = readLeaf(`${root}/${old.path}`, { kind, size, mtimeMs, ino }, backend, old.path);
    if (read === undefined || read.kind !== kind || read.ino !== ino) return undefined;
    const record = leafRecord(old.path, read, backend);
    if (!sameLeaf(old, record)) leaves.push(record);
  }
  // The quick check stat'ed every entry: the new tree's racy instant is this scan's.
  const basis = nextRacyFromMs === undefined ? previous.basis! : { ...previous.basis!, racyFromMs: nextRacyFromMs };
  const racy = nextRacyFromMs === undefined ? {} : { nextRacyFromMs };
  const update = previous.update({ leaves, removed: [], dirs: new Map(), basis }, backend);
  // Nothing changed, yet files were stale: their stat matched, but in the racy window.
  if (update.tree === previous) return { tree: previous, changed: false, hashed: stale.length, warnings: [], ...racy, ...(stale.length > 0 ? { racyMtimeMs: stale.reduce((newest, leaf) => Math.max(newest, racyKey(leaf.mtimeMs)), Number.NEGATIVE_INFINITY) } : {}) };
  return { tree: update.tree, changed: true, hashed: stale.length, delta: { upserts: update.upserts, removed: [] }, warnings: [], ...racy };
}

/** Paths of `previous` that a full scan did not find. `kept` leaves of the listing were leaves before. */
function removedAll(previous: Tree, paths: readonly string[], stats: Float64Array, kept: number, dirs: ReadonlyMap<string, DirStat>): string[] {
  const removed: string[] = [];
  const leavesGone = kept !== previous.leafCount;
  let dirsKept = 0;
  for (const dir of dirs.keys()) if (previous.get(dir)?.kind === 'dir') dirsKept++;
  const dirsGone = dirsKept !== previous.size - previous.leafCount;
  if (!leavesGone && !dirsGone) return removed;
  const found = leavesGone ? listedLeaves(paths, stats) : undefined;
  for (const node of previous.records()) {
    if (node.kind === 'dir' ? dirsGone && !dirs.has(node.path) : found !== undefined && !found.has(node.path)) removed.push(node.path);
  }
  return removed;
}

/** Paths of `previous` inside the re-walked `subtrees` that a partial scan did not find. */
function removedUnder(previous: Tree, subtrees: readonly string[], paths: readonly string[], stats: Float64Array, dirs: ReadonlyMap<string, DirStat>): string[] {
  const found = listedLeaves(paths, stats);
  const removed: string[] = [];
  for (const node of previous.records()) {
    if (!subtrees.some((s) => isUnder(node.path, s))) continue;
    if (node.kind === 'dir' ? !dirs.has(node.path) : !found.has(node.path)) removed.push(node.path);
  }
  return removed;
}

function listedLeaves(paths: readonly string[], stats: Float64Array): Set<string> {
  const found = new Set<string>();
  for (let i = 0; i < paths.length; i++) if (stats[i * STAT_FIELDS] === 1 || stats[i * STAT_FIELDS] === 2) found.add(paths[i]);
  return found;
}

/** lstat of every path, shared with the helper thread when there is one. */
async function statAll(fsPaths: readonly string[], helper: ScanInput['helper']): Promise<Float64Array> {
  if (helper === undefined) return statSerial(fsPaths);
  const split = Math.round(fsPaths.length * HELPER_SHARE);
  const pending = helper.statOnHelper(fsPaths.slice(0, split).join('\0'));
  const stats = new Float64Array(fsPaths.length * STAT_FIELDS);
  for (let i = split; i < fsPaths.length; i++) statOne(fsPaths[i], stats, i);
  stats.set(await pending, 0);
  return stats;
}

/** The helper's share of a tree's leaves as NUL-joined filesystem paths, computed once per tree and root. */
const prefetchRequests = new WeakMap<readonly string[], { root: string; joined: string; share: number }>();

/**
 * Starts the helper on the first {@link HELPER_SHARE} of the previous tree's leaves; `complete` stats on this
 * thread every listed file the helper does not cover (its own share, new files, files whose place moved, names the
 * helper could not find under their NFC spelling) and returns the stats in listing order.
 */
function startPrefetch(root: string, previous: Tree, helper: NonNullable<ScanInput['helper']>) {
  const leaves = previous.leafPaths();
  let request = prefetchRequests.get(leaves);
  if (request === undefined || request.root !== root) {
    const share = Math.round(leaves.length * HELPER_SHARE);
    let joined = '';
    for (let i = 0; i < share; i++) joined += i === 0 ? `${root}/${leaves[i]}` : `\0${root}/${leaves[i]}`;
    request = { root, joined, share };
    prefetchRequests.set(leaves, request);
  }
  const { share } = request;
  const pending = helper.statOnHelper(request.joined);
  let index: Map<string, number> | undefined;
  return {
    async complete(listing: Listing): Promise<Float64Array> {
      const { paths, fsPaths } = listing;
      const stats = new Float64Array(paths.length * STAT_FIELDS);
      const slots = new Int32Array(paths.length);
      for (let i = 0; i < paths.length; i++) {
        let slot = i < leaves.length && leaves[i] === paths[i] ? i : -1;
        if (slot < 0) {
          index ??= new Map(leaves.map((leaf, k) => [leaf, k]));
          slot = index.get(paths[i]) ?? -1;
        }
        if (slot >= 0 && slot < share) slots[i] = slot;
        else {
          slots[i] = -1;
          statOne(fsPaths[i], stats, i);
        }
      }
      const helped = await pending;
      for (let i = 0; i < paths.length; i++) {
        const slot = slots[i];
        if (slot < 0) continue;
        const from = slot * STAT_FIELDS;
        if (helped[from] === 0) statOne(fsPaths[i], stats, i); // not found under the stored spelling
        else stats.set(helped.subarray(from, from + STAT_FIELDS), i * STAT_FIELDS);
      }
      return stats;
    },
  };
}

/** True when a `.gitignore` listed from the cache is new, gone or not byte-for-byte the one of the previous scan. */
function gitignoreChanged(listing: Listing, stats: Float64Array, racyFrom: number): boolean {
  return listing.gitignores.some((i) => {
    const cached = listing.known[i];
    const j = i * STAT_FIELDS;
    return (
      cached === undefined ||
      stats[j] !== 1 ||
      cached.kind !== 'file' ||
      cached.size !== stats[j + 1] ||
      cached.mtimeMs !== stats[j + 2] ||
      cached.ino !== stats[j + 3] ||
      !settledMtime(cached.mtimeMs, racyFrom, coarseRacyInstant(racyFrom))
    );
  });
}

/**
 * The basis of the new tree. Its listings are reusable when every `.gitignore` the rules read is a file of the tree
 * (so a later change to it is seen); `inherited` is the previous tree when this scan read only part of the
 * directories, whose unread parts keep that tree's verdict.
 */
function scanBasis(rules: IgnoreRules, isGitignoreFile: (path: string) => boolean, inherited: Tree | undefined): ScanBasis {
  const reusable = inherited === undefined || (inherited.basis?.reusable === true && inherited.basis.rules === rules.key);
  return { rules: rules.key, reusable: reusable && rules.gitignoreDirs().every((dir) => isGitignoreFile(joinPath(dir, '.gitignore'))) };
}

/** The directories to re-walk: nearest existing, non-ignored directory of each path, without nested duplicates. */
function prune(paths: readonly string[], root: string, rules: IgnoreRules): string[] {
  const dirs = new Set<string>();
  for (const path of paths) {
    const dir = directoryPrefix(root, path);
    if (dir === '') return [''];
    if (isIgnoredPath(dir, rules)) continue;
    dirs.add(dir);
  }
  const sorted = [...dirs].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const dir of sorted) if (!kept.some((k) => isUnder(dir, k))) kept.push(dir);
  return kept;
}

function isIgnoredPath(path: string, rules: IgnoreRules): boolean {
  const parts = path.split('/');
  let dir = '';
  for (const part of parts) {
    if (rules.ignores(dir, part, true)) return true;
    dir = joinPath(dir, part);
  }
  return false;
}

/**
 * The longest leading part of `path` whose every component is a directory of the workspace, not a link ('' when
 * the first is not): each component is checked with lstat, so a path through a symbolic link (`outlink/sub/x`, where
 * `outlink` points outside) is rescanned from the link's folder, which records the link as a link, never what it
 * points to.
 */
function directoryPrefix(root: string, path: string): string {
  let dir = '';
  for (const part of path.split('/')) {
    const next = joinPath(dir, part);
    let isDir: boolean;
    try {
      isDir = lstatSync(join(root, next)).isDirectory();
    } catch {
      break;
    }
    if (!isDir) break;
    dir = next;
  }
  return dir;
}

function isUnder(path: string, dir: string): boolean {
  return dir === '' || path === dir || path.startsWith(`${dir}/`);
}

/** A leaf as {@link readLeaf} read it: its kind, content hash and the stat of what was read. */
type LeafRead = Pick<LeafRecord, 'kind' | 'contentHash' | 'size' | 'mtimeMs' | 'ino'>;

/** The record of the leaf at `path` as read (its fields in one order, so that every record has one shape). */
function leafRecord(path: string, read: LeafRead, backend: HashBackend): LeafRecord {
  const { kind, contentHash, size, mtimeMs, ino } = read;
  return { path, kind, nodeId: leafNodeId(kind, path, contentHash, backend), contentHash, size, mtimeMs, ino };
}

/** Opens a file for hashing (see openRegularFile: no link followed, no blocking) without making a terminal the controlling one. */
const OPEN_LEAF = constants.O_RDONLY | (constants.O_NOCTTY ?? 0);

/**
 * Reads and hashes the leaf at `abs`, which an earlier lstat (`listed`) found to be a file or symlink. It may have
 * been replaced since (the quick check stats without the lock, and a scan may wait for the lock after it): a file
 * is opened with {@link OPEN_LEAF}, its handle fstat'ed and read only when it is a regular file, and the result
 * carries that fstat; a symlink's target is read as link text, never followed. An entry that became a symlink or a
 * file is read as what it is now; one that is gone, or is now a directory, FIFO, socket or device, gives undefined
 * (the listing leaves those out too, and the changed mtime of its directory makes the next scan list it again).
 * One open, fstat and read per file hashed, as `readFileSync` costs: nothing for files the stat cache serves.
 */
function readLeaf(abs: string, listed: Pick<LeafRecord, 'kind' | 'size' | 'mtimeMs' | 'ino'>, backend: HashBackend, path: string): LeafRead | undefined {
  try {
    if (listed.kind === 'symlink') {
      const target = linkTarget(abs);
      if (target === null) return undefined;
      if (target !== undefined) return { kind: 'symlink', contentHash: backend.digest(Buffer.from(target, 'utf8')).toString('hex'), size: listed.size, mtimeMs: listed.mtimeMs, ino: listed.ino };
    }
    let opened: OpenedFile | NotRegularFile;
    try {
      opened = openRegularFile(abs, OPEN_LEAF);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined; // gone
      throw error;
    }
    if ('notRegular' in opened) return opened.notRegular === 'a symbolic link' && listed.kind === 'file' ? symlinkNow(abs, backend) : undefined;
    const { fd, stat } = opened;
    try {
      return { kind: 'file', contentHash: hashHandle(fd, stat.size, backend), size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino };
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    throw scanError(path, error);
  }
}

/** The target of the symlink at `abs`; null when nothing is there, undefined when it is no longer a symlink. */
function linkTarget(abs: string): string | null | undefined {
  try {
    return readlinkSync(abs);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EINVAL') return undefined;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/** A file that became a symlink after it was listed, read as one (its own lstat: the listed stat was the file's). */
function symlinkNow(abs: string, backend: HashBackend): LeafRead | undefined {
  const stat = lstatSync(abs, { throwIfNoEntry: false });
  if (stat === undefined || !stat.isSymbolicLink()) return undefined;
  const target = linkTarget(abs);
  if (typeof target !== 'string') return undefined;
  return { kind: 'symlink', contentHash: backend.digest(Buffer.from(target, 'utf8')).toString('hex'), size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino };
}

/** BLAKE3 of an open file's bytes: whole when at most STREAM_THRESHOLD (its fstat size), else in chunks to its end. */
function hashHandle(fd: number, size: number, backend: HashBackend): string {
  if (size <= STREAM_THRESHOLD) {
    const buffer = Buffer.allocUnsafe(size);
    let done = 0;
    for (let n = 1; done < size && n > 0; done += n) n = readSync(fd, buffer, done, size - done, null);
    return backend.digest(buffer.subarray(0, done)).toString('hex');
  }
  const hasher = backend.hasher();
  const buffer = Buffer.allocUnsafe(CHUNK);
  for (let n = readSync(fd, buffer, 0, CHUNK, null); n > 0; n = readSync(fd, buffer, 0, CHUNK, null)) hasher.update(buffer.subarray(0, n));
  return hasher.digest().toString('hex');
}

function scanError(path: string, error: unknown): ContextError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ContextError('SCAN_FAILED', `cannot read '${path}': ${reason}; make it readable by this user, or add it to .gitignore to leave it out`, { path });
}

/**
 * The error for a listed entry whose lstat failed (see STAT_FAILED): EACCES when a directory on its path cannot be
 * searched, ELOOP, ENAMETOOLONG. Its lstat is taken once more, here only, for the reason.
 */
function unstattable(path: string, fsPath: string): ContextError {
  let reason = 'lstat failed';
  try {
    lstatSync(fsPath);
  } catch (error) {
    reason = (error as Error).message;
  }
  return new ContextError(
    'SCAN_FAILED',
    `cannot stat '${path}': ${reason}; make the directories on its path searchable by this user, or add it to .gitignore to leave it out`,
    { path },
  );
}

function sameLeaf(a: NodeRecord | undefined, b: LeafRecord): boolean {
  return (
    a !== undefined &&
    a.kind === b.kind &&
    a.nodeId === b.nodeId &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.ino === b.ino
  );
}
