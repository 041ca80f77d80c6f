import { ChildProcess } from 'node:child_process';
import { z } from 'zod';
import { LlmError } from './errors.js';
import { redact } from '../../redact/index.js';
import { checkToolName, type LlmTool } from './tools.js';

/**
 * MCP tools: an {@link AgentNode} can offer the model the tools of Model Context Protocol servers, declared in its
 * `mcpServers` param (in code or in a flow file). The `@modelcontextprotocol/sdk` client is an optional peer,
 * imported only when a node declares a server.
 */

const name = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a name is 1-64 letters, digits, _ or -');
const common = {
  /** Names the server in tool events and errors. */
  name,
  /** Only these tools of the server (default: all it lists). A name it does not list is an error. */
  tools: z.array(z.string().min(1)).optional(),
  /** Put before each tool name the model sees (e.g. `files_`), so that tools of two servers cannot collide. */
  prefix: z.string().regex(/^[A-Za-z0-9_-]{0,32}$/, 'a prefix is up to 32 letters, digits, _ or -').optional(),
  /**
   * Time limit of connecting and of each request, in ms (default 30,000). A stdio server that let a request time out
   * is stopped (SIGTERM) when the node closes its servers, instead of after the SDK's grace of 2 s.
   */
  timeoutMs: z.number().int().positive().max(600_000).optional(),
};

/** A server started as a child process, spoken to over its stdin and stdout. */
export const McpStdioServerSchema = z.strictObject({
  ...common,
  transport: z.literal('stdio'),
  /** The program to start (a flow file that declares one runs it: treat flow files as code). */
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  /** Environment variables on top of the SDK's safe default set (PATH, HOME, ...); `${ENV}` references resolve at load. */
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().min(1).optional(),
});

/** A server reached over MCP's streamable HTTP transport. */
export const McpHttpServerSchema = z.strictObject({
  ...common,
  transport: z.literal('http'),
  url: z.url({ protocol: /^https?$/ }),
  /** HTTP headers (an `Authorization` header exports as `***`). */
  headers: z.record(z.string(), z.string()).optional(),
});

/** One MCP server declaration (the `mcpServers` param of an AgentNode; exported to flow JSON as written). */
export const McpServerSchema = z.discriminatedUnion('transport', [McpStdioServerSchema, McpHttpServerSchema]);
/** An MCP server declaration. */
export type McpServer = z.infer<typeof McpServerSchema>;

/** A server could not be reached, listed or used: the message names the server and how it was reached. */
export class McpServerError extends LlmError {
  override name = 'McpServerError';
}

/** The tools of the connected servers, and how to let them go. */
export interface McpToolbox {
  /** Tool name (with the server's prefix) to tool. */
  tools: Map<string, LlmTool>;
  /** Closes every connection (stops stdio servers). */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** The MCP error code of a request that timed out (the SDK's `ErrorCode.RequestTimeout`). */
const REQUEST_TIMEOUT = -32001;

/** How a server is reached, for messages: `stdio: node server.mjs` or `http: http://127.0.0.1:3000/mcp`. */
export function describeMcpServer(server: McpServer): string {
  return server.transport === 'stdio' ? `stdio: ${[server.command, ...(server.args ?? [])].join(' ')}` : `http: ${server.url}`;
}

/**
 * Connects to each server, lists its tools and wraps them as {@link LlmTool}s (input validated against the tool's
 * JSON Schema before the call; a result with `isError` is a failed tool call; the output is the structured content,
 * else the content list). Any failure closes what was opened and throws an {@link McpServerError} naming the server.
 */
export async function openMcpServers(owner: string, servers: readonly McpServer[], signal?: AbortSignal): Promise<McpToolbox> {
  const tools = new Map<string, LlmTool>();
  const closers: Array<() => Promise<void>> = [];
  const close = async (): Promise<void> => {
    await Promise.all(closers.map((c) => c().catch(() => undefined)));
  };
  try {
    const seen = new Set<string>();
    for (const server of servers) {
      if (seen.has(server.name)) throw new McpServerError(`${owner}: MCP server '${server.name}' is declared twice`);
      seen.add(server.name);
      const connection = await connect(owner, server, signal);
      closers.push(connection.close);
      for (const [toolName, tool] of connection.tools) {
        if (tools.has(toolName)) throw new McpServerError(`${owner}: MCP server '${server.name}' offers tool '${toolName}', which another server already offers; give one of them a prefix`);
        tools.set(toolName, tool);
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { tools, close };
}

type Sdk = {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport;
  getDefaultEnvironment: typeof import('@modelcontextprotocol/sdk/client/stdio.js').getDefaultEnvironment;
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport;
};

let sdk: Promise<Sdk> | undefined;

/** The MCP SDK, imported on first use (an optional peer dependency). */
function loadSdk(what: string): Promise<Sdk> {
  sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]).then(([client, stdio, http]) => ({
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    getDefaultEnvironment: stdio.getDefaultEnvironment,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
  }));
  return sdk.catch((error: unknown) => {
    sdk = undefined;
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new McpServerError(`${what}: the package '@modelcontextprotocol/sdk' is not installed: run npm install @modelcontextprotocol/sdk`, { cause: error });
    }
    throw error;
  });
}

async function connect(owner: string, server: McpServer, signal?: AbortSignal): Promise<{ tools: Map<string, LlmTool>; close: () => Promise<void> }> {
  const what = `${owner}: MCP server '${server.name}' (${describeMcpServer(server)})`;
  const { Client, StdioClientTransport, getDefaultEnvironment, StreamableHTTPClientTransport } = await loadSdk(what);
  const timeout = server.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let stderr = '';
  const transport =
    server.transport === 'stdio'
      ? new StdioClientTransport({ command: server.command, args: server.args, env: { ...getDefaultEnvironment(), ...server.env }, cwd: server.cwd, stderr: 'pipe' })
      : new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } });
  if (transport instanceof StdioClientTransport) {
    // The last lines a failing server printed go into the error.
    transport.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  }
  const client = new Client({ name: 'backpackflow', version: '1' });
  /** Set when a request to the server timed out or was cancelled: the server may be stuck, see close. */
  let unresponsive = false;
  /**
   * Notes a failed request that began at `started` (performance.now()), made under `requestSignal`. A timeout is the
   * client's own: the SDK's code for it (-32001) is also one a server may answer with, so it counts only when the
   * request ran its whole timeout.
   */
  const noteFailure = (error: unknown, started: number, requestSignal: AbortSignal | undefined = signal): void => {
    const timedOut = (error as { code?: unknown }).code === REQUEST_TIMEOUT && performance.now() - started >= timeout;
    if (timedOut || requestSignal?.aborted === true) unresponsive = true;
  };
  // The SDK closes a stdio server by ending its input, and sends SIGTERM only when the server has not exited 2 s
  // later (SIGKILL 2 s after that). A server that let a request time out may be stuck on it and hold the node that
  // long past its timeoutMs: it gets the SIGTERM at once. The signal goes through the server's ChildProcess, which
  // sends none once the process has exited (a bare pid could by then name another process); the SDK keeps it in a
  // private field, so without one (another SDK version) the SDK's own close decides, as before. The SDK starts
  // waiting for the exit within close()'s first synchronous part, so the signal is sent after that call, never
  // before (an exit it missed would cost it the whole grace).
  const close = async (): Promise<void> => {
    // Read first: the transport forgets its process as it starts closing.
    const child = (transport as unknown as { _process?: unknown })._process;
    const closing = client.close();
    if (unresponsive && child instanceof ChildProcess && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await closing;
  };
  const fail = (doing: string, error: unknown): never => {
    const reason = error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error);
    const said = stderr.trim() === '' ? '' : `; it wrote: ${stderr.trim().split('\n').slice(-5).join(' | ')}`;
    // Redacted: the server's command line and what it printed may hold secrets, and an application logs this message.
    throw new McpServerError(redact(`${what}: ${doing}: ${reason}${said}`).value, { cause: error });
  };
  let started = performance.now();
  try {
    await client.connect(transport, { timeout, signal });
  } catch (error) {
    noteFailure(error, started);
    await close().catch(() => undefined);
    fail('could not connect', error);
  }
  try {
    const listed: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }> = [];
    let cursor: string | undefined;
    // Bounded in pages and in time as a whole, not only per request: a server that answers every page at once with
    // no tools and a new cursor would otherwise hold the node for ever.
    const cursors = new Set<string>();
    const listingEnds = performance.now() + timeout;
    do {
      if (cursors.size >= MAX_TOOL_PAGES) fail(`lists its tools in more than ${MAX_TOOL_PAGES} pages`, `${listed.length} tools listed so far`);
      started = performance.now();
      if (started > listingEnds) fail(`took longer than its timeoutMs (${timeout} ms) to list its tools`, `${cursors.size} pages, ${listed.length} tools listed so far`);
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: Math.max(1, Math.ceil(listingEnds - started)), signal });
      listed.push(...(page.tools as typeof listed));
      cursor = page.nextCursor;
      if (cursor !== undefined) {
        if (cursors.has(cursor)) fail('repeats a cursor while listing its tools', `cursor ${JSON.stringify(cursor.slice(0, 80))} came back after ${cursors.size} pages`);
        cursors.add(cursor);
      }
    } while (cursor !== undefined && listed.length < 10_000);
    const wanted = server.tools === undefined ? undefined : new Set(server.tools);
    for (const missing of wanted ?? []) {
      if (!listed.some((t) => t.name === missing)) fail(`has no tool '${missing}'`, `it lists ${listed.map((t) => t.name).join(', ') || 'no tools'}`);
    }
    const tools = new Map<string, LlmTool>();
    for (const listedTool of listed) {
      if (wanted !== undefined && !wanted.has(listedTool.name)) continue;
      const toolName = `${server.prefix ?? ''}${listedTool.name}`;
      try {
        checkToolName(toolName);
      } catch (error) {
        fail(`tool '${listedTool.name}' cannot be offered to a model`, error);
      }
      tools.set(toolName, mcpTool(client, server, listedTool, timeout, noteFailure));
    }
    return { tools, close };
  } catch (error) {
    noteFailure(error, started);
    await close().catch(() => undefined);
    if (error instanceof McpServerError) throw error;
    return fail('could not list its tools', error);
  }
}

/** One MCP tool as an {@link LlmTool}. */
/**
 * A server's JSON Schema without its regular expressions (`pattern`; `patternProperties` becomes an open
 * `additionalProperties` where none is set), at any depth: see mcpTool.
 */
/** Most pages of `tools/list` a server may answer with (see connect). */
const MAX_TOOL_PAGES = 100;

function withoutPatterns(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutPatterns);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'pattern' && typeof value === 'string') continue;
    if (key === 'patternProperties') {
      if (!('additionalProperties' in schema)) out['additionalProperties'] = true;
      continue;
    }
    out[key] = withoutPatterns(value);
  }
  return out;
}

function mcpTool(
  client: InstanceType<Sdk['Client']>,
  server: McpServer,
  listed: { name: string; description?: string; inputSchema: Record<string, unknown> },
  timeout: number,
  noteFailure: (error: unknown, started: number, requestSignal?: AbortSignal) => void,
): LlmTool {
  let inputSchema: z.ZodType;
  try {
    // Checked in this process without the server's regular expressions: a pattern such as `^(a+)+$` would block the
    // whole process on the right input (catastrophic backtracking), which no timeout or abort can stop. The server
    // validates its own input, patterns included.
    inputSchema = z.fromJSONSchema(withoutPatterns(listed.inputSchema) as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    // A schema zod cannot read: the model still sees it, and the server validates the input.
    inputSchema = z.record(z.string(), z.unknown());
  }
  return {
    description: listed.description ?? `${listed.name} (MCP server ${server.name})`,
    inputSchema,
    jsonSchema: listed.inputSchema,
    source: { mcpServer: server.name, mcpTool: listed.name },
    async execute(input, context) {
      let result;
      const started = performance.now();
      try {
        result = await client.callTool({ name: listed.name, arguments: input as Record<string, unknown> }, undefined, { timeout, signal: context.signal });
      } catch (error) {
        noteFailure(error, started, context.signal);
        throw new McpServerError(redact(`MCP server '${server.name}' (${describeMcpServer(server)}): call of '${listed.name}' failed: ${error instanceof Error ? error.message : String(error)}`).value, { cause: error });
      }
      const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
      if (result.isError === true) throw new Error(content.map((c) => c.text ?? `[${c.type}]`).join('\n') || 'the MCP tool reported an error');
      return result.structuredContent ?? content;
    },
  };
}
