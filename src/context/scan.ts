import { closeSync, existsSync, lstatSync, openSync, readFileSync, readSync, readlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fdir } from 'fdir';
import { ContextError } from './errors.js';
import type { HashBackend } from './hash.js';
import type { IgnoreRules } from './ignore-rules.js';
import { joinPath, parentPath } from './paths.js';
import { STAT_FIELDS, statOne, statSerial } from './stat-pool.js';
import { Tree, leafNodeId, type LeafRecord, type NodeRecord } from './tree.js';

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
   * Cache entries whose mtime is at or after this instant (the previous tree's write time) are re-read: the file
   * may have changed again within the same timestamp tick (git's "racy" entries).
   */
  readonly racyFromMs?: number;
  /** Only re-walk these directories (workspace paths); everything else is taken from `previous`. */
  readonly only?: readonly string[];
  /**
   * A helper thread for large rescans: while this thread walks the workspace, it stats the files the previous
   * tree knows (the likely result of the walk); this thread then stats its share and anything new.
   */
  readonly helper?: { statOnHelper(paths: string[]): Promise<Float64Array> };
}

/** Share of the known files given to the helper: this thread also walks the tree, so it takes fewer. */
const HELPER_SHARE = 0.62;

/** What a scan did. */
export interface ScanResult {
  /** The new tree, or `previous` itself when nothing changed. */
  readonly tree: Tree;
  /** False when the tree (stat cache included) is identical to `previous`. */
  readonly changed: boolean;
  /** Files and symlinks read and hashed. */
  readonly hashed: number;
}

/**
 * Walks the workspace (or the `only` subtrees), reusing cached records of files whose size, mtime and inode are
 * unchanged, hashing the rest, and builds the tree. Paths are stored NFC; the filesystem spelling is used for I/O.
 */
export async function scanWorkspace(input: ScanInput): Promise<ScanResult> {
  const root = resolve(input.workspaceRoot);
  const previous = input.force ? undefined : input.previous;
  const racyFrom = input.racyFromMs ?? Number.POSITIVE_INFINITY;
  const subtrees = input.only === undefined || input.previous === undefined ? [''] : prune(input.only, root, input.rules);

  const partial = subtrees[0] !== '' && input.previous !== undefined;
  // Leaves found by this scan, then (for a partial scan) the previous leaves outside the walked subtrees.
  const found: LeafRecord[] = [];

  let hashed = 0;
  // Directories whose set of children, or a child's id, may have changed: only these get new ids.
  const touched = new Set<string>();
  const prefetch = input.helper !== undefined && previous !== undefined && !partial ? startPrefetch(root, previous, input.helper) : undefined;
  const walked: Walked = { paths: [], fsPaths: [], dirs: [] };
  for (const subtree of subtrees) walk(root, subtree, input.rules, walked);
  const { paths, fsPaths } = walked;
  const { stats, known } = prefetch === undefined ? { stats: await statSerial(fsPaths), known: undefined } : await prefetch.complete(paths, fsPaths);
  let added = 0;
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i];
    const j = i * STAT_FIELDS;
    const kind = stats[j] === 1 ? 'file' : stats[j] === 2 ? 'symlink' : undefined;
    if (kind === undefined) continue; // deleted since the walk, or a socket, fifo or device: no content to hash
    const size = stats[j + 1];
    const mtimeMs = stats[j + 2];
    const ino = stats[j + 3];
    const cached = known === undefined ? previous?.get(path) : known[i];
    if (
      cached !== undefined &&
      cached.kind === kind &&
      cached.size === size &&
      cached.mtimeMs === mtimeMs &&
      cached.ino === ino &&
      cached.mtimeMs < racyFrom
    ) {
      found.push(cached);
      continue;
    }
    const contentHash = hashContent(fsPaths[i], kind, size, input.backend, path);
    hashed++;
    const nodeId = leafNodeId(kind, path, contentHash, input.backend);
    const record: LeafRecord = { path, kind, nodeId, contentHash, size, mtimeMs, ino };
    if (cached === undefined || cached.kind === 'dir') added++;
    if (sameLeaf(cached, record)) {
      found.push(cached!); // a racy entry re-read: unchanged
      continue;
    }
    found.push(record);
    touched.add(parentPath(path) ?? '');
  }

  const dirs = new Set<string>(['', ...walked.dirs]);
  if (partial) {
    for (const node of input.previous!.records()) {
      if (subtrees.some((s) => isUnder(node.path, s))) continue;
      if (node.kind === 'dir') dirs.add(node.path);
      else found.push(node);
    }
  }
  const before = input.force ? undefined : input.previous;
  if (before === undefined) return { tree: Tree.build(found, dirs, input.backend), changed: true, hashed };
  markStructuralChanges(before, found, added, dirs, touched);
  if (touched.size === 0) return { tree: before, changed: false, hashed };
  return { tree: Tree.build(found, dirs, input.backend, before, touched), changed: true, hashed };
}

/**
 * Adds to `touched` the parents of removed leaves and of added or removed directories. Every found leaf that is
 * not new came from `previous` under the same path, so when the counts agree nothing was removed.
 */
function markStructuralChanges(previous: Tree, found: readonly LeafRecord[], added: number, dirs: ReadonlySet<string>, touched: Set<string>): void {
  if (found.length - added !== previous.leafCount) {
    const present = new Set(found.map((leaf) => leaf.path));
    for (const node of previous.records()) {
      if (node.kind !== 'dir' && !present.has(node.path)) touched.add(parentPath(node.path) ?? '');
    }
  }
  let addedDirs = 0;
  for (const dir of dirs) {
    if (previous.get(dir)?.kind !== 'dir') {
      addedDirs++;
      touched.add(dir);
      touched.add(parentPath(dir) ?? '');
    }
  }
  if (dirs.size - addedDirs !== previous.size - previous.leafCount) {
    for (const node of previous.records()) {
      if (node.kind === 'dir' && !dirs.has(node.path)) touched.add(parentPath(node.path) ?? '');
    }
  }
}

/**
 * Stats the first {@link HELPER_SHARE} of the previous tree's files on the helper thread, started before the walk;
 * `complete` stats the walked files the helper did not cover (its share of known files, new files, and any file
 * the helper could not find under its NFC spelling) and returns stats in walk order.
 */
function startPrefetch(root: string, previous: Tree, helper: NonNullable<ScanInput['helper']>) {
  const { leaves, index } = previous.leafOrder();
  const share = Math.round(leaves.length * HELPER_SHARE);
  const request: string[] = new Array(share);
  for (let i = 0; i < share; i++) request[i] = `${root}/${leaves[i].path}`;
  const pending = helper.statOnHelper(request);
  return {
    /** Stats in walk order, and the previous record of each walked path (undefined when new). */
    async complete(paths: readonly string[], fsPaths: readonly string[]): Promise<{ stats: Float64Array; known: (NodeRecord | undefined)[] }> {
      const stats = new Float64Array(paths.length * STAT_FIELDS);
      const known: (NodeRecord | undefined)[] = new Array(paths.length);
      const slots = new Int32Array(paths.length);
      for (let i = 0; i < paths.length; i++) {
        // A walk of an unchanged directory finds its files in the same order as the walk that built `previous`.
        const slot = i < leaves.length && leaves[i].path === paths[i] ? i : (index().get(paths[i]) ?? -1);
        known[i] = slot < 0 ? undefined : leaves[slot];
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
      return { stats, known };
    },
  };
}

/** The files (NFC workspace path and filesystem path, in parallel arrays) and directories of one subtree. */
interface Walked {
  readonly paths: string[];
  readonly fsPaths: string[];
  readonly dirs: string[];
}

function walk(root: string, subtree: string, rules: IgnoreRules, into: Walked): void {
  const base = subtree === '' ? root : join(root, subtree);
  const rootPrefixLength = root.length + 1;
  const crawled = new fdir()
    .withRelativePaths()
    .withDirs()
    .withPathSeparator('/')
    .withErrors()
    .exclude((name, dirPath) => {
      // dirPath is the absolute path of the candidate directory, with a trailing separator.
      const rel = nfc(dirPath.slice(rootPrefixLength, -1));
      return rules.ignores(parentPath(rel) ?? '', nfc(name), true);
    })
    .crawl(base)
    .sync();
  // Only names that NFC changes can collide; ASCII names (the common case) skip the check.
  let normalized: Set<string> | undefined;
  for (const rel of crawled) {
    if (rel === '.' || rel === './' || rel === '') {
      into.dirs.push(subtree);
      continue;
    }
    const fsPath = subtree === '' ? rel : joinPath(subtree, rel);
    if (rel.endsWith('/')) {
      into.dirs.push(nfc(fsPath.slice(0, -1)));
      continue;
    }
    const path = nfc(fsPath);
    const slash = path.lastIndexOf('/');
    if (rules.ignores(slash < 0 ? '' : path.slice(0, slash), path.slice(slash + 1), false)) continue;
    if (path !== fsPath || normalized?.has(path)) {
      normalized ??= new Set(into.paths);
      if (normalized.has(path)) {
        throw new ContextError('SCAN_FAILED', `two files in ${root} have the same NFC name '${path}'; rename one`, { path });
      }
      normalized.add(path);
    }
    into.paths.push(path);
    into.fsPaths.push(`${root}/${fsPath}`);
  }
}

const NON_ASCII = /[^ -~\t\n\r]/;

/** NFC form of a path; ASCII (the common case) is already NFC. */
function nfc(path: string): string {
  return NON_ASCII.test(path) ? path.normalize('NFC') : path;
}

/** The directories to re-walk: nearest existing, non-ignored directory of each path, without nested duplicates. */
function prune(paths: readonly string[], root: string, rules: IgnoreRules): string[] {
  const dirs = new Set<string>();
  for (const path of paths) {
    let dir: string | undefined = path;
    while (dir !== undefined && dir !== '' && !isDirectory(join(root, dir))) dir = parentPath(dir);
    if (dir === undefined || dir === '' || isIgnoredPath(dir, rules)) {
      if (dir === '' || dir === undefined) return [''];
      continue;
    }
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

function isDirectory(abs: string): boolean {
  return existsSync(abs) && lstatSync(abs).isDirectory();
}

function isUnder(path: string, dir: string): boolean {
  return dir === '' || path === dir || path.startsWith(`${dir}/`);
}

function hashContent(abs: string, kind: 'file' | 'symlink', size: number, backend: HashBackend, path: string): string {
  try {
    if (kind === 'symlink') return backend.digest(Buffer.from(readlinkSync(abs), 'utf8')).toString('hex');
    if (size <= STREAM_THRESHOLD) return backend.digest(readFileSync(abs)).toString('hex');
    const hasher = backend.hasher();
    const fd = openSync(abs, 'r');
    try {
      const buffer = Buffer.allocUnsafe(CHUNK);
      for (let n = readSync(fd, buffer, 0, CHUNK, null); n > 0; n = readSync(fd, buffer, 0, CHUNK, null)) {
        hasher.update(buffer.subarray(0, n));
      }
    } finally {
      closeSync(fd);
    }
    return hasher.digest().toString('hex');
  } catch (error) {
    throw scanError(path, error);
  }
}

function scanError(path: string, error: unknown): ContextError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ContextError('SCAN_FAILED', `cannot read '${path}': ${reason}`, { path });
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
