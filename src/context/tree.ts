import { ContextError } from './errors.js';
import { Encoder, KIND_CODE, compareCodePoints, type HashBackend } from './hash.js';
import { baseName, parentPath } from './paths.js';

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
  readonly mtimeMs: number;
  readonly ino: number;
  /** Child paths in canonical order (directories only). */
  readonly children?: readonly string[];
}

/** A leaf (file or symlink) before directory ids are computed. */
export type LeafRecord = Omit<NodeRecord, 'children'>;

const MAGIC = Buffer.from('MRKLTREE', 'latin1');
const FORMAT = 1;
const KIND_BY_CODE: Record<number, NodeKind> = { 1: 'file', 2: 'dir', 3: 'symlink' };

/**
 * An immutable scanned workspace: every node by path, directories with their ordered children, the root id.
 * Directory NodeIDs are derived from the sorted children (see `hash.ts`), so equal trees give equal ids anywhere.
 */
export class Tree {
  private byIdCache: Map<string, NodeRecord> | undefined;
  private leafOrderCache: { leaves: NodeRecord[]; index(): Map<string, number> } | undefined;
  /** Number of files and symlinks. */
  readonly leafCount: number;

  private constructor(private readonly nodes: ReadonlyMap<string, NodeRecord>) {
    let leaves = 0;
    for (const node of nodes.values()) if (node.kind !== 'dir') leaves++;
    this.leafCount = leaves;
  }

  /**
   * Builds the tree from its leaves and directory paths, computing directory NodeIDs bottom-up. With `previous`
   * and `touched` (directories whose children or child ids may have changed), every other directory of `previous`
   * keeps its record; touched directories and their ancestors are re-hashed.
   */
  static build(leaves: Iterable<LeafRecord>, dirs: Iterable<string>, backend: HashBackend, previous?: Tree, touched?: ReadonlySet<string>): Tree {
    const childNames = new Map<string, string[]>();
    childNames.set('', []);
    for (const dir of dirs) if (!childNames.has(dir)) childNames.set(dir, []);
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
    const dirty = new Set<string>();
    for (const dir of touched ?? []) {
      for (let d: string | undefined = dir; d !== undefined && !dirty.has(d); d = parentPath(d)) dirty.add(d);
    }
    // Deepest directories first, so every child id exists before its parent's is computed.
    const order = [...childNames.keys()].sort((a, b) => depth(b) - depth(a) || compareCodePoints(a, b));
    for (const dir of order) {
      const list = childNames.get(dir)!;
      const kept = previous !== undefined && !dirty.has(dir) ? previous.get(dir) : undefined;
      if (kept !== undefined && kept.kind === 'dir') {
        nodes.set(dir, kept);
        continue;
      }
      const children = list.sort((a, b) => compareCodePoints(baseName(a), baseName(b)));
      const enc = new Encoder('merkle.node.dir.v1').str(dir).u32(children.length);
      for (const child of children) {
        const node = nodes.get(child)!;
        enc.u8(KIND_CODE[node.kind]).str(baseName(child)).id(node.nodeId);
      }
      nodes.set(dir, {
        path: dir,
        kind: 'dir',
        nodeId: enc.hash(backend),
        contentHash: '',
        size: children.length,
        mtimeMs: 0,
        ino: 0,
        children,
      });
    }
    return new Tree(nodes);
  }

  /** The root NodeID. */
  get rootId(): string {
    return this.nodes.get('')!.nodeId;
  }

  /** Number of nodes, the root included. */
  get size(): number {
    return this.nodes.size;
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
      const children = node.children;
      if (children !== undefined) for (let i = children.length - 1; i >= 0; i--) stack.push(this.nodes.get(children[i])!);
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
   * Files and symlinks in insertion order (for a tree built by a scan, the order the walk found them), and a
   * path → position index built on first use. Both are computed once per tree.
   */
  leafOrder(): { leaves: readonly NodeRecord[]; index(): ReadonlyMap<string, number> } {
    if (this.leafOrderCache === undefined) {
      const leaves: NodeRecord[] = [];
      for (const node of this.nodes.values()) if (node.kind !== 'dir') leaves.push(node);
      let index: Map<string, number> | undefined;
      this.leafOrderCache = {
        leaves,
        index: () => (index ??= new Map(leaves.map((leaf, i) => [leaf.path, i]))),
      };
    }
    return this.leafOrderCache;
  }

  /** Every record, in no particular order. */
  records(): IterableIterator<NodeRecord> {
    return this.nodes.values();
  }

  /** The binary stored form: magic, format, BLAKE3 of the body, body (see {@link Tree.decode}). */
  encode(backend: HashBackend): Buffer {
    const records = this.walk();
    let size = 12 + 32 + 4;
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
    if (data.readUInt32BE(8) !== FORMAT) corrupt(`unsupported format ${data.readUInt32BE(8)}`);
    const body = data.subarray(44);
    if (!backend.digest(body).equals(data.subarray(12, 44))) corrupt('checksum mismatch');
    const nodes = new Map<string, NodeRecord>();
    const count = body.readUInt32BE(0);
    const childLists = new Map<string, string[]>();
    let o = 4;
    for (let i = 0; i < count; i++) {
      const kind = KIND_BY_CODE[body[o]] ?? corrupt(`unknown node kind ${body[o]} at entry ${i}`);
      const len = body.readUInt32BE(o + 1);
      const path = body.toString('utf8', o + 5, o + 5 + len);
      o += 5 + len;
      const size = body.readDoubleBE(o);
      const mtimeMs = body.readDoubleBE(o + 8);
      const ino = body.readDoubleBE(o + 16);
      const contentHash = kind === 'dir' ? '' : body.toString('hex', o + 24, o + 56);
      const nodeId = body.toString('hex', o + 56, o + 88);
      o += 88;
      const children = kind === 'dir' ? [] : undefined;
      if (children !== undefined) childLists.set(path, children);
      nodes.set(path, { path, kind, nodeId, contentHash, size, mtimeMs, ino, children });
      const parent = parentPath(path);
      if (parent !== undefined) {
        const list = childLists.get(parent) ?? corrupt(`entry '${path}' precedes its directory`);
        list.push(path);
      }
    }
    if (o !== body.length || !nodes.has('')) corrupt('truncated or missing root');
    return new Tree(nodes);
  }
}

/** The NodeID of a file or symlink: its path and content hash (see `hash.ts`). */
export function leafNodeId(kind: NodeKind, path: string, contentHash: string, backend: HashBackend): string {
  return new Encoder(kind === 'symlink' ? 'merkle.node.symlink.v1' : 'merkle.node.file.v1').str(path).id(contentHash).hash(backend);
}

function corruptTree(where: string, why: string): never {
  throw new ContextError('CORRUPT_STORE', `corrupt tree file ${where}: ${why}; run 'merkle scan --force'`, { file: where });
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
