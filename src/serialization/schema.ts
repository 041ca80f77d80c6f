import { z } from 'zod';
import { NodePermissionsSchema } from '../backpack/index.js';

/**
 * The flow config JSON (PRD-004 §4.1, §16; DESIGN D14). These zod schemas are the single source of truth:
 * the types below are inferred from them and `schema/flow-config.schema.json` is generated from them.
 */

/**
 * An edge: when node `from` returns action `condition`, go to `to` (a node or subflow of the same flow). `mappings`
 * (source key → target key) copies keys when the edge is taken, as a commit by `from` (see `Flow.applyMappings`).
 */
export const FlowEdgeSchema = z
  .object({
    from: z.string().min(1),
    to: z.string().min(1),
    condition: z.string().min(1).default('default'),
    mappings: z.record(z.string(), z.string()).optional(),
  })
  .strict();

/** A node: its registered type, id, params and, for a composite, its internal flow. */
export const NodeConfigSchema = z
  .object({
    type: z.string().min(1),
    id: z.string().min(1),
    params: z.record(z.string(), z.unknown()).default({}),
    namespaceSegment: z.string().min(1).optional(),
    maxRetries: z.number().int().min(1).optional(),
    retryDelayMs: z.number().min(0).optional(),
    /** The node's access rules (DESIGN D9); win over those its class declares. */
    permissions: NodePermissionsSchema.optional(),
    get internalFlow() {
      return FlowConfigSchema.optional();
    },
  })
  .strict();

/** A flow: namespace, nodes, edges, dependency names, nested subflows. */
export const FlowConfigSchema = z
  .object({
    /**
     * The JSON Schema the file follows (`backpackflow/schema/flow-config.schema.json`), for editors: accepted, and not
     * part of the flow (an exported config has none).
     */
    $schema: z.string().optional(),
    version: z.string().regex(/^\d+\.\d+\.\d+$/, 'version must be semver like "2.0.0"'),
    namespace: z.string().default(''),
    get nodes() {
      return z.array(NodeConfigSchema);
    },
    edges: z.array(FlowEdgeSchema).default([]),
    dependencies: z.record(z.string(), z.string()).default({}),
    get subflows() {
      return z.array(FlowConfigSchema).optional();
    },
    entry: z.string().min(1).optional(),
    maxSteps: z.number().int().min(1).optional(),
    onMissingRoute: z.enum(['end', 'warn', 'throw']).optional(),
  })
  .strict();

/**
 * An MCP server declaration, as the `mcpServers` param of an AgentNode takes it in a flow file (validated with the
 * node's params, each problem at its JSON path, and exported back as written). Defined beside the node that uses
 * it (nodes sit below serialization) and published here, with its own file `schema/mcp-server.schema.json`.
 */
export { McpServerSchema } from '../nodes/llm/mcp.js';

/** A flow config as written (defaults may be missing). */
export type FlowConfigInput = z.input<typeof FlowConfigSchema>;
/** A normalized flow config (defaults filled). */
export type FlowConfig = z.output<typeof FlowConfigSchema>;
/** A normalized node config. */
export type NodeConfig = z.output<typeof NodeConfigSchema>;
/** An edge. */
export type FlowEdge = z.output<typeof FlowEdgeSchema>;

/** The config versions this loader reads (major version 2). */
export const SUPPORTED_MAJOR_VERSION = 2;
