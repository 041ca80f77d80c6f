import { ContextError } from './errors.js';
import { Encoder, canonicalJson, type HashBackend } from './hash.js';

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

/** Recomputes a stored frame's basis hash and FrameID; returns what does not match, or undefined when it verifies. */
export function verifyFrame(frame: Frame, expectedId: string, backend: HashBackend): string | undefined {
  if (frame.v !== 1 || typeof frame.content !== 'string' || frame.basis === undefined) return 'malformed frame';
  const basisHash =
    frame.basis.kind === 'node'
      ? nodeBasisHash(frame.nodeId, frame.agentId, backend)
      : synthesisBasisHash(
          frame.nodeId,
          frame.type,
          frame.basis.sourceType,
          frame.agentId,
          frame.basis.policy,
          frame.basis.childFrameIds,
          backend,
        );
  if (basisHash !== frame.basis.hash) return 'basis hash does not match its fields';
  const id = computeFrameId({ ...frame, basisHash }, backend);
  if (id !== expectedId || frame.frameId !== expectedId) return `content hashes to ${id}`;
  if (frame.metadata?.agent_id !== frame.agentId) return 'metadata.agent_id does not match agentId';
  return undefined;
}
