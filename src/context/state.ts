/** One frame in a node's frame set: what listing, views and composition need without reading the frame file. */
export interface FrameEntry {
  readonly frameId: string;
  /** Workspace-wide append sequence: the logical time used for recency (never the clock). */
  readonly seq: number;
  readonly type: string;
  readonly agentId: string;
  /** The node version the frame was made for; a head whose nodeId differs from the tree's is stale. */
  readonly nodeId: string;
  /** Wall-clock append time (ms since epoch), for date-range filters only. */
  readonly at: number;
}

/**
 * Everything mutable about frames: `.merkle/state.json` plus its journal, one entry per transaction, so a frame
 * append, its head update and its basis-index entry land together or not at all. The functions below replace the
 * per-path values they change instead of mutating them (see `copyForUpdate` in `state-journal.ts`).
 */
export interface StoreState {
  readonly v: 1;
  /** Last sequence number handed out. */
  seq: number;
  /** Frame sets, append-only, by node path. */
  frames: Record<string, FrameEntry[]>;
  /** Current frame per node path and frame type. */
  heads: Record<string, Record<string, string>>;
  /** Heads explicitly marked stale (invalidate, or a dependency regenerated), by path: sorted frame types. */
  stale: Record<string, string[]>;
  /** Basis index: basis hash → frame ids made from that basis. */
  basis: Record<string, string[]>;
}

/**
 * `record[key]` when `key` is one of its own: never a member of Object.prototype (a workspace file may be named
 * `constructor`, a frame type `toString`, an agent `__proto__`).
 */
export function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Sets `record[key]` as an own property, `__proto__` too (an assignment would set the object's prototype). */
export function setOwnKey<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

/** A state with no frames. */
export function emptyState(): StoreState {
  return { v: 1, seq: 0, frames: {}, heads: {}, stale: {}, basis: {} };
}

/** Appends a frame to its node's set (unless already there), makes it the head for its type and indexes its basis. */
export function recordFrame(
  state: StoreState,
  path: string,
  entry: Omit<FrameEntry, 'seq'>,
  basisHash: string,
): boolean {
  const set = own(state.frames, path) ?? [];
  let added = false;
  if (!set.some((e) => e.frameId === entry.frameId)) {
    state.seq += 1;
    setOwnKey(state.frames, path, [...set, { ...entry, seq: state.seq }]);
    added = true;
  }
  const heads = own(state.heads, path);
  if (own(heads, entry.type) !== entry.frameId) {
    const next: Record<string, string> = { ...heads };
    setOwnKey(next, entry.type, entry.frameId);
    setOwnKey(state.heads, path, next);
  }
  const ids = own(state.basis, basisHash) ?? [];
  if (!ids.includes(entry.frameId)) setOwnKey(state.basis, basisHash, [...ids, entry.frameId]);
  clearStale(state, path, entry.type);
  return added;
}

/** Marks the head of `type` on `path` stale; false when it already was. */
export function markStale(state: StoreState, path: string, type: string): boolean {
  const types = own(state.stale, path) ?? [];
  if (types.includes(type)) return false;
  setOwnKey(state.stale, path, [...types, type].sort());
  return true;
}

/** Clears the stale mark of `type` on `path`. */
export function clearStale(state: StoreState, path: string, type: string): void {
  const types = own(state.stale, path);
  if (types === undefined) return;
  const rest = types.filter((t) => t !== type);
  if (rest.length === 0) delete state.stale[path];
  else setOwnKey(state.stale, path, rest);
}

/** The frame entry of a head, if the node has one for `type`. */
export function headEntry(state: StoreState, path: string, type: string): FrameEntry | undefined {
  const id = own(own(state.heads, path), type);
  if (id === undefined) return undefined;
  return own(state.frames, path)?.find((e) => e.frameId === id);
}

/** The ids of every frame some frame set of `state` holds. */
export function referencedFrames(state: Readonly<StoreState>): Set<string> {
  const referenced = new Set<string>();
  for (const entries of Object.values(state.frames)) for (const e of entries) referenced.add(e.frameId);
  return referenced;
}
