import { jsonProblem } from '../fs/index.js';
import { ContextError } from './errors.js';
import { Encoder, canonicalJson, isHexId, type HashBackend } from './hash.js';

/** JSON-compatible metadata attached to a frame. */
export type FrameMetadata = Record<string, unknown>;

/** What an agent supplies to `putFrame`. */
export interface FrameInput {
  readonly type: string;
  readonly content: string;
  readonly metadata?: FrameMetadata;
}

/** The basis of a frame written by an agent: the node version it describes and the agent. */
export interface NodeBasis {
  readonly kind: 'node';
  readonly hash: string;
}

/** The basis of a synthesized frame (the spec's SynthesisBasis). */
export interface SynthesisBasis {
  readonly kind: 'synthesis';
  readonly hash: string;
  /** Frame type read from file children (`'*'` = every head); directory children give their `type` frame. */
  readonly sourceType: string;
  /** Canonical JSON of the policy. */
  readonly policy: string;
  /** Child frame ids in basis order (by child path, then FrameID). */
  readonly childFrameIds: readonly string[];
}

/** An immutable, content-addressed frame as stored in `.merkle/frames/`. */
export interface Frame {
  readonly v: 1;
  readonly frameId: string;
  /** The NodeID (node version) the frame was made for. */
  readonly nodeId: string;
  readonly path: string;
  readonly type: string;
  readonly agentId: string;
  readonly content: string;
  /** Always holds `agent_id`. */
  readonly metadata: FrameMetadata;
  readonly basis: NodeBasis | SynthesisBasis;
}

const FRAME_TYPE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** Throws a clear error unless `type` is a valid frame type (letters, digits, `._:-`, at most 64 characters). */
export function checkFrameType(type: unknown, where: string): string {
  if (typeof type !== 'string' || !FRAME_TYPE.test(type)) {
    throw new ContextError(
      'INVALID_ARGUMENT',
      `${where}: frame type ${JSON.stringify(type)} is invalid; use 1-64 characters of letters, digits, '.', '_', ':', '-'`,
      { type },
    );
  }
  return type;
}

/** Validates what an agent passes to `putFrame` and returns its metadata with `agent_id` set. */
export function checkFrameInput(input: FrameInput, agentId: string, where: string): { type: string; content: string; metadata: FrameMetadata } {
  if (input === null || typeof input !== 'object') throw new ContextError('INVALID_ARGUMENT', `${where}: frame must be an object`);
  const type = checkFrameType(input.type, where);
  if (typeof input.content !== 'string') {
    throw new ContextError('INVALID_ARGUMENT', `${where}: frame content must be a string, got ${typeof input.content}`);
  }
  const metadata = input.metadata ?? {};
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
    throw new ContextError('INVALID_ARGUMENT', `${where}: frame metadata must be a JSON object`);
  }
  if ('agent_id' in metadata && metadata.agent_id !== agentId) {
    throw new ContextError(
      'INVALID_ARGUMENT',
      `${where}: metadata.agent_id '${String(metadata.agent_id)}' does not match the writing agent '${agentId}'`,
      { agentId },
    );
  }
  // JSON data only: a Map, Set or Date would be stored as `{}` (or a string) in silence.
  const at: (string | number)[] = [];
  const problem = jsonProblem(metadata, at, true);
  if (problem !== undefined) throw new ContextError('INVALID_ARGUMENT', `${where}: frame metadata${at.map((k) => `.${k}`).join('')}: ${problem}`);
  let normalized: FrameMetadata;
  try {
    normalized = JSON.parse(canonicalJson({ ...metadata, agent_id: agentId })) as FrameMetadata;
  } catch (error) {
    throw new ContextError('INVALID_ARGUMENT', `${where}: frame metadata is not JSON-serializable: ${(error as Error).message}`);
  }
  return { type, content: input.content, metadata: normalized };
}

/** Basis hash of an agent-written frame. */
export function nodeBasisHash(nodeId: string, agentId: string, backend: HashBackend): string {
  return new Encoder('merkle.basis.node.v1').id(nodeId).str(agentId).hash(backend);
}

/** Basis hash of a synthesized frame. */
export function synthesisBasisHash(
  dirNodeId: string,
  frameType: string,
  sourceType: string,
  agentId: string,
  policyKey: string,
  childFrameIds: readonly string[],
  backend: HashBackend,
): string {
  const enc = new Encoder('merkle.basis.synthesis.v1').id(dirNodeId).str(frameType).str(sourceType).str(agentId).str(policyKey);
  enc.u32(childFrameIds.length);
  for (const id of childFrameIds) enc.id(id);
  return enc.hash(backend);
}

/** The FrameID of a frame's identifying fields. */
export function computeFrameId(
  fields: { basisHash: string; path: string; type: string; agentId: string; content: string; metadata: FrameMetadata },
  backend: HashBackend,
): string {
  return new Encoder('merkle.frame.v1')
    .id(fields.basisHash)
    .str(fields.path)
    .str(fields.type)
    .str(fields.agentId)
    .str(fields.content)
    .str(canonicalJson(fields.metadata))
    .hash(backend);
}

/**
 * What is wrong with the shape of a parsed frame file, or undefined when every field {@link verifyFrame} hashes has
 * its type: the file holds an object; `v` is 1; `frameId`, `nodeId` and every child frame id are 64-hex ids;
 * `path`, `type`, `agentId` and `content` are strings; `metadata` is an object; `basis` is an object of a known
 * kind, with a string `hash` and (synthesis) string `sourceType` and `policy` and an array `childFrameIds`. A file
 * damaged in a field name or a value's type still parses as JSON: without this its hashing would throw a TypeError
 * naming no file.
 */
export function frameShapeProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return `the file holds ${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`}, not a frame object`;
  }
  const frame = value as Record<string, unknown>;
  if (frame['v'] !== 1) return `"v" is ${describe(frame['v'])}, not 1`;
  const hexId = (field: string, v: unknown): string | undefined =>
    typeof v === 'string' && isHexId(v) ? undefined : `"${field}" is ${describe(v)}, not a 64-hex id`;
  const text = (field: string, v: unknown): string | undefined => (typeof v === 'string' ? undefined : `"${field}" is ${describe(v)}, not a string`);
  const problem =
    hexId('frameId', frame['frameId']) ??
    hexId('nodeId', frame['nodeId']) ??
    text('path', frame['path']) ??
    text('type', frame['type']) ??
    text('agentId', frame['agentId']) ??
    text('content', frame['content']);
  if (problem !== undefined) return problem;
  const metadata = frame['metadata'];
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return `"metadata" is ${describe(metadata)}, not an object`;
  const basis = frame['basis'];
  if (basis === null || typeof basis !== 'object' || Array.isArray(basis)) return `"basis" is ${describe(basis)}, not an object`;
  const b = basis as Record<string, unknown>;
  const hash = text('basis.hash', b['hash']);
  if (hash !== undefined) return hash;
  if (b['kind'] === 'node') return undefined;
  if (b['kind'] !== 'synthesis') return `"basis.kind" is ${describe(b['kind'])}, not 'node' or 'synthesis'`;
  const synthesis = text('basis.sourceType', b['sourceType']) ?? text('basis.policy', b['policy']);
  if (synthesis !== undefined) return synthesis;
  const children = b['childFrameIds'];
  if (!Array.isArray(children)) return `"basis.childFrameIds" is ${describe(children)}, not an array`;
  for (const [i, child] of children.entries()) {
    const bad = hexId(`basis.childFrameIds[${i}]`, child);
    if (bad !== undefined) return bad;
  }
  return undefined;
}

/** A short description of a JSON value for a message: its type, never its text (the file may be anyone's). */
function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return isHexId(value) ? 'a 64-hex id' : `a string of ${value.length} characters`;
  return typeof value === 'number' || typeof value === 'boolean' ? `the ${typeof value} ${String(value)}` : `an ${typeof value}`;
}

/**
 * Recomputes a stored frame's basis hash and FrameID; returns what does not match, or undefined when it verifies.
 * `frame` is what its file parsed to, of any shape: one whose fields do not have their types is a malformed frame
 * (see {@link frameShapeProblem}), never hashed.
 */
export function verifyFrame(frame: unknown, expectedId: string, backend: HashBackend): string | undefined {
  const shape = frameShapeProblem(frame);
  if (shape !== undefined) return `malformed frame: ${shape}`;
  const f = frame as Frame;
  const basisHash =
    f.basis.kind === 'node'
      ? nodeBasisHash(f.nodeId, f.agentId, backend)
      : synthesisBasisHash(f.nodeId, f.type, f.basis.sourceType, f.agentId, f.basis.policy, f.basis.childFrameIds, backend);
  if (basisHash !== f.basis.hash) return 'basis hash does not match its fields';
  const id = computeFrameId({ ...f, basisHash }, backend);
  if (id !== expectedId || f.frameId !== expectedId) return `content hashes to ${id}`;
  if (f.metadata.agent_id !== f.agentId) return 'metadata.agent_id does not match agentId';
  return undefined;
}
