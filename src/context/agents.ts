import { ContextError } from './errors.js';
import { checkFrameType } from './frames.js';

/** What an agent may do: readers read; writers also put frames; synthesis agents also synthesize and regenerate. */
export type AgentRole = 'reader' | 'writer' | 'synthesis';

/** A registered agent (the spec's AgentIdentity). */
export interface AgentIdentity {
  readonly agentId: string;
  readonly role: AgentRole;
  /**
   * Frame types this agent may write (`'*'` for any). An empty list means any type. Checked on every write.
   */
  readonly capabilities: readonly string[];
}

/** The operations roles are checked for. */
export type AgentOperation = 'put-frame' | 'synthesize' | 'regenerate';

const ROLES: readonly AgentRole[] = ['reader', 'writer', 'synthesis'];
const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
const ALLOWED: Record<AgentOperation, readonly AgentRole[]> = {
  'put-frame': ['writer', 'synthesis'],
  synthesize: ['synthesis'],
  regenerate: ['synthesis'],
};

/** Validates an agent id (letters, digits, `._:@-`, at most 128 characters); `where` names the call. */
export function checkAgentId(agentId: unknown, where: string): string {
  if (typeof agentId !== 'string' || !AGENT_ID.test(agentId)) {
    throw new ContextError(
      'INVALID_ARGUMENT',
      `${where}: agent id ${JSON.stringify(agentId)} is invalid; use 1-128 letters, digits, '.', '_', ':', '@', '-'`,
      { agentId },
    );
  }
  return agentId;
}

/** Validates a registration and returns it normalized (capabilities sorted, deduplicated). */
export function checkIdentity(identity: { agentId: string; role: string; capabilities?: readonly string[] }): AgentIdentity {
  const agentId = checkAgentId(identity?.agentId, 'registerAgent');
  if (!ROLES.includes(identity.role as AgentRole)) {
    throw new ContextError(
      'INVALID_ARGUMENT',
      `registerAgent: role ${JSON.stringify(identity.role)} of agent '${agentId}' is invalid; use one of ${ROLES.join(', ')}`,
      { agentId },
    );
  }
  const capabilities = identity.capabilities ?? [];
  if (!Array.isArray(capabilities)) throw new ContextError('INVALID_ARGUMENT', `registerAgent: capabilities of agent '${agentId}' must be a list of frame types`, { agentId });
  // A capability is a frame type the agent may write ('*': any): anything else could never match one.
  capabilities.forEach((c: unknown, i) => {
    if (c !== '*') checkFrameType(c, `registerAgent: capabilities[${i}] of agent '${agentId}'`);
  });
  return { agentId, role: identity.role as AgentRole, capabilities: [...new Set(capabilities)].sort() };
}

/**
 * Throws unless `agentId` is registered with a role allowed to perform `operation`, and (for writes of a frame
 * type) its capabilities cover `frameType`.
 */
export function authorize(
  agents: Readonly<Record<string, AgentIdentity>>,
  agentId: string,
  operation: AgentOperation,
  frameType?: string,
): AgentIdentity {
  checkAgentId(agentId, operation);
  const agent = Object.hasOwn(agents, agentId) ? agents[agentId] : undefined;
  if (agent === undefined) {
    throw new ContextError('UNKNOWN_AGENT', `${operation}: agent '${agentId}' is not registered; register it first (backpackflow context agent add ${agentId} --role <role>)`, {
      agentId,
    });
  }
  if (!ALLOWED[operation].includes(agent.role)) {
    throw new ContextError(
      'ROLE_DENIED',
      `${operation}: agent '${agentId}' has role '${agent.role}', which may not ${operation}; allowed roles: ${ALLOWED[operation].join(', ')}`,
      { agentId, role: agent.role, operation },
    );
  }
  if (frameType !== undefined && agent.capabilities.length > 0 && !agent.capabilities.includes('*') && !agent.capabilities.includes(frameType)) {
    throw new ContextError(
      'CAPABILITY_DENIED',
      `${operation}: agent '${agentId}' may write frame types [${agent.capabilities.join(', ')}], not '${frameType}'`,
      { agentId, frameType },
    );
  }
  return agent;
}
