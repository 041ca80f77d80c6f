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
  /**
   * Which side of the schema the file describes: `input` for what people write (a flow file, an MCP server entry:
   * a key the loader fills with its default is optional there, as `validate` takes it), `output` for what the
   * library writes (an event, every field it fills present).
   */
  io: 'input' | 'output';
}

/** Every schema file the project publishes. */
export const schemaFiles: readonly SchemaFileEntry[] = [
  {
    file: 'schema/event.schema.json',
    schema: StreamEventSchema,
    title: 'backpackflow event',
    io: 'output',
    description:
      'One event of the backpackflow event stream, as emitted by EventStreamer and written as one line of events.jsonl.',
  },
  {
    file: 'schema/flow-config.schema.json',
    schema: FlowConfigSchema,
    title: 'backpackflow flow config',
    io: 'input',
    description: 'A flow as JSON: namespace, nodes (with nested internal flows), edges, dependencies and subflows. Loaded by FlowLoader.loadFlow.',
  },
  {
    file: 'schema/mcp-server.schema.json',
    schema: McpServerSchema,
    title: 'backpackflow MCP server declaration',
    io: 'input',
    description: 'One entry of the mcpServers param of an AgentNode: an MCP server reached over stdio (a command) or streamable HTTP (a URL), whose tools the model may call.',
  },
];

/** The repository root (this script lives in `scripts/`). */
export const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The text of `entry`'s file: the JSON Schema, pretty-printed with two spaces, ending in a newline. */
export function renderSchemaFile(entry: SchemaFileEntry): string {
  const { $schema, ...rest } = z.toJSONSchema(entry.schema, { io: entry.io }) as Record<string, unknown>;
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
