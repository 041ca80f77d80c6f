import { closeSync, constants, lstatSync, readSync } from 'node:fs';
import { openRegularFile, type NotRegularFile, type OpenedFile } from '../fs/index.js';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { ContextError } from './errors.js';
import { joinPath, parentPath } from './paths.js';

/** The store folder: never part of the tree, whatever the rules say. */
export const STORE_DIR = '.merkle';

/** Names ignored by default wherever they appear (whole path components, never substrings). */
export const DEFAULT_IGNORED_NAMES: readonly string[] = ['.git', '.hg', '.svn', 'node_modules', '.DS_Store'];

/**
 * Files that hold secrets, ignored by default (`.gitignore` syntax; a name alone matches at any depth): dotenv and
 * direnv files, private keys, credential stores (netrc, npm, PostgreSQL, git, AWS, Docker).
 * A frame can still quote such a file's text; frames are redacted before they are stored.
 */
export const DEFAULT_SECRET_FILE_PATTERNS: readonly string[] = [
  '.env',
  '.env.*',
  '*.pem',
  '*.key',
  '*.p12',
  '*.pfx',
  'id_rsa',
  'id_dsa',
  'id_ecdsa',
  'id_ed25519',
  '.netrc',
  '.npmrc',
  '.pgpass',
  '.envrc',
  '.git-credentials',
  '**/.aws/credentials',
  '**/.docker/config.json',
];

/** The largest `.gitignore` read (1 MiB): a larger one fails the scan with an error naming it (see {@link IgnoreRules}). */
export const MAX_GITIGNORE_BYTES = 1024 * 1024;

/** Options for {@link IgnoreRules}. */
export interface IgnoreOptions {
  /** Extra `.gitignore`-syntax patterns, relative to the workspace root. */
  readonly patterns?: readonly string[];
  /** Apply {@link DEFAULT_IGNORED_NAMES} and {@link DEFAULT_SECRET_FILE_PATTERNS} (default true). `.merkle/` is ignored regardless. */
  readonly defaults?: boolean;
}

/**
 * Decides which workspace paths are part of the tree: `.gitignore` files at any depth (with git's semantics:
 * patterns are relative to the directory holding the file, deeper files override shallower ones, negation works),
 * extra patterns, and default names. Matching is by whole path components, never by substring.
 *
 * Only a `.gitignore` that is a regular file is read. One that is a symbolic link is not followed, as git does not
 * since 2.32 (a link could apply the rules of a file outside the workspace, or read a device without end): it gives
 * no rules, and is a file of the tree like any other link. One that is a directory, FIFO, socket or device gives no
 * rules either, and is never opened in a way that could block. A `.gitignore` larger than {@link MAX_GITIGNORE_BYTES}
 * is a SCAN_FAILED error naming it and the limit: skipping its rules could put files it excludes (secrets, say)
 * into the tree.
 */
export class IgnoreRules {
  private readonly names: Set<string>;
  /** Matcher per directory path; null when that directory has no rules. */
  private readonly matchers = new Map<string, Ignore | null>();
  private readonly chains = new Map<string, readonly { prefix: string; matcher: Ignore }[]>();
  /** Directories whose `.gitignore` was read. */
  private readonly loaded: string[] = [];
  /**
   * Identifies the rules given as options (extra patterns, defaults): a cached listing is only valid under the
   * same key. `.gitignore` contents are not part of it; they are files of the tree, checked like any other.
   */
  readonly key: string;

  constructor(
    private readonly workspaceRoot: string,
    options: IgnoreOptions = {},
  ) {
    this.names = new Set(options.defaults === false ? [STORE_DIR] : [STORE_DIR, ...DEFAULT_IGNORED_NAMES]);
    const defaults = options.defaults !== false;
    this.key = JSON.stringify({ defaults, secretFiles: defaults ? DEFAULT_SECRET_FILE_PATTERNS : [], patterns: options.patterns ?? [] });
    const root = this.loadGitignore('');
    // The secret-file defaults come first, so that the workspace's own rules (e.g. `!.env.example`) override them.
    const secretFiles = defaults ? DEFAULT_SECRET_FILE_PATTERNS : [];
    const extra = options.patterns ?? [];
    if (secretFiles.length + extra.length > 0) this.matchers.set('', ignore().add([...secretFiles]).add(root ?? []).add([...extra]));
    else this.matchers.set('', root);
  }

  /** True when the entry `name` inside directory `dir` (workspace paths) is excluded from the tree. */
  ignores(dir: string, name: string, isDir: boolean): boolean {
    if (this.names.has(name)) return true;
    const chain = this.chainFor(dir);
    if (chain.length === 0) return false;
    const path = joinPath(dir, name);
    let ignored = false;
    // Shallow to deep, so that a deeper .gitignore overrides a shallower one (negations included).
    for (const { prefix, matcher } of chain) {
      const sub = prefix === '' ? path : path.slice(prefix.length + 1);
      const result = matcher.test(isDir ? `${sub}/` : sub);
      if (result.ignored) ignored = true;
      else if (result.unignored) ignored = false;
    }
    return ignored;
  }

  /** The directories whose `.gitignore` these rules have read so far. */
  gitignoreDirs(): readonly string[] {
    return this.loaded;
  }

  /** The matchers that apply inside `dir`: its own and its ancestors', root first. */
  private chainFor(dir: string): readonly { prefix: string; matcher: Ignore }[] {
    let chain = this.chains.get(dir);
    if (chain === undefined) {
      const parent = dir === '' ? [] : this.chainFor(parentPath(dir) ?? '');
      const own = this.matcherFor(dir);
      chain = own === null ? parent : [...parent, { prefix: dir, matcher: own }];
      this.chains.set(dir, chain);
    }
    return chain;
  }

  private matcherFor(dir: string): Ignore | null {
    let matcher = this.matchers.get(dir);
    if (matcher === undefined) {
      matcher = this.loadGitignore(dir);
      this.matchers.set(dir, matcher);
    }
    return matcher;
  }

  /** The rules of `dir`'s `.gitignore`, or null when it has none (see the class comment for what is read). */
  private loadGitignore(dir: string): Ignore | null {
    const text = readGitignore(join(this.workspaceRoot, dir, '.gitignore'), joinPath(dir, '.gitignore'));
    if (text === undefined) return null;
    this.loaded.push(dir);
    return ignore().add(text);
  }
}

/**
 * The text of the `.gitignore` at `file` (`path` in the workspace) when it is a regular file; undefined when it is
 * missing, unreadable or anything else. Throws SCAN_FAILED when it is larger than {@link MAX_GITIGNORE_BYTES}.
 */
function readGitignore(file: string, path: string): string | undefined {
  let opened: OpenedFile | NotRegularFile;
  try {
    // Most directories have none: one lstat instead of a failed open and its exception.
    if (lstatSync(file, { throwIfNoEntry: false })?.isFile() !== true) return undefined;
    // Replaced since by a link or a FIFO: refused without following or blocking (see openRegularFile).
    opened = openRegularFile(file, constants.O_RDONLY);
  } catch {
    return undefined; // unreadable: no rules from it
  }
  if ('notRegular' in opened) return undefined;
  const { fd, stat } = opened;
  try {
    // One byte past the limit tells a file that grew past it since the fstat.
    const data = Buffer.allocUnsafe(Math.min(stat.size, MAX_GITIGNORE_BYTES) + 1);
    let done = 0;
    while (done < data.length) {
      const n = readSync(fd, data, done, data.length - done, done);
      if (n === 0) break;
      done += n;
    }
    if (done > MAX_GITIGNORE_BYTES) {
      throw new ContextError(
        'SCAN_FAILED',
        `'${path}' has ${Math.max(stat.size, done)} bytes, over the ${MAX_GITIGNORE_BYTES}-byte limit for a .gitignore; shorten it (it is not skipped: its rules decide what enters the tree)`,
        { path, limit: MAX_GITIGNORE_BYTES },
      );
    }
    return data.toString('utf8', 0, done);
  } finally {
    closeSync(fd);
  }
}
