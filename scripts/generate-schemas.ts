/**
 * `npm run schemas`: writes the JSON Schema files under `schema/` from the zod schemas, which are the single source
 * of truth (DESIGN D11, D14). The output is deterministic, so `test/events/schema.test.ts` can fail when a
 * committed file is stale.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { StreamEventSchema } from '../src/events/types.js';
import { FlowConfigSchema, McpServerSchema } from '../src/serialization/schema.js';

/** One generated file: its path relative to the repository root, the zod schema, and the title and description it gets. */
export interface SchemaFileEntry {
  file: string;
  schema: z.ZodType;
  title: string;
  description: string;
}

/** Every schema file the project publishes. */
export const schemaFiles: readonly SchemaFileEntry[] = [
  {
    file: 'schema/event.schema.json',
    schema: StreamEventSchema,
    title: 'backpackflow event',
    description:
      'One event of the backpackflow event stream, as emitted by EventStreamer and written as one line of events.jsonl.',
  },
  {
    file: 'schema/flow-config.schema.json',
    schema: FlowConfigSchema,
    title: 'backpackflow flow config',
    description: 'A flow as JSON: namespace, nodes (with nested internal flows), edges, dependencies and subflows. Loaded by FlowLoader.loadFlow.',
  },
  {
    file: 'schema/mcp-server.schema.json',
    schema: McpServerSchema,
    title: 'backpackflow MCP server declaration',
    description: 'One entry of the mcpServers param of an AgentNode: an MCP server reached over stdio (a command) or streamable HTTP (a URL), whose tools the model may call.',
  },
];

/** The repository root (this script lives in `scripts/`). */
export const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The text of `entry`'s file: the JSON Schema, pretty-printed with two spaces, ending in a newline. */
export function renderSchemaFile(entry: SchemaFileEntry): string {
  const { $schema, ...rest } = z.toJSONSchema(entry.schema) as Record<string, unknown>;
  return `${JSON.stringify({ $schema, title: entry.title, description: entry.description, ...rest }, null, 2)}\n`;
}

/** Writes every schema file under `root`; returns the paths written. */
export function writeSchemaFiles(root: string = repositoryRoot): string[] {
  return schemaFiles.map((entry) => {
    const path = join(root, entry.file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, renderSchemaFile(entry));
    return path;
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  for (const path of writeSchemaFiles()) console.log(`wrote ${path}`);
}
