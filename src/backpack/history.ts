/**
 * The commit history (DESIGN D8): commits in seq order, a base state for everything pruned, and keyframes.
 *
 * The retained window is `base` (the state after commit `baseSeq`) followed by commits `baseSeq+1 .. headSeq`.
 * Pruning (by count or by bytes) folds the oldest commit into the base, so every state inside the window stays exact.
 * A keyframe (a copy of the state's maps; items are immutable and shared) is taken once at least
 * `max(keyframeInterval, items in state)` commits have passed since the last one: keyframes then cost O(1) amortized
 * memory per commit, and the state at any retained seq costs O(interval + items): copy the nearest keyframe at or
 * before it and replay the commits in between.
 */
import type { Actor } from './actor.js';
import { summarizeValue } from './codec.js';
import { HistoryPrunedError, InvalidCommitError } from './errors.js';
import type { BackpackCommit, CommitAction, ItemAccessControl } from './types.js';
import { copyStoredValue, setOwn, UnavailableValue, type PreparedValue } from './values.js';
import { hardenClass } from '../harden.js';

/** Commit flag: the value was above maxValueBytes; `value` is an UnavailableValue. */
export const LARGE = 1;
/** Commit flag: the value holds typed arrays, which reads copy. */
export const COPY_ON_READ = 2;
/** Commit flag (unpack): the key was found. */
export const FOUND = 4;
/** Commit flag: `previousValue` holds typed arrays, which reads copy. */
export const PREV_COPY_ON_READ = 8;

/** The tags of an item packed without any (shared, frozen). */
export const NO_TAGS: readonly string[] = Object.freeze([]);

/**
 * Everything a commit is made of, as one object of one class, so that building commits stays monomorphic (fast)
 * whatever the action. Set the fields an action uses; {@link CommitInit.reset} puts the rest back to their defaults,
 * so a ledger reuses one instance (the Commit copies what it keeps).
 */
export class CommitInit {
  seq = 0;
  lineage = '';
  timestamp = 0;
  actor: Actor | undefined = undefined;
  /** pack: the stored, frozen value (an UnavailableValue when LARGE). */
  value: unknown = undefined;
  /** pack, delete: the stored value the key had before (quarantine: derived from `detail`). */
  previousValue: unknown = undefined;
  /** pack: the item's version. */
  version = 0;
  tags: readonly string[] = NO_TAGS;
  acl: Readonly<ItemAccessControl> | undefined = undefined;
  /** Approximate bytes kept alive. */
  bytes = COMMIT_OVERHEAD_BYTES;
  /** LARGE | COPY_ON_READ | FOUND | PREV_COPY_ON_READ. */
  flags = 0;
  /** quarantine: what was moved out; clear: the items that were removed. */
  detail: QuarantineDetail | readonly Commit[] | undefined = undefined;

  constructor(
    public action: CommitAction,
    public key: string,
  ) {}

  /** Starts over for a commit of `action` on `key`: every other field back to its default. Returns this. */
  reset(action: CommitAction, key: string): this {
    this.action = action;
    this.key = key;
    this.actor = undefined;
    this.value = undefined;
    this.previousValue = undefined;
    this.version = 0;
    this.tags = NO_TAGS;
    this.acl = undefined;
    this.bytes = COMMIT_OVERHEAD_BYTES;
    this.flags = 0;
    this.detail = undefined;
    return this;
  }

  /** An init with `fields` set (for restoring commits; the live path sets fields one by one). */
  static of(fields: Partial<Omit<CommitInit, 'action' | 'key'>> & { action: CommitAction; key: string }): CommitInit {
    const { action, key, ...rest } = fields;
    return Object.assign(new CommitInit(action, key), rest);
  }
}

/** Commit timestamps are stored relative to this (integers stay exact). */
const EPOCH = Date.now();

/** What a quarantine commit moved out of the active state. */
export interface QuarantineDetail {
  item: Commit;
  reason: string;
}

/**
 * One commit. A pack commit is also the item it created: the active state maps each key to its latest pack commit,
 * so state, keyframes and history share one immutable object per write.
 */
export class Commit {
  // Fields are packed to keep a commit small (10,000 of them are retained by default): the timestamp relative to
  // EPOCH (a small integer, stored unboxed), version and flags in one number, tags and item rules in one slot
  // (rules are rare), and one slot for what came before (a value, a quarantine detail or the cleared items).
  readonly #t: number;
  readonly #versionFlags: number;
  readonly #meta: readonly string[] | { tags: readonly string[]; acl: Readonly<ItemAccessControl> };
  readonly #prior: unknown;

  readonly seq: number;
  /** Prefix of the commit id: the Backpack (lineage) that made the commit. */
  readonly lineage: string;
  readonly action: CommitAction;
  readonly key: string;
  readonly actor: Actor;
  /** pack: the stored, frozen value (an UnavailableValue when LARGE). */
  readonly value: unknown;
  /** Approximate bytes this commit keeps alive (counted against maxHistoryBytes). */
  readonly bytes: number;

  constructor(init: CommitInit) {
    this.seq = init.seq;
    this.lineage = init.lineage;
    this.action = init.action;
    this.key = init.key;
    this.actor = init.actor!;
    this.value = init.value;
    this.bytes = init.bytes;
    this.#t = init.timestamp - EPOCH;
    this.#versionFlags = init.version * 16 + init.flags;
    this.#meta = init.acl === undefined ? init.tags : { tags: init.tags, acl: init.acl };
    this.#prior = init.action === 'quarantine' || init.action === 'clear' ? init.detail : init.previousValue;
  }

  /** Milliseconds since the epoch. */
  get timestamp(): number {
    return this.#t + EPOCH;
  }

  /** pack: the item's version (0 for other actions). */
  get version(): number {
    return Math.floor(this.#versionFlags / 16);
  }

  /** LARGE | COPY_ON_READ | FOUND | PREV_COPY_ON_READ. */
  get flags(): number {
    return this.#versionFlags % 16;
  }

  /** pack: the item's tags. */
  get tags(): readonly string[] {
    const meta = this.#meta;
    return Array.isArray(meta) ? meta : (meta as { tags: readonly string[] }).tags;
  }

  /** pack: the item's own access rules. */
  get acl(): Readonly<ItemAccessControl> | undefined {
    const meta = this.#meta;
    return Array.isArray(meta) ? undefined : (meta as { acl: Readonly<ItemAccessControl> }).acl;
  }

  /** pack, delete, quarantine: the stored value the key had before. */
  get previousValue(): unknown {
    if (this.action === 'quarantine') return (this.#prior as QuarantineDetail).item.value;
    return this.action === 'clear' ? undefined : this.#prior;
  }

  /** quarantine: what was moved out; clear: the items that were removed. */
  get detail(): QuarantineDetail | readonly Commit[] | undefined {
    return this.action === 'quarantine' || this.action === 'clear' ? (this.#prior as QuarantineDetail | readonly Commit[]) : undefined;
  }

  /** `lineage-seq`. */
  get commitId(): string {
    return `${this.lineage}-${this.seq}`;
  }

  /** The quarantine detail (for quarantine commits). */
  get quarantined(): QuarantineDetail {
    return this.detail as QuarantineDetail;
  }

  /**
   * The value as a reader gets it: a value holding a Map, Set, Date or typed array copied (see copyStoredValue),
   * whatever the flags say (they may come from a file), any other one as stored.
   */
  readValue(): unknown {
    return copyStoredValue(this.key, this.value);
  }

  /** The previous value as a reader gets it (see {@link readValue}). */
  readPreviousValue(): unknown {
    return copyStoredValue(this.key, this.previousValue);
  }
}

/** Fixed per-commit overhead added to a value's size in the byte budget. */
export const COMMIT_OVERHEAD_BYTES = 160;

/**
 * Puts a prepared value (`prepareValue`: the frozen copy) into `init` for a pack of `key` (the one place a large value
 * is wrapped): `init.value` becomes the copy, or above `maxValueBytes` an UnavailableValue for history to keep
 * instead; `init.flags` gets COPY_ON_READ and/or LARGE and `init.bytes` the bytes the commit keeps alive. Returns the
 * frozen copy itself (the live state keeps it beside history while a LARGE item is active).
 */
export function storeValue(init: CommitInit, key: string, prepared: PreparedValue, maxValueBytes: number): unknown {
  init.flags |= prepared.copyOnRead ? COPY_ON_READ : 0;
  if (prepared.bytes <= maxValueBytes || prepared.value instanceof UnavailableValue) {
    init.value = prepared.value;
    init.bytes = COMMIT_OVERHEAD_BYTES + prepared.bytes;
    return prepared.value;
  }
  init.flags |= LARGE;
  const reason = `larger than maxValueBytes (${prepared.bytes} > ${maxValueBytes}); history keeps only this reference`;
  init.value = new UnavailableValue(key, prepared.bytes, summarizeValue(prepared.value), reason);
  init.bytes = COMMIT_OVERHEAD_BYTES + 200;
  return prepared.value;
}

/** The state: active items and quarantined items (each a commit). */
export interface State {
  items: Map<string, Commit>;
  quarantined: Map<string, Commit>;
}

/** Told when an item leaves or enters a state's active items (the Backpack keeps its namespace index with it). */
export interface StateListener {
  added(item: Commit): void;
  /** `item` left the active items because of commit `by` (a pack over it, a delete, a quarantine or a clear). */
  removed(item: Commit, by: Commit): void;
}

/**
 * Applies one commit to a state: the one definition of what each action does (history, restore and the live
 * Backpack all apply commits through it).
 */
export function applyCommit(state: State, commit: Commit, listener?: StateListener): void {
  switch (commit.action) {
    case 'pack': {
      if (listener !== undefined) {
        const prev = state.items.get(commit.key);
        if (prev !== undefined) listener.removed(prev, commit);
        listener.added(commit);
      }
      state.items.set(commit.key, commit);
      break;
    }
    case 'delete':
    case 'quarantine': {
      const item = state.items.get(commit.key);
      if (item) {
        state.items.delete(commit.key);
        listener?.removed(item, commit);
      }
      if (commit.action === 'quarantine') state.quarantined.set(commit.key, commit);
      break;
    }
    case 'clear':
      if (listener) for (const item of state.items.values()) listener.removed(item, commit);
      state.items.clear();
      break;
    case 'unpack':
      break;
  }
}

function copyState(state: State): State {
  return { items: new Map(state.items), quarantined: new Map(state.quarantined) };
}

const NO_COMMITS: readonly Commit[] = Object.freeze([]);

/** A state kept as arrays of commits: far smaller than two Maps, and as fast to turn back into Maps. */
interface Keyframe {
  seq: number;
  items: readonly Commit[];
  quarantined: readonly Commit[];
}

function toKeyframe(seq: number, state: State): Keyframe {
  return {
    seq,
    items: [...state.items.values()],
    quarantined: state.quarantined.size === 0 ? NO_COMMITS : [...state.quarantined.values()],
  };
}

function fromKeyframe(kf: Keyframe): State {
  const items = new Map<string, Commit>();
  for (const c of kf.items) items.set(c.key, c);
  const quarantined = new Map<string, Commit>();
  for (const c of kf.quarantined) quarantined.set(c.key, c);
  return { items, quarantined };
}

/** Retention limits. */
export interface HistoryLimits {
  maxHistorySize: number;
  maxHistoryBytes: number;
  keyframeInterval: number;
}

/** Where a retained window starts. */
export interface HistoryBase {
  state: State;
  seq: number;
  /** Timestamp of commit `seq` (-Infinity when nothing precedes the window). */
  timestamp: number;
  /** Nodes that acted in commits before the window. */
  prunedNodes: Iterable<string>;
  /** Lineages whose commit ids this history may have held. */
  lineages: Iterable<string>;
}

/** The commit log with its base state, keyframes and retention. */
export class History {
  #commits: Commit[] = [];
  #start = 0;
  #bytes = 0;
  #base: State;
  #baseSeq: number;
  #baseTimestamp: number;
  #keyframes: Keyframe[] = [];
  #lastKeyframeSeq: number;
  #lastTimestamp: number;
  readonly #prunedNodes: Set<string>;
  readonly #lineages: Set<string>;

  constructor(
    readonly limits: HistoryLimits,
    base: HistoryBase,
  ) {
    this.#base = base.state;
    this.#baseSeq = base.seq;
    this.#baseTimestamp = base.timestamp;
    this.#lastKeyframeSeq = base.seq;
    this.#lastTimestamp = base.timestamp;
    this.#prunedNodes = new Set(base.prunedNodes);
    this.#lineages = new Set(base.lineages);
  }

  /** Seq of the latest commit (the base seq when the window is empty). */
  get headSeq(): number {
    return this.#baseSeq + this.#commits.length - this.#start;
  }

  /** Seq of the state the window starts from. */
  get baseSeq(): number {
    return this.#baseSeq;
  }

  /** Timestamp of commit `baseSeq`. */
  get baseTimestamp(): number {
    return this.#baseTimestamp;
  }

  /** Commits in the window. */
  get length(): number {
    return this.#commits.length - this.#start;
  }

  /** Approximate bytes held by retained commits. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The base state (not a copy; do not mutate). */
  get base(): State {
    return this.#base;
  }

  /** Nodes that acted before the window. */
  get prunedNodes(): ReadonlySet<string> {
    return this.#prunedNodes;
  }

  /** Lineages known to this history. */
  get lineages(): ReadonlySet<string> {
    return this.#lineages;
  }

  /** A timestamp for the next commit: now, but never earlier than the previous commit's (so history stays sorted). */
  now(): number {
    const t = Date.now();
    return t > this.#lastTimestamp ? t : this.#lastTimestamp;
  }

  /** Adds `lineage` to the lineages whose commit ids this history recognises. */
  addLineage(lineage: string): void {
    this.#lineages.add(lineage);
  }

  /** Appends a commit (seq must be headSeq + 1) that has already been applied to `state`, then keyframes and prunes. */
  append(commit: Commit, state: State): void {
    this.#commits.push(commit);
    this.#bytes += commit.bytes;
    this.#lastTimestamp = commit.timestamp;
    const since = commit.seq - this.#lastKeyframeSeq;
    if (since >= this.limits.keyframeInterval && since >= state.items.size + state.quarantined.size) {
      this.#keyframes.push(toKeyframe(commit.seq, state));
      this.#lastKeyframeSeq = commit.seq;
    }
    const { maxHistorySize, maxHistoryBytes } = this.limits;
    while (this.length > 0 && (this.length > maxHistorySize || this.#bytes > maxHistoryBytes)) this.#pruneOldest();
  }

  #pruneOldest(): void {
    const oldest = this.#commits[this.#start]!;
    this.#commits[this.#start] = undefined as unknown as Commit;
    this.#start++;
    applyCommit(this.#base, oldest);
    this.#baseSeq = oldest.seq;
    this.#baseTimestamp = oldest.timestamp;
    this.#bytes -= oldest.bytes;
    if (oldest.actor.nodeId !== undefined) this.#prunedNodes.add(oldest.actor.nodeId);
    while (this.#keyframes.length > 0 && this.#keyframes[0]!.seq <= this.#baseSeq) this.#keyframes.shift();
    if (this.#start >= 1024 && this.#start * 2 >= this.#commits.length) {
      this.#commits = this.#commits.slice(this.#start);
      this.#start = 0;
    }
  }

  /** The commit with `seq` (must be inside the window). */
  at(seq: number): Commit {
    return this.#commits[this.#start + seq - this.#baseSeq - 1]!;
  }

  /** Retained commits with seq > `sinceSeq`, oldest first. */
  commitsSince(sinceSeq: number): Commit[] {
    const from = Math.max(sinceSeq, this.#baseSeq);
    return this.#commits.slice(this.#start + from - this.#baseSeq);
  }

  /** A fresh copy of the state after commit `seq` (baseSeq <= seq <= headSeq). */
  stateAt(seq: number): State {
    if (seq < this.#baseSeq) {
      throw new HistoryPrunedError(`The state at seq ${seq}`, `the oldest retained state is seq ${this.#baseSeq}`);
    }
    let from: Keyframe | undefined;
    let lo = 0;
    let hi = this.#keyframes.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.#keyframes[mid]!.seq <= seq) {
        from = this.#keyframes[mid]!;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const state = from ? fromKeyframe(from) : copyState(this.#base);
    const fromSeq = from ? from.seq : this.#baseSeq;
    for (let s = fromSeq + 1; s <= seq; s++) applyCommit(state, this.at(s));
    return state;
  }

  /** Seq of the state after every commit with timestamp <= `timestamp`. */
  seqAtTimestamp(timestamp: number): number {
    let lo = this.#start;
    let hi = this.#commits.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.#commits[mid]!.timestamp <= timestamp) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found >= 0) return this.#commits[found]!.seq;
    if (timestamp >= this.#baseTimestamp) return this.#baseSeq;
    throw new HistoryPrunedError(
      `The state at timestamp ${timestamp} (${new Date(timestamp).toISOString()})`,
      `the oldest retained state is at ${Number.isFinite(this.#baseTimestamp) ? new Date(this.#baseTimestamp).toISOString() : 'the start'}, seq ${this.#baseSeq}`,
    );
  }

  /** Seq of the commit `commitId`. */
  seqOfCommit(commitId: string): number {
    const dash = typeof commitId === 'string' ? commitId.lastIndexOf('-') : -1;
    const seq = dash > 0 ? Number(commitId.slice(dash + 1)) : Number.NaN;
    const lineage = dash > 0 ? commitId.slice(0, dash) : '';
    if (Number.isSafeInteger(seq) && seq > this.#baseSeq && seq <= this.headSeq && this.at(seq).lineage === lineage) return seq;
    if (Number.isSafeInteger(seq) && seq <= this.#baseSeq && this.#lineages.has(lineage)) {
      throw new HistoryPrunedError(`Commit '${commitId}'`, `the oldest retained commit is seq ${this.#baseSeq + 1}`);
    }
    throw new InvalidCommitError(
      `Commit '${String(commitId)}' is not in this Backpack's history (retained seqs ${this.#baseSeq + 1}..${this.headSeq}); take ids from getHistory()`,
    );
  }

  /** Seq of the state just before the first commit of the node `isNode` accepts (its id is `nodeId`). */
  seqBeforeNode(nodeId: string, isNode: (actor: Actor) => boolean): number {
    if (this.#prunedNodes.has(nodeId)) {
      throw new HistoryPrunedError(`The first commit of node '${nodeId}'`, `the oldest retained commit is seq ${this.#baseSeq + 1}`);
    }
    for (let i = this.#start; i < this.#commits.length; i++) {
      if (isNode(this.#commits[i]!.actor)) return this.#commits[i]!.seq - 1;
    }
    throw new InvalidCommitError(`No commit by node '${nodeId}' in this Backpack's history; the node has not packed or read anything`, nodeId);
  }
}

/** The public form of a commit. */
export function toPublicCommit(c: Commit): BackpackCommit {
  let valueSummary: string;
  let newValue: unknown;
  let previousValue = c.readPreviousValue();
  let reason: string | undefined;
  switch (c.action) {
    case 'pack':
      newValue = c.readValue();
      valueSummary = summarizeValue(c.value);
      break;
    case 'unpack':
      valueSummary = c.flags & FOUND ? '[accessed]' : '[not found]';
      break;
    case 'delete':
      valueSummary = '[deleted]';
      break;
    case 'quarantine':
      reason = c.quarantined.reason;
      previousValue = c.quarantined.item.readValue();
      valueSummary = `[quarantined] ${reason}`;
      break;
    case 'clear': {
      const cleared = c.detail as readonly Commit[];
      const values: Record<string, unknown> = {};
      for (const item of cleared) {
        setOwn(values, item.key, item.readValue());
      }
      previousValue = values;
      valueSummary = `[cleared ${cleared.length} item${cleared.length === 1 ? '' : 's'}]`;
      break;
    }
  }
  const commit: BackpackCommit = {
    seq: c.seq,
    commitId: c.commitId,
    timestamp: c.timestamp,
    nodeId: c.actor.nodeId,
    nodeName: c.actor.nodeName,
    namespace: c.actor.namespace,
    action: c.action,
    key: c.key,
    valueSummary,
    newValue,
    previousValue,
  };
  if (reason !== undefined) commit.reason = reason;
  return Object.freeze(commit);
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(Commit);
hardenClass(CommitInit);
hardenClass(History);
