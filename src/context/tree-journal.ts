import type { HashBackend } from './hash.js';
import type { JournalCodec } from './journal.js';
import { Tree, checkBasis, type NodeKind, type NodeRecord, type ScanBasis } from './tree.js';

/**
 * One entry of `.merkle/tree.journal` (see `journal.ts`): what a rescan changed, so that a scan that changes a
 * few files appends a few records instead of rewriting the tree file.
 */
export interface TreeJournalEntry {
  /**
   * Records added or replaced. A directory's children may be left out (the store leaves them out): it then has the
   * children it had before the entry that still exist after it, and the paths under it the entry adds.
   */
  readonly upserts: readonly NodeRecord[];
  /** Paths removed, applied before the upserts. */
  readonly removed: readonly string[];
  readonly basis: ScanBasis | null;
}

/** The tree file (`.merkle/tree`) and its journal. */
export function treeCodec(backend: HashBackend): JournalCodec<Tree, TreeJournalEntry> {
  return {
    magic: 'MRKLJRNL',
    decode: (data, file) => Tree.decode(data, backend, file),
    encode: (tree) => tree.encode(backend),
    // The tree file holds the BLAKE3 of its body after the magic and format.
    checksum: (data) => data.subarray(12, 44),
    parseEntry,
    apply: (tree, entries, file) => tree.applyJournal(entries, file),
    // Every rescan that changes nothing reads the whole journal (and decodes it, where the tree file's records are
    // read in place): a 100,000-file tree's journal at an eighth of the tree file took 60 ms of CPU to read, at a
    // 64th about 8 ms. An entry for one changed file is under 1 KB (directories come without child lists), so a
    // 64th still holds some 190 of them between two rewrites of the tree file.
    compactRatio: 1 / 64,
  };
}

const KINDS: ReadonlySet<string> = new Set<NodeKind>(['file', 'dir', 'symlink']);

function parseEntry(input: unknown): TreeJournalEntry | undefined {
  const value = input as { upserts?: unknown; removed?: unknown; basis?: unknown } | null;
  if (value === null || typeof value !== 'object') return undefined;
  if (!Array.isArray(value.upserts) || !Array.isArray(value.removed) || !value.removed.every((p) => typeof p === 'string')) return undefined;
  const upserts: NodeRecord[] = [];
  for (const raw of value.upserts as Partial<NodeRecord>[]) {
    const ok =
      typeof raw.path === 'string' &&
      typeof raw.kind === 'string' &&
      KINDS.has(raw.kind) &&
      typeof raw.nodeId === 'string' &&
      typeof raw.contentHash === 'string' &&
      typeof raw.size === 'number' &&
      typeof raw.mtimeMs === 'number' &&
      typeof raw.ino === 'number' &&
      (raw.kind === 'dir' ? raw.children === undefined || (Array.isArray(raw.children) && raw.children.every((c) => typeof c === 'string')) : raw.children === undefined);
    if (!ok) return undefined;
    upserts.push(raw as NodeRecord);
  }
  const basis = value.basis === null ? null : checkBasis(value.basis);
  if (basis === undefined) return undefined;
  return { upserts, removed: value.removed as string[], basis };
}
