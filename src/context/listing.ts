import { lstatSync, readdirSync, type Dirent } from 'node:fs';
import { ContextError } from './errors.js';
import { compareCodePoints } from './hash.js';
import type { IgnoreRules } from './ignore-rules.js';
import { baseName, displayPath, joinPath } from './paths.js';
import { racyKey, settledMtime, type NodeRecord, type Tree } from './tree.js';

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
   * ListingCache.racyFromMs), or -Infinity: until a write of the tree with a later racy instant moves that window past
   * them, every scan reads them again.
   */
  racyMtimeMs: number;
  /** A re-read directory gained or lost a `.gitignore`, so cached listings below it may no longer hold. */
  rulesChanged: boolean;
  /** One message per entry left out because its name is not valid UTF-8 (see {@link listWorkspace}). */
  readonly warnings: string[];
}

/** The previous scan, whose records the listing reports and whose directory listings it may reuse. */
export interface ListingCache {
  readonly tree: Tree;
  /**
   * The previous tree's racy instant and its `coarseRacyInstant`: a directory whose mtime `settledMtime` does not
   * put before them is re-read, as it may have changed again in the same tick.
   */
  readonly racyFromMs: number;
  readonly coarseFromMs: number;
  /** Reuse the listings of unchanged directories (git's "untracked cache"); false re-reads every directory. */
  readonly reuse: boolean;
}

/** An empty listing to fill. */
export function emptyListing(): Listing {
  return { paths: [], fsPaths: [], known: [], dirs: new Map(), gitignores: [], reused: 0, racyMtimeMs: Number.NEGATIVE_INFINITY, rulesChanged: false, warnings: [] };
}

/**
 * The mtime recorded for a directory that holds a name left out of the tree (see {@link listWorkspace}): no stat
 * has it, so neither the quick check nor the listing cache ever trusts that directory, and every scan lists it again
 * and warns again (only such directories pay for that).
 */
export const UNTRUSTED_DIR_MTIME = -1;

/**
 * Lists the files under `subtree` that the rules keep. A directory whose lstat (mtime, inode) equals the cached
 * record's is not read: its entries can only have changed through a create, delete or rename in it, each of which
 * changes its mtime, so the cached children are its listing (their contents are still checked by the caller's
 * stat of every file). Names that NFC changes are always re-read, since the cache holds only the NFC spelling.
 * The directory is stat'ed before it is read, so a change racing with the read shows up as a changed mtime.
 * Entries come in the tree's canonical order (depth first, children by code point), as `Tree.leaves()` lists them.
 *
 * A name that is not valid UTF-8 is left out, with a warning in `into.warnings` naming its directory and its bytes
 * (escaped), unless the rules ignore the name as decoded with U+FFFD for each invalid byte. It is not kept under an
 * encoding of its bytes: workspace paths are NFC Unicode text (DESIGN.md D18) hashed as UTF-8 into every id, and
 * no text can stand for such bytes without colliding with a real name (an escape such as `%FF` is itself a valid
 * name, and lone surrogates are not Unicode text and encode as U+FFFD) or changing the paths of existing names
 * (escaping the escape character). Such a directory is recorded with {@link UNTRUSTED_DIR_MTIME}, so the warning
 * comes again at every scan, and in `validate`, until the entry is renamed or ignored.
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
    const dirStat = { mtimeMs: stat.mtimeMs, ino: stat.ino };
    into.dirs.set(dir, dirStat);
    const unchanged = usable !== undefined && previous !== undefined && previous.kind === 'dir' && previous.mtimeMs === stat.mtimeMs && previous.ino === stat.ino && fsDir === dir;
    if (unchanged && !settledMtime(stat.mtimeMs, usable.racyFromMs, usable.coarseFromMs)) into.racyMtimeMs = Math.max(into.racyMtimeMs, racyKey(stat.mtimeMs));
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
    let entries: DirEntry[];
    let raw: Dirent<Buffer>[] | undefined;
    try {
      entries = readdirSync(abs, { withFileTypes: true });
      // A name that is not valid UTF-8 comes decoded with U+FFFD: the bytes tell (a valid name may hold U+FFFD too).
      if (entries.some((e) => !isAscii(e.name) && e.name.includes('\uFFFD'))) raw = readdirSync(abs, { withFileTypes: true, encoding: 'buffer' });
    } catch (error) {
      throw listError(dir, error);
    }
    if (raw !== undefined) {
      const left = into.warnings.length;
      entries = decodedEntries(dir, raw, rules, into.warnings);
      if (into.warnings.length > left) dirStat.mtimeMs = UNTRUSTED_DIR_MTIME;
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

/** A directory entry with its name as valid UTF-8 text. */
type DirEntry = Pick<Dirent, 'name' | 'isDirectory' | 'isFile' | 'isSymbolicLink'>;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The entries of directory `dir` read with their raw names, those that are valid UTF-8 decoded; each other one is
 * left out with a warning in `warnings` (see {@link listWorkspace}), unless the rules ignore its lossy decoding.
 */
function decodedEntries(dir: string, raw: readonly Dirent<Buffer>[], rules: IgnoreRules, warnings: string[]): DirEntry[] {
  const entries: DirEntry[] = [];
  for (const entry of raw) {
    const bytes = entry.name;
    let name: string;
    try {
      name = utf8.decode(bytes);
    } catch {
      const isDir = entry.isDirectory();
      if (!isDir && !entry.isFile() && !entry.isSymbolicLink()) continue; // never listed anyway
      if (rules.ignores(dir, nfc(bytes.toString('utf8')), isDir)) continue;
      warnings.push(
        `left out '${escapeBytes(bytes)}'${isDir ? ' (a directory, with everything in it)' : ''} in '${displayPath(dir)}': its name is not valid UTF-8, ` +
          `and workspace paths are Unicode text; rename it, or add a pattern that matches it to .gitignore`,
      );
      continue;
    }
    entries.push({ name, isDirectory: () => entry.isDirectory(), isFile: () => entry.isFile(), isSymbolicLink: () => entry.isSymbolicLink() });
  }
  return entries;
}

/** Printable ASCII as it is (a backslash doubled), every other byte as `\xNN`. */
function escapeBytes(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b === 0x5c ? '\\\\' : b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  return out;
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
  return new ContextError(
    'SCAN_FAILED',
    `cannot read directory '${displayPath(dir)}': ${reason}; make it readable by this user, or add it to .gitignore to leave it out`,
    { path: dir },
  );
}
