/**
 * `Backpack.toJSON` / `Backpack.fromJSON`: a plain, versioned JSON form of everything a Backpack holds. The active
 * state is not written separately: it is the base state plus the retained commits, replayed on restore, so the
 * restored Backpack shares one object per item between state and history exactly like the original.
 */
import { z } from 'zod';
import { formatPath, ItemAccessControlSchema, NodePermissionsSchema } from './access.js';
import { provenanceActors, type Actor } from './actor.js';
import { decodeValue, encodeValue } from './codec.js';
import { BackpackError } from './errors.js';
import { applyCommit, COPY_ON_READ, Commit, CommitInit, FOUND, LARGE, PREV_COPY_ON_READ, type History, type QuarantineDetail, type State } from './history.js';
import type { AccessDenial, ItemAccessControl, NodePermissions, NodeRegistration } from './types.js';
import { prepareValue } from './values.js';

const FLAG_MASK = LARGE | COPY_ON_READ | FOUND | PREV_COPY_ON_READ;

const int = z.number().int();
const CommitJSONSchema = z
  .object({
    seq: int.min(1),
    lineage: z.string().min(1),
    timestamp: int,
    action: z.enum(['pack', 'unpack', 'delete', 'quarantine', 'clear']),
    key: z.string().min(1),
    nodeId: z.string().min(1).optional(),
    nodeName: z.string().optional(),
    namespace: z.string().optional(),
    value: z.unknown().optional(),
    version: int.min(0),
    tags: z.array(z.string()).optional(),
    accessControl: ItemAccessControlSchema.optional(),
    bytes: int.min(0),
    flags: int.min(0).max(FLAG_MASK),
    reason: z.string().optional(),
  })
  .strict();

type CommitJSON = z.infer<typeof CommitJSONSchema>;

const QuarantinedJSONSchema = CommitJSONSchema.extend({ item: CommitJSONSchema }).strict();

const NodeJSONSchema = z
  .object({
    nodeId: z.string().min(1),
    nodeName: z.string(),
    namespace: z.string(),
    permissions: NodePermissionsSchema.optional(),
    /** Index (in `nodes`) of the node this one runs inside. */
    parent: int.min(0).optional(),
  })
  .strict();

/**
 * zod schema of the JSON form (version 2: registered nodes as `nodes`; version 1's `permissions` map, keyed by node
 * id, is still read and becomes nodes without a namespace).
 */
export const BackpackJSONSchema = z
  .object({
    version: z.union([z.literal(1), z.literal(2)]),
    lineage: z.string().min(1),
    options: z
      .object({
        maxHistorySize: int.min(0),
        maxHistoryBytes: int.min(0),
        maxValueBytes: int.min(1),
        strictMode: z.boolean(),
        keyframeInterval: int.min(1),
        recordReads: z.boolean(),
      })
      .strict(),
    permissions: z.record(z.string().min(1), NodePermissionsSchema).optional(),
    nodes: z.array(NodeJSONSchema).optional(),
    accessDenials: z.array(
      z
        .object({
          timestamp: z.number(),
          nodeId: z.string(),
          key: z.string(),
          operation: z.enum(['read', 'write']),
          rule: z.string(),
        })
        .strict(),
    ),
    history: z
      .object({
        lineages: z.array(z.string().min(1)),
        prunedNodeIds: z.array(z.string()),
        baseSeq: int.min(0),
        baseTimestamp: int.nullable(),
        base: z.object({ items: z.array(CommitJSONSchema), quarantined: z.array(QuarantinedJSONSchema) }).strict(),
        commits: z.array(CommitJSONSchema),
      })
      .strict(),
    largeValues: z.array(z.object({ seq: int.min(1), value: z.unknown() }).strict()),
  })
  .strict();

/** The JSON form of a Backpack. */
export type BackpackJSON = z.infer<typeof BackpackJSONSchema>;

/** What `serializeBackpack` reads from a Backpack. */
export interface SerializableParts {
  lineage: string;
  options: BackpackJSON['options'];
  history: History;
  large: ReadonlyMap<Commit, unknown>;
  nodes: Iterable<Actor>;
  denials: readonly AccessDenial[];
}

function commitToJSON(c: Commit): CommitJSON {
  const out: CommitJSON = {
    seq: c.seq,
    lineage: c.lineage,
    timestamp: c.timestamp,
    action: c.action,
    key: c.key,
    version: c.version,
    bytes: c.bytes,
    flags: c.flags,
  };
  if (c.actor.nodeId !== undefined) out.nodeId = c.actor.nodeId;
  if (c.actor.nodeName !== undefined) out.nodeName = c.actor.nodeName;
  if (c.actor.namespace !== undefined) out.namespace = c.actor.namespace;
  if (c.action === 'pack') {
    out.value = encodeValue(c.value);
    if (c.tags.length > 0) out.tags = [...c.tags];
    if (c.acl) out.accessControl = JSON.parse(JSON.stringify(c.acl)) as ItemAccessControl;
  }
  if (c.action === 'quarantine') out.reason = c.quarantined.reason;
  return out;
}

/** The JSON form of a Backpack's parts. */
export function serializeBackpack(parts: SerializableParts): BackpackJSON {
  const h = parts.history;
  const actors = [...parts.nodes];
  const nodes = actors.map((a) => {
    const node: z.infer<typeof NodeJSONSchema> = { nodeId: a.nodeId!, nodeName: a.nodeName ?? a.nodeId!, namespace: a.namespace ?? '' };
    if (a.permissions) node.permissions = JSON.parse(JSON.stringify(a.permissions)) as NodePermissions;
    if (a.parent) node.parent = actors.indexOf(a.parent);
    return node;
  });
  return {
    version: 2,
    lineage: parts.lineage,
    options: { ...parts.options },
    nodes,
    accessDenials: parts.denials.map((d) => ({ ...d })),
    history: {
      lineages: [...h.lineages],
      prunedNodeIds: [...h.prunedNodes],
      baseSeq: h.baseSeq,
      baseTimestamp: Number.isFinite(h.baseTimestamp) ? h.baseTimestamp : null,
      base: {
        items: [...h.base.items.values()].map(commitToJSON),
        quarantined: [...h.base.quarantined.values()].map((q) => ({ ...commitToJSON(q), item: commitToJSON(q.quarantined.item) })),
      },
      commits: h.commitsSince(0).map(commitToJSON),
    },
    largeValues: [...parts.large].map(([c, value]) => ({ seq: c.seq, value: encodeValue(value) })),
  };
}

/** A parsed JSON form, ready to be turned into a Backpack. */
export interface RestoredParts {
  lineage: string;
  options: BackpackJSON['options'];
  /** Registered nodes, parents before children. */
  nodes: { registration: NodeRegistration; parent: number | undefined }[];
  denials: AccessDenial[];
  lineages: string[];
  prunedNodes: string[];
  baseSeq: number;
  baseTimestamp: number;
  base: State;
  commits: Commit[];
  large: Map<Commit, unknown>;
}

function fail(path: string, message: string): never {
  throw new BackpackError(`Invalid Backpack JSON at '${path || '(root)'}': ${message}`);
}

class Restorer {
  readonly #actorOf = provenanceActors();
  readonly bySeq = new Map<number, Commit>();

  actor(j: CommitJSON): Actor {
    return this.#actorOf(j.nodeId, j.nodeName, j.namespace);
  }

  decode(json: unknown, path: string): unknown {
    try {
      return decodeValue(json);
    } catch (e) {
      return fail(path, (e as Error).message);
    }
  }

  commit(j: CommitJSON, path: string, state: State | undefined, detail?: QuarantineDetail): Commit {
    if (this.bySeq.has(j.seq)) fail(`${path}.seq`, `seq ${j.seq} appears twice`);
    const prev = state?.items.get(j.key);
    let value: unknown;
    let tags: readonly string[] = [];
    let acl: Readonly<ItemAccessControl> | undefined;
    if (j.action === 'pack') {
      if (!('value' in j)) fail(`${path}.value`, 'a pack commit needs a value');
      value = prepareValue(j.key, this.decode(j.value, `${path}.value`)).value;
      if (j.flags & LARGE && !(value && typeof value === 'object' && (value as { unavailable?: unknown }).unavailable === true)) {
        fail(`${path}.value`, 'a LARGE pack commit stores an UnavailableValue');
      }
      tags = Object.freeze([...(j.tags ?? [])]);
      acl = j.accessControl ? Object.freeze({ ...j.accessControl }) : undefined;
    }
    let d: Commit['detail'] = detail;
    if (j.action === 'quarantine' && !detail) {
      if (!prev) fail(path, `quarantine of key '${j.key}', which is not active at seq ${j.seq}`);
      d = { item: prev, reason: j.reason ?? fail(`${path}.reason`, 'a quarantine commit needs a reason') };
    }
    if (j.action === 'clear' && state) d = Object.freeze([...state.items.values()]);
    const previousValue = j.action === 'pack' || j.action === 'delete' || j.action === 'quarantine' ? prev?.value : undefined;
    const c = new Commit(CommitInit.of({
      seq: j.seq, lineage: j.lineage, timestamp: j.timestamp, action: j.action, key: j.key, actor: this.actor(j), value, previousValue,
      version: j.version, tags, acl, bytes: j.bytes, flags: j.flags, detail: d,
    }));
    this.bySeq.set(j.seq, c);
    return c;
  }
}

/** Validates and converts the JSON form; throws BackpackError naming the JSON path of the first problem. */
export function parseBackpackJSON(json: unknown): RestoredParts {
  const parsed = BackpackJSONSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    fail(formatPath(issue.path), issue.message);
  }
  const data = parsed.data;
  const r = new Restorer();
  const h = data.history;
  const base: State = { items: new Map(), quarantined: new Map() };
  h.base.items.forEach((j, i) => {
    const path = `history.base.items[${i}]`;
    if (j.action !== 'pack') fail(`${path}.action`, 'base items are pack commits');
    if (j.seq > h.baseSeq) fail(`${path}.seq`, `base item seq ${j.seq} is after baseSeq ${h.baseSeq}`);
    if (base.items.has(j.key)) fail(`${path}.key`, `key '${j.key}' appears twice`);
    base.items.set(j.key, r.commit(j, path, undefined));
  });
  h.base.quarantined.forEach((j, i) => {
    const path = `history.base.quarantined[${i}]`;
    if (j.action !== 'quarantine' || j.item.action !== 'pack') fail(`${path}.action`, 'quarantined entries are quarantine commits of pack commits');
    if (j.seq > h.baseSeq) fail(`${path}.seq`, `seq ${j.seq} is after baseSeq ${h.baseSeq}`);
    const item = r.commit(j.item, `${path}.item`, undefined);
    base.quarantined.set(j.key, r.commit(j, path, undefined, { item, reason: j.reason ?? fail(`${path}.reason`, 'a reason is required') }));
  });
  const baseTimestamp = h.baseTimestamp ?? Number.NEGATIVE_INFINITY;
  const live: State = { items: new Map(base.items), quarantined: new Map(base.quarantined) };
  let lastTimestamp = baseTimestamp;
  const commits = h.commits.map((j, i) => {
    const path = `history.commits[${i}]`;
    if (j.seq !== h.baseSeq + 1 + i) fail(`${path}.seq`, `expected seq ${h.baseSeq + 1 + i} (commits are contiguous after baseSeq), got ${j.seq}`);
    if (j.timestamp < lastTimestamp) fail(`${path}.timestamp`, 'timestamps must not decrease');
    lastTimestamp = j.timestamp;
    const c = r.commit(j, path, live);
    applyCommit(live, c);
    return c;
  });
  const large = new Map<Commit, unknown>();
  data.largeValues.forEach((entry, i) => {
    const path = `largeValues[${i}]`;
    const c = r.bySeq.get(entry.seq);
    if (!c || !(c.flags & LARGE)) fail(`${path}.seq`, `seq ${entry.seq} is not a pack commit of a large value`);
    large.set(c, prepareValue(c.key, r.decode(entry.value, `${path}.value`)).value);
  });
  const nodes: RestoredParts['nodes'] = (data.nodes ?? []).map((n, i) => {
    if (n.parent !== undefined && n.parent >= i) fail(`nodes[${i}].parent`, `a node's parent comes before it (got ${n.parent})`);
    return { registration: { nodeId: n.nodeId, nodeName: n.nodeName, namespace: n.namespace, permissions: n.permissions as NodePermissions | undefined }, parent: n.parent };
  });
  for (const [nodeId, p] of Object.entries(data.permissions ?? {})) {
    nodes.push({ registration: { nodeId, nodeName: nodeId, namespace: '', permissions: p as NodePermissions }, parent: undefined });
  }
  return {
    lineage: data.lineage,
    options: data.options,
    nodes,
    denials: data.accessDenials.map((d) => Object.freeze({ ...d })),
    lineages: h.lineages.includes(data.lineage) ? h.lineages : [...h.lineages, data.lineage],
    prunedNodes: h.prunedNodeIds,
    baseSeq: h.baseSeq,
    baseTimestamp,
    base,
    commits,
    large,
  };
}

