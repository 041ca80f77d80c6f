import type { HashBackend } from './hash.js';
import type { NodeKind, NodeRecord, ScanBasis } from './tree.js';

/**
 * The tree journal (`.merkle/tree.journal`): what rescans changed since the tree file was written, so that a scan
 * that changes a few files appends a few records instead of rewriting the whole tree (git's split index).
 *
 * Layout: magic `MRKLJRNL`, u32 version, the 32-byte checksum of the tree file it extends; then entries, each a u32
 * payload length, the BLAKE3 of the payload and the payload (UTF-8 JSON `{ upserts, removed, basis }`). A journal
 * whose checksum is not the tree file's belongs to an older tree and is ignored; a torn or corrupt entry ends the
 * journal (it can only be the last one, from an append cut short by a crash).
 */
export interface JournalEntry {
  /** Records added or replaced (directories with their children). */
  readonly upserts: readonly NodeRecord[];
  /** Paths removed, applied before the upserts. */
  readonly removed: readonly string[];
  readonly basis: ScanBasis | undefined;
}

const MAGIC = Buffer.from('MRKLJRNL', 'latin1');
const VERSION = 1;
/** Bytes before the first entry. */
export const JOURNAL_HEADER_BYTES = 8 + 4 + 32;

/** The journal header for a tree file with this checksum. */
export function journalHeader(treeChecksum: Buffer): Buffer {
  const out = Buffer.alloc(JOURNAL_HEADER_BYTES);
  MAGIC.copy(out, 0);
  out.writeUInt32BE(VERSION, 8);
  treeChecksum.copy(out, 12);
  return out;
}

/** One entry as appended to the journal. */
export function encodeJournalEntry(entry: JournalEntry, backend: HashBackend): Buffer {
  const payload = Buffer.from(JSON.stringify({ upserts: entry.upserts, removed: entry.removed, basis: entry.basis ?? null }), 'utf8');
  const out = Buffer.alloc(4 + 32 + payload.length);
  out.writeUInt32BE(payload.length, 0);
  backend.digest(payload).copy(out, 4);
  payload.copy(out, 36);
  return out;
}

/**
 * The entries of a journal that extends the tree file with `treeChecksum`, and the length of its valid prefix (where
 * the next entry goes); undefined when the journal belongs to another tree file.
 */
export function decodeJournal(data: Buffer, treeChecksum: Buffer, backend: HashBackend): { entries: JournalEntry[]; validLength: number } | undefined {
  if (data.length < JOURNAL_HEADER_BYTES || !data.subarray(0, 8).equals(MAGIC) || data.readUInt32BE(8) !== VERSION) return undefined;
  if (!data.subarray(12, JOURNAL_HEADER_BYTES).equals(treeChecksum)) return undefined;
  const entries: JournalEntry[] = [];
  let o = JOURNAL_HEADER_BYTES;
  while (o + 36 <= data.length) {
    const length = data.readUInt32BE(o);
    const end = o + 36 + length;
    if (end > data.length) break;
    const payload = data.subarray(o + 36, end);
    if (!backend.digest(payload).equals(data.subarray(o + 4, o + 36))) break;
    const entry = parseEntry(payload.toString('utf8'));
    if (entry === undefined) break;
    entries.push(entry);
    o = end;
  }
  return { entries, validLength: o };
}

const KINDS: ReadonlySet<string> = new Set<NodeKind>(['file', 'dir', 'symlink']);

function parseEntry(text: string): JournalEntry | undefined {
  let value: { upserts?: unknown; removed?: unknown; basis?: unknown };
  try {
    value = JSON.parse(text) as typeof value;
  } catch {
    return undefined;
  }
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
      (raw.kind === 'dir' ? Array.isArray(raw.children) && raw.children.every((c) => typeof c === 'string') : raw.children === undefined);
    if (!ok) return undefined;
    upserts.push(raw as NodeRecord);
  }
  const basis = value.basis as Partial<ScanBasis> | null | undefined;
  if (basis !== null && (typeof basis?.rules !== 'string' || typeof basis.reusable !== 'boolean')) return undefined;
  return { upserts, removed: value.removed as string[], basis: basis === null ? undefined : (basis as ScanBasis) };
}
