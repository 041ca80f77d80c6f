import { ChildProcess } from 'node:child_process';
import { z } from 'zod';
import { LlmError } from './errors.js';
import { redact } from '../../redact/index.js';
import { boundedFetch } from './bounded-fetch.js';
import { maskUrlCredentials } from '../../redact/index.js';
import { mcpServerSecrets } from './mcp-secrets.js';
import { usableSecrets, withoutSecrets } from './secrets.js';
import { checkToolName, type LlmTool } from './tools.js';
import { expandsBeyond, withoutPatterns } from '../schema-patterns.js';

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
  /**
   * Most bytes of one answer of the server (default 8 MB): each HTTP response (an event stream as a whole), the tool
   * list (all pages together) and each tool result. A larger answer fails with an {@link McpServerError} naming the
   * server and the limit; an HTTP response is cut off as it passes the limit, so the server cannot make the process
   * buffer more. (A stdio server's answer is read by the SDK whole before it is measured: the program is one the flow
   * author runs.)
   */
  maxResponseBytes: z.number().int().positive().max(1024 ** 3).optional(),
};

/**
 * Header and env values: credentials more often than not, whatever their names, so each is a secret param (DESIGN
 * D14: `exportFlow` writes `'***'` for it and a run's recorded flow masks it, unless written as a `${ENV}` reference).
 */
const secretValues = z.record(z.string(), z.string().meta({ secret: true }));

/** A server started as a child process, spoken to over its stdin and stdout. */
export const McpStdioServerSchema = z.strictObject({
  ...common,
  transport: z.literal('stdio'),
  /** The program to start (a flow file that declares one runs it: treat flow files as code). */
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  /**
   * Environment variables on top of the SDK's safe default set (PATH, HOME, ...); `${ENV}` references resolve at load.
   * Each value is secret: masked on export and removed from what the node emits and packs (see `mcpServerSecrets`).
   */
  env: secretValues.optional(),
  cwd: z.string().min(1).optional(),
});

/** A server reached over MCP's streamable HTTP transport. */
export const McpHttpServerSchema = z.strictObject({
  ...common,
  transport: z.literal('http'),
  /**
   * The server's URL. Its credentials (user name, password, query values, token-like path segments) are secret
   * (`.meta({ secret: 'url' })`): messages, `exportFlow` and other nodes' reads show the URL without them.
   */
  url: z.url({ protocol: /^https?$/ }).meta({ secret: 'url' }),
  /**
   * HTTP headers. Each value is secret: masked on export; all but plain ones such as Accept and User-Agent are also
   * removed from what the node emits and packs (see `mcpServerSecrets`).
   */
  headers: secretValues.optional(),
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
  /**
   * The credentials of the servers' declarations (see `mcpServerSecrets`): a server may echo one in a tool result or
   * an error. The toolbox's own error messages are already without them; remove them from the tool results and
   * errors you keep (an AgentNode does).
   */
  secrets: string[];
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
/** The MCP error code of a request that timed out (the SDK's `ErrorCode.RequestTimeout`). */
const REQUEST_TIMEOUT = -32001;

/**
 * How a server is reached, for messages: `stdio: node server.mjs` or `http: http://127.0.0.1:3000/mcp`. The URL is
 * shown masked (see `maskUrlCredentials`), and the server's credentials (see `mcpServerSecrets`) are removed from a stdio
 * command line; secrets of a known shape in it are left to the caller's redaction.
 */
export function describeMcpServer(server: McpServer): string {
  if (server.transport === 'http') return `http: ${maskUrlCredentials(server.url)}`;
  return `stdio: ${withoutSecrets([server.command, ...(server.args ?? [])].join(' '), usableSecrets(mcpServerSecrets(server)))}`;
}

/**
 * Connects to each server, lists its tools and wraps them as {@link LlmTool}s (input validated against the tool's
 * JSON Schema before the call; a result with `isError` is a failed tool call; the output is the structured content,
 * else the content list). Any failure closes what was opened and throws an {@link McpServerError} naming the server.
 * Its messages, and those of failed tool calls, hold none of the servers' credentials (see `mcpServerSecrets`): a URL
 * is shown masked, and what a server says or prints is cleaned of them. Answers are bounded by `maxResponseBytes`.
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
  return { tools, close, secrets: [...new Set(servers.flatMap(mcpServerSecrets))] };
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
  const maxBytes = server.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const secrets = usableSecrets(mcpServerSecrets(server));
  /** Text for an error message: without the server's credentials, nor secrets of a known shape. */
  const clean = (text: string): string => redact(withoutSecrets(text, secrets)).value;
  let stderr = '';
  // An HTTP response past maxBytes is cut off, and the request it answers fails at once with the error saying so (an
  // event stream's failure alone would leave the request waiting for its timeout). Each request gets the signal of
  // the controller current as it starts; the one a response overflowed is replaced for later requests.
  let overflow = new AbortController();
  const tooLarge = (): McpServerError => new McpServerError(`an answer of the server was larger than its maxResponseBytes (${maxBytes} bytes)`);
  const bounded = (requestSignal: AbortSignal | undefined): AbortSignal | undefined =>
    server.transport === 'stdio' ? requestSignal : requestSignal === undefined ? overflow.signal : AbortSignal.any([requestSignal, overflow.signal]);
  const transport =
    server.transport === 'stdio'
      ? new StdioClientTransport({ command: server.command, args: server.args, env: { ...getDefaultEnvironment(), ...server.env }, cwd: server.cwd, stderr: 'pipe' })
      : new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: server.headers },
          fetch: boundedFetch(maxBytes, tooLarge, (error) => {
            const overflowed = overflow;
            overflow = new AbortController();
            overflowed.abort(error);
          }),
        });
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
    // Cleaned: the server's command line and what it printed (an error quoting its key) may hold secrets, and this
    // message reaches the run's events and an application's logs.
    throw new McpServerError(clean(`${what}: ${doing}: ${reason}${said}`), { cause: error });
  };
  let started = performance.now();
  let requestSignal = bounded(signal);
  try {
    await client.connect(transport, { timeout, signal: requestSignal });
  } catch (error) {
    noteFailure(error, started);
    await close().catch(() => undefined);
    fail('could not connect', overflowOf(requestSignal) ?? error);
  }
  try {
    const listed: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }> = [];
    let cursor: string | undefined;
    // Bounded in pages and in time as a whole, not only per request: a server that answers every page at once with
    // no tools and a new cursor would otherwise hold the node for ever.
    const cursors = new Set<string>();
    const listingEnds = performance.now() + timeout;
    // Bounded in size as a whole too: each page is bounded by maxBytes, but there may be many.
    let listedBytes = 0;
    do {
      if (cursors.size >= MAX_TOOL_PAGES) fail(`lists its tools in more than ${MAX_TOOL_PAGES} pages`, `${listed.length} tools listed so far`);
      started = performance.now();
      if (started > listingEnds) fail(`took longer than its timeoutMs (${timeout} ms) to list its tools`, `${cursors.size} pages, ${listed.length} tools listed so far`);
      requestSignal = bounded(signal);
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: Math.max(1, Math.ceil(listingEnds - started)), signal: requestSignal });
      listedBytes += jsonBytes(page.tools);
      if (listedBytes > maxBytes) fail('could not list its tools', `its tool list is larger than its maxResponseBytes (${maxBytes} bytes)`);
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
      tools.set(toolName, mcpTool(client, server, listedTool, { timeout, maxBytes, bounded, clean, secrets, noteFailure }));
    }
    return { tools, close };
  } catch (error) {
    noteFailure(error, started);
    await close().catch(() => undefined);
    if (error instanceof McpServerError) throw error;
    return fail('could not list its tools', overflowOf(requestSignal) ?? error);
  }
}

/** Most pages of `tools/list` a server may answer with (see connect). */
const MAX_TOOL_PAGES = 100;

/** The error a request failed with because a response to it passed maxResponseBytes (see connect), if it did. */
function overflowOf(requestSignal: AbortSignal | undefined): McpServerError | undefined {
  return requestSignal?.aborted === true && requestSignal.reason instanceof McpServerError ? requestSignal.reason : undefined;
}

/** The size of `value` as JSON text, in UTF-8 bytes. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '');
}

/** What a tool of a connection shares with it (see connect). */
interface ToolContext {
  timeout: number;
  maxBytes: number;
  /** The signal a request is made under (the response size bound joined to `requestSignal`). */
  bounded: (requestSignal: AbortSignal | undefined) => AbortSignal | undefined;
  /** Text for an error message, without secrets. */
  clean: (text: string) => string;
  /** The server's credentials (see `mcpServerSecrets`). */
  secrets: readonly string[];
  noteFailure: (error: unknown, started: number, requestSignal?: AbortSignal) => void;
}

/** One MCP tool as an {@link LlmTool}. */
function mcpTool(client: InstanceType<Sdk['Client']>, server: McpServer, listed: { name: string; description?: string; inputSchema: Record<string, unknown> }, at: ToolContext): LlmTool {
  const what = `MCP server '${server.name}' (${describeMcpServer(server)}): call of '${listed.name}'`;
  let inputSchema: z.ZodType;
  try {
    // Checked in this process without the server's regular expressions: a pattern such as `^(a+)+$` would block the
    // whole process on the right input (catastrophic backtracking), which no timeout or abort can stop. The server
    // validates its own input, patterns included.
    // And only when it does not expand to more than a check may walk (see schema-patterns.ts): `$defs` that refer to
    // each other twice would make one call's check take exponential time.
    if (expandsBeyond(listed.inputSchema)) throw new Error('too large to check here');
    inputSchema = z.fromJSONSchema(withoutPatterns(listed.inputSchema) as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    // A schema zod cannot read, or too large: the model still sees it, and the server validates the input.
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
      const requestSignal = at.bounded(context.signal);
      try {
        result = await client.callTool({ name: listed.name, arguments: input as Record<string, unknown> }, undefined, { timeout: at.timeout, signal: requestSignal });
      } catch (error) {
        at.noteFailure(error, started, context.signal);
        const cause = overflowOf(requestSignal) ?? error;
        throw new McpServerError(at.clean(`${what} failed: ${cause instanceof Error ? cause.message : String(cause)}`), { cause: error });
      }
      // Bounded before it is packed, stored and shown to the model (a stdio server's answer is not bounded as it is read).
      if (jsonBytes(result) > at.maxBytes) throw new McpServerError(at.clean(`${what} failed: its result is larger than the server's maxResponseBytes (${at.maxBytes} bytes)`));
      const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
      // The server's error text may quote the credentials it was given ("quota exceeded for key ...").
      if (result.isError === true) throw new Error(withoutSecrets(content.map((c) => c.text ?? `[${c.type}]`).join('\n'), at.secrets) || 'the MCP tool reported an error');
      return result.structuredContent ?? content;
    },
  };
}
