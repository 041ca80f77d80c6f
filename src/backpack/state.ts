/**
 * The state-only JSON form of a Backpack: its active items and quarantined items with their provenance, without
 * the commit history. Durable runs checkpoint this form (history grows with the work; the state does not), and
 * `Backpack.importState` puts it back. Its schema, export and import live here.
 */
import { z } from 'zod';
import { checkItemAccessControl, formatPath, ItemAccessControlSchema } from './access.js';
import { provenanceActors } from './actor.js';
import { decodeValue, encodeValue } from './codec.js';
import { BackpackError } from './errors.js';
import { Commit, CommitInit, LARGE, storeValue, type QuarantineDetail, type State } from './history.js';
import { prepareValue, setOwn } from './values.js';

const ItemMetaSchema = z
  .object({
    sourceNodeId: z.string().optional(),
    sourceNodeName: z.string().optional(),
    sourceNamespace: z.string().optional(),
    timestamp: z.number(),
    version: z.number().int().min(1),
    tags: z.array(z.string()),
  })
  .strict();

/** One item of the state form: its value through the value codec, its metadata and item-level rules. */
export const StateItemSchema = z
  .object({
    value: z.json(),
    metadata: ItemMetaSchema,
    accessControl: ItemAccessControlSchema.optional(),
  })
  .strict();

/** A quarantined item of the state form. */
export const QuarantinedStateItemSchema = StateItemSchema.extend({
  quarantine: z.object({ reason: z.string(), nodeId: z.string().optional(), timestamp: z.number() }).strict(),
}).strict();

/** zod schema of {@link BackpackState}. */
export const BackpackStateSchema = z
  .object({
    version: z.literal(1),
    items: z.record(z.string(), StateItemSchema),
    quarantined: z.record(z.string(), QuarantinedStateItemSchema),
  })
  .strict();

/** The state-only JSON form of a Backpack. Keys of `items` are in first-pack order. */
export type BackpackState = z.infer<typeof BackpackStateSchema>;
/** One item of {@link BackpackState}. */
export type StateItem = z.infer<typeof StateItemSchema>;
/** One quarantined item of {@link BackpackState}. */
export type QuarantinedStateItem = z.infer<typeof QuarantinedStateItemSchema>;

/** What the state form is exported from: the active and quarantined items, and how to read an item's value. */
export interface StateSource {
  items: ReadonlyMap<string, Commit>;
  quarantined: ReadonlyMap<string, Commit>;
  valueOf(item: Commit): unknown;
  /** When set, only items it accepts are exported (a node's view). */
  readable?: (item: Commit) => boolean;
}

/**
 * The state form with values as stored (frozen, shared with the Backpack: never modify them) instead of encoded:
 * what a tracker compares by identity (see `Backpack.exportStoredState`).
 */
export interface StoredState {
  items: Record<string, StoredItem<StateItem>>;
  quarantined: Record<string, StoredItem<QuarantinedStateItem>>;
}

/** An item of {@link StoredState}: a state item whose `value` is the stored value. */
export type StoredItem<T extends StateItem> = Omit<T, 'value'> & { value: unknown };

function stateItem<V>(source: StateSource, item: Commit, encode: (value: unknown) => V): Omit<StateItem, 'value'> & { value: V } {
  const metadata: StateItem['metadata'] = { timestamp: item.timestamp, version: item.version, tags: [...item.tags] };
  if (item.actor.nodeId !== undefined) metadata.sourceNodeId = item.actor.nodeId;
  if (item.actor.nodeName !== undefined) metadata.sourceNodeName = item.actor.nodeName;
  if (item.actor.namespace !== undefined) metadata.sourceNamespace = item.actor.namespace;
  const out: Omit<StateItem, 'value'> & { value: V } = { value: encode(source.valueOf(item)), metadata };
  if (item.acl) out.accessControl = JSON.parse(JSON.stringify(item.acl)) as StateItem['accessControl'];
  return out;
}

/** The state form of `source`; with `keys`, only those keys. */
export function exportState(source: StateSource, keys?: Iterable<string>): BackpackState {
  return exportWith(source, keys, encodeValue) as BackpackState;
}

/** {@link exportState} with the values as stored (see {@link StoredState}). */
export function exportStoredState(source: StateSource, keys?: Iterable<string>): StoredState {
  return exportWith(source, keys, (value) => value);
}

function exportWith(source: StateSource, keys: Iterable<string> | undefined, encode: (value: unknown) => unknown): StoredState & { version: 1 } {
  const items: StoredState['items'] = {};
  const quarantined: StoredState['quarantined'] = {};
  const ok = source.readable ?? (() => true);
  const pickItem = (key: string): void => {
    const item = source.items.get(key);
    if (item && ok(item)) setOwn(items, key, stateItem(source, item, encode));
  };
  const pickQuarantined = (key: string): void => {
    const q = source.quarantined.get(key);
    if (q && ok(q.quarantined.item)) {
      const detail: QuarantinedStateItem['quarantine'] = { reason: q.quarantined.reason, timestamp: q.timestamp };
      if (q.actor.nodeId !== undefined) detail.nodeId = q.actor.nodeId;
      setOwn(quarantined, key, { ...stateItem(source, q.quarantined.item, encode), quarantine: detail });
    }
  };
  const chosen = keys === undefined ? undefined : new Set(keys);
  for (const key of chosen ?? source.items.keys()) pickItem(key);
  // Quarantined items are listed by key (sorted as strings): the order they were quarantined in is not part of the
  // state, so a state read back from a run's record (keyframe and deltas) lists them as the live one does.
  const held = chosen === undefined ? [...source.quarantined.keys()] : [...chosen].filter((key) => source.quarantined.has(key));
  for (const key of held.sort()) pickQuarantined(key);
  return { version: 1, items, quarantined };
}

/** A state form turned into a history base. */
export interface ImportedState {
  base: State;
  seq: number;
  timestamp: number;
  /** Real values of items above maxValueBytes. */
  large: Map<Commit, unknown>;
}

/**
 * Validates a state form and turns it into commits of `lineage`, keeping each item's provenance, version and
 * timestamp, numbered after `afterSeq`. Throws BackpackError naming the JSON path of the first problem.
 */
export function importState(state: unknown, lineage: string, maxValueBytes: number, afterSeq = 0): ImportedState {
  const parsed = BackpackStateSchema.safeParse(state);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BackpackError(`Invalid Backpack state at '${formatPath(issue.path) || '(root)'}': ${issue.message}`);
  }
  const large = new Map<Commit, unknown>();
  let seq = afterSeq;
  let timestamp = Number.NEGATIVE_INFINITY;
  const actorOf = provenanceActors();
  const toCommit = (key: string, item: StateItem): Commit => {
    const m = item.metadata;
    timestamp = Math.max(timestamp, m.timestamp);
    const acl = item.accessControl ? checkItemAccessControl(key, item.accessControl) : undefined;
    const init = CommitInit.of({ seq: ++seq, lineage, timestamp: m.timestamp, action: 'pack', key, actor: actorOf(m.sourceNodeId, m.sourceNodeName, m.sourceNamespace), version: m.version, tags: Object.freeze([...m.tags]), acl });
    const real = storeValue(init, key, prepareValue(key, decodeValue(item.value)), maxValueBytes);
    const commit = new Commit(init);
    if (commit.flags & LARGE) large.set(commit, real);
    return commit;
  };
  const base: State = { items: new Map(), quarantined: new Map() };
  // The validated input itself, not zod's copy: zod's record output drops a key named __proto__ (the schema has no
  // defaults or transforms, so the two are otherwise equal).
  const valid = state as BackpackState;
  for (const [key, item] of Object.entries(valid.items)) base.items.set(key, toCommit(key, item));
  for (const [key, q] of Object.entries(valid.quarantined)) {
    const item = toCommit(key, q);
    const detail: QuarantineDetail = { item, reason: q.quarantine.reason };
    const actor = actorOf(q.quarantine.nodeId, undefined, undefined);
    base.quarantined.set(key, new Commit(CommitInit.of({ seq: ++seq, lineage, timestamp: q.quarantine.timestamp, action: 'quarantine', key, actor, detail })));
    timestamp = Math.max(timestamp, q.quarantine.timestamp);
  }
  return { base, seq, timestamp, large };
}
