/** Public types of the Backpack. */

/** What the Backpack emits. The real EventStreamer (src/events) satisfies this structurally. */
export interface BackpackEvent {
  type: 'backpack.packed' | 'backpack.unpacked' | 'backpack.quarantined' | 'access.denied';
  /** Never a full value: only keys, versions, provenance and a short `valueSummary`. */
  payload: Record<string, unknown>;
  nodeId?: string;
  nodeName?: string;
  namespace?: string;
  runId?: string;
  spanId?: string;
}

/** Anything with `emit(event)`; events are emitted only when one is set. */
export interface BackpackEventSink {
  /** Takes one event; it must not throw (the EventStreamer isolates its handlers). */
  emit(event: BackpackEvent): void;
}

/** Who acts: the identity a handle is bound to (DESIGN D6). */
export interface NodeIdentity {
  nodeId: string;
  nodeName: string;
  /** The node's full namespace ('' for none: then no item rule can name it). */
  namespace: string;
}

/** A node as a flow registers it with the Backpack: its identity and access rules. */
export interface NodeRegistration extends NodeIdentity {
  /** The node's access rules (D9); undefined when it declared none. */
  permissions?: NodePermissions;
}

/** Run and span that a handle's events carry. */
export interface EventContext {
  runId?: string;
  spanId?: string;
}

/**
 * Item-level rules given at pack: D5 patterns over the full namespace of the nodes allowed to read or write the item
 * (`['agent.reviewer']`, `['agent.review.**']`), never bare node ids. A node refused by an item rule sees the key as
 * missing (DESIGN D9).
 */
export interface ItemAccessControl {
  read?: readonly string[];
  write?: readonly string[];
}

/** Options of `Backpack.pack`. */
export interface PackOptions {
  /**
   * Acting node, which must be registered (`registerNode`); without one the pack is the owner's and is attributed to
   * no node. Provenance comes from the registration: `nodeName` and `namespace`, if given, must equal it.
   */
  nodeId?: string;
  nodeName?: string;
  namespace?: string;
  tags?: readonly string[];
  accessControl?: ItemAccessControl;
}

/** Options of a pack through a handle: provenance comes from the handle. */
export interface HandlePackOptions {
  tags?: readonly string[];
  accessControl?: ItemAccessControl;
}

/** A node's access rules (DESIGN D9). Key rules are D5 patterns over keys, namespace rules over namespaces. */
export interface NodePermissions {
  /** Keys the node may read. */
  read?: readonly string[];
  /** Keys the node may write. */
  write?: readonly string[];
  /** Keys the node may neither read nor write; deny wins over every allow. */
  deny?: readonly string[];
  /** Source namespaces of items the node may read. */
  namespaceRead?: readonly string[];
  /** Namespaces the node may write as (matched against its own namespace). */
  namespaceWrite?: readonly string[];
}

/** Provenance of an item. */
export interface ItemMetadata {
  /** The node that packed it; undefined when the owner packed it. */
  sourceNodeId: string | undefined;
  sourceNodeName: string | undefined;
  sourceNamespace: string | undefined;
  /** Milliseconds since the epoch. */
  timestamp: number;
  /** 1 for the first pack of the key, +1 for each pack over it. */
  version: number;
  tags: readonly string[];
}

/** An item of the active state. */
export interface BackpackItem {
  key: string;
  value: unknown;
  metadata: ItemMetadata;
  /** Item-level access rules given at pack, if any. */
  accessControl?: ItemAccessControl;
}

/** A quarantined item: out of the active state, kept for debugging (DESIGN D10). */
export interface QuarantinedItem extends BackpackItem {
  quarantine: { reason: string; nodeId: string | undefined; timestamp: number; seq: number };
}

/** What a commit did. */
export type CommitAction = 'pack' | 'unpack' | 'delete' | 'quarantine' | 'clear';

/** One entry of the history (DESIGN D8). */
export interface BackpackCommit {
  /** Increases by one per commit. */
  seq: number;
  commitId: string;
  timestamp: number;
  /** Acting node; undefined for the owner. */
  nodeId: string | undefined;
  nodeName: string | undefined;
  namespace: string | undefined;
  action: CommitAction;
  /** The key; `'*'` for `clear`. */
  key: string;
  /** Short description of the value (`[accessed]` / `[not found]` for unpack). */
  valueSummary: string;
  /** Value after a pack (an UnavailableValue for values above maxValueBytes); undefined otherwise. */
  newValue: unknown;
  /** Value before the commit (for `clear`, an object of the cleared keys' values). */
  previousValue: unknown;
  /** Why, for `quarantine`. */
  reason?: string;
}

/** Per-key change between two states. */
export interface DiffDetail {
  before: unknown;
  after: unknown;
  /** The node that packed the later value; undefined for deletions and owner packs. */
  changedBy: string | undefined;
  /**
   * Set when the change cannot be told: a value (before, after, or both, at any depth) is an `UnavailableValue`,
   * the reference history keeps of a value above `maxValueBytes`, so the key is listed as modified because its value
   * may have changed (two references of different packs compare unequal even when their size and summary match).
   */
  unknown?: true;
}

/** Result of `diff(a, b)`: keys sorted. */
export interface BackpackDiff {
  added: string[];
  modified: string[];
  deleted: string[];
  details: Record<string, DiffDetail>;
}

/** Result of `validate(schema)`. */
export interface ValidationResult {
  success: boolean;
  /** Path like `user.emails[0]` (empty for the root). */
  errors: { path: string; message: string }[];
}

/** A recorded access denial. */
export interface AccessDenial {
  timestamp: number;
  nodeId: string;
  key: string;
  operation: 'read' | 'write';
  rule: string;
}

/** Options of `new Backpack(initialData, options)`. */
export interface BackpackOptions {
  /** Commits kept (default 10,000). */
  maxHistorySize?: number;
  /** Approximate bytes of values kept by retained commits (default 50 MB). */
  maxHistoryBytes?: number;
  /** Values above this size are kept in state but recorded in history as a reference (default 100 KB). */
  maxValueBytes?: number;
  /** Throw AccessDeniedError on denied reads instead of returning undefined (default false). */
  strictMode?: boolean;
  /** Where events go. */
  eventStreamer?: BackpackEventSink;
  /** A keyframe (full state copy) at least every this many commits (default 100). */
  keyframeInterval?: number;
  /** Record each read as an `unpack` commit (default true, as the specs say). */
  recordReads?: boolean;
}

/** Options of the owner's read methods: read as a registered node, with its permissions. */
export interface AsNodeOptions {
  /** The registered node whose permissions the read applies; omitted: the owner's view (no checks). */
  nodeId?: string;
}
