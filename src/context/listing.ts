import { lstatSync, readdirSync } from 'node:fs';
import { ContextError } from './errors.js';
import { compareCodePoints } from './hash.js';
import type { IgnoreRules } from './ignore-rules.js';
import { baseName, joinPath } from './paths.js';
import type { NodeRecord, Tree } from './tree.js';

/** The stat of a directory that the listing cache keys on. */
export interface DirStat {
  readonly mtimeMs: number;
  readonly ino: number;
}

/** The files and directories of a workspace (or of one subtree of it). */
export interface Listing {
  /** NFC workspace paths of files and symlinks. */
  readonly paths: string[];
  /** The same entries as absolute filesystem paths (the filesystem's own spelling). */
  readonly fsPaths: string[];
  /** The previous scan's record of each entry of `paths`, when it had one. */
  readonly known: (NodeRecord | undefined)[];
  /** Every directory listed, with its stat taken before its entries were read. */
  readonly dirs: Map<string, DirStat>;
  /** Positions in `paths` of `.gitignore` files: a change to one invalidates listings taken from the cache. */
  readonly gitignores: number[];
  /** Directories whose listing came from the cache instead of a readdir. */
  reused: number;
  /**
   * The newest mtime of the directories read again only because their unchanged stat fell in the racy window (see
   * ListingCache.racyFromMs), or -Infinity: until a newer write of the tree moves that window past them, every scan
   * reads them again.
   */
  racyMtimeMs: number;
  /** A re-read directory gained or lost a `.gitignore`, so cached listings below it may no longer hold. */
  rulesChanged: boolean;
}

/** The previous scan, whose records the listing reports and whose directory listings it may reuse. */
export interface ListingCache {
  readonly tree: Tree;
  /** Directories modified at or after this instant are re-read: they may have changed again in the same tick. */
  readonly racyFromMs: number;
  /** Reuse the listings of unchanged directories (git's "untracked cache"); false re-reads every directory. */
  readonly reuse: boolean;
}

/** An empty listing to fill. */
export function emptyListing(): Listing {
  return { paths: [], fsPaths: [], known: [], dirs: new Map(), gitignores: [], reused: 0, racyMtimeMs: Number.NEGATIVE_INFINITY, rulesChanged: false };
}

/**
 * Lists the files under `subtree` that the rules keep. A directory whose lstat (mtime, inode) equals the cached
 * record's is not read: its entries can only have changed through a create, delete or rename in it, each of which
 * changes its mtime, so the cached children are its listing (their contents are still checked by the caller's
 * stat of every file). Names that NFC changes are always re-read, since the cache holds only the NFC spelling.
 * The directory is stat'ed before it is read, so a change racing with the read shows up as a changed mtime.
 * Entries come in the tree's canonical order (depth first, children by code point), as `Tree.leaves()` lists them.
 */
export function listWorkspace(root: string, subtree: string, rules: IgnoreRules, cache: ListingCache | undefined, into: Listing): void {
  const previousTree = cache?.tree;
  const usable = cache?.reuse === true && cache.tree.basis?.reusable === true && cache.tree.basis.rules === rules.key ? cache : undefined;
  // Subtrees handed in are NFC workspace paths of directories that exist under that spelling (see `prune`).
  visit(subtree, subtree, previousTree?.get(subtree));

  function visit(dir: string, fsDir: string, previous: NodeRecord | undefined): void {
    const abs = fsDir === '' ? root : `${root}/${fsDir}`;
    let stat;
    try {
      stat = lstatSync(abs, { throwIfNoEntry: false });
    } catch (error) {
      throw listError(dir, error);
    }
    if (stat === undefined || !stat.isDirectory()) {
      if (dir === subtree) throw new ContextError('SCAN_FAILED', `cannot read '${dir === '' ? root : dir}': not a directory`, { path: dir });
      return; // removed or replaced since its parent was read
    }
    into.dirs.set(dir, { mtimeMs: stat.mtimeMs, ino: stat.ino });
    const unchanged = usable !== undefined && previous !== undefined && previous.kind === 'dir' && previous.mtimeMs === stat.mtimeMs && previous.ino === stat.ino && fsDir === dir;
    if (unchanged && stat.mtimeMs >= usable.racyFromMs) into.racyMtimeMs = Math.max(into.racyMtimeMs, stat.mtimeMs);
    else if (unchanged) {
      const records = usable.tree.childRecords(previous);
      const fsPaths = childFsPaths(root, previous, records);
      if (fsPaths !== undefined) {
        into.reused++;
        for (let i = 0; i < records.length; i++) {
          const record = records[i];
          if (record.kind === 'dir') visit(record.path, record.path, record);
          else add(record.path, fsPaths[i], record);
        }
        return;
      }
    }
    let entries;
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch (error) {
      throw listError(dir, error);
    }
    // The tree's canonical order, so that an unchanged workspace lists in the same order as the tree's leaves.
    entries.sort((a, b) => compareCodePoints(nfc(a.name), nfc(b.name)));
    let hasGitignore = false;
    for (const entry of entries) {
      const name = entry.name;
      if (name === '.gitignore') hasGitignore = true;
      const isDir = entry.isDirectory();
      if (!isDir && !entry.isFile() && !entry.isSymbolicLink()) continue; // sockets, fifos, devices: no content
      const nfcName = nfc(name);
      if (rules.ignores(dir, nfcName, isDir)) continue;
      const path = joinPath(dir, nfcName);
      if (isDir) visit(path, joinPath(fsDir, name), previousTree?.get(path));
      else add(path, `${abs}/${name}`, previousTree?.get(path));
    }
    if (usable !== undefined && previous?.kind === 'dir') {
      const had = usable.tree.get(joinPath(dir, '.gitignore')) !== undefined;
      if (had !== hasGitignore) into.rulesChanged = true;
    }
    if (entries.some((e) => !isAscii(e.name))) checkNfcCollisions(dir, entries.map((e) => e.name));
  }

  function add(path: string, fsPath: string, record: NodeRecord | undefined): void {
    if (baseName(path) === '.gitignore') into.gitignores.push(into.paths.length);
    into.paths.push(path);
    into.fsPaths.push(fsPath);
    into.known.push(record?.kind === 'dir' ? undefined : record);
  }
}

const fsPathCache = new WeakMap<NodeRecord, { root: string; paths: readonly string[] | undefined }>();

/**
 * Absolute paths of a directory's children, cached per record; undefined when a name is not ASCII, since only the
 * NFC spelling is stored and the filesystem's may differ.
 */
function childFsPaths(root: string, dir: NodeRecord, records: readonly NodeRecord[]): readonly string[] | undefined {
  const cached = fsPathCache.get(dir);
  if (cached !== undefined && cached.root === root) return cached.paths;
  const paths = records.every((record) => isAscii(record.path)) ? records.map((record) => `${root}/${record.path}`) : undefined;
  fsPathCache.set(dir, { root, paths });
  return paths;
}

const NON_ASCII = /[^ -~\t\n\r]/;

function isAscii(path: string): boolean {
  return !NON_ASCII.test(path);
}

/** NFC form of a name or path; ASCII (the common case) is already NFC. */
export function nfc(path: string): string {
  return NON_ASCII.test(path) ? path.normalize('NFC') : path;
}

/** Two names of one directory that are equal after NFC would map to one workspace path. */
function checkNfcCollisions(dir: string, names: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    const key = nfc(name);
    if (seen.has(key)) {
      const path = joinPath(dir, key);
      throw new ContextError('SCAN_FAILED', `two entries of '${dir === '' ? '.' : dir}' have the same NFC name '${key}'; rename one`, { path });
    }
    seen.add(key);
  }
}

function listError(dir: string, error: unknown): ContextError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ContextError('SCAN_FAILED', `cannot read directory '${dir === '' ? '.' : dir}': ${reason}`, { path: dir });
}
