/**
 * `backpackflow studio`: a local web UI over the run store. A node:http server (the API is a dozen GET routes and two
 * POSTs; a framework would add weight and nothing the routes need) answering `/api/...` with JSON and `/` with the
 * Preact page built into `dist/studio/page/`. Safety rules: see guard.ts; resume and fork: see steer.ts.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { terminalText } from '../events/terminal-text.js';
import { CheckpointStoreError, EventStoreError, FileRunStore, InvalidIdError, LockError, MemoryStore, PostgresRunStore, ProjectionStoreError, RunFolderError, RunGoneError, type Memory, type RunStore } from '../store/index.js';
import { PostgresMemoryStore } from '../store/postgres/memory-store.js';
import { handleApi, type ApiContext } from './api.js';
import { ContextReader } from './context-reader.js';
import { isLoopbackHost, RequestGuard } from './guard.js';
import { HttpError, requestTarget, sendError } from './http.js';
import { RunReader } from './run-reader.js';
import { defaultPageDir, PageFiles } from './static.js';
import { Steering, type SteeringOptions } from './steer.js';
import { DEFAULT_MAX_STREAMS, type TailOptions } from './tail.js';

/** Options of {@link startStudio}. */
export interface StudioOptions {
  /** Data directory of the runs (default `.backpackflow`); ignored with {@link databaseUrl}. */
  dataDir?: string;
  /**
   * The PostgreSQL database holding the runs and memory (as `--database-url`), instead of the data directory. Resumes
   * and forks run the CLI against it too.
   */
  databaseUrl?: string;
  /** Session whose runs are listed and opened by default (default: runs of every session are listed, `default` is opened). */
  session?: string;
  /** A workspace whose context store (`.merkle/`) the Context view shows, read-only. */
  workspace?: string;
  /** Address to bind (default `127.0.0.1`). Anything but loopback requires the token for reads too. */
  host?: string;
  /** Port (default 4820; 0 picks a free one). */
  port?: number;
  /** The token writes (resume, fork) always need, and reads off loopback (default: a random one). */
  token?: string;
  /** Hostnames the Host header may name besides this machine's loopback names and the bound address. */
  allowedHosts?: string[];
  /** Directory of the built page (default: `dist/studio/page`). */
  pageDir?: string;
  /** Timings of live streams. */
  tail?: TailOptions;
  /** How resumes and forks run (the CLI command, how long a write waits for it). */
  steering?: SteeringOptions;
  /** Where unexpected server errors are reported (default: stderr). */
  log?: (message: string) => void;
}

/** A running studio. */
export interface StudioServer {
  /** The URL to open, with `?token=` (the page can then resume and fork). */
  url: string;
  host: string;
  /** The port it listens on (the real one when 0 was asked). */
  port: number;
  /** The token writes need (and reads, off loopback). */
  token: string;
  /** Where the runs are: the data directory, or the database URL without its password. */
  location: string;
  server: Server;
  /** Ends open streams and connections and stops listening. */
  close(): Promise<void>;
}

/** The default port of the studio. */
export const DEFAULT_STUDIO_PORT = 4820;

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The run store and memory of a data directory, or of a database. */
function openStores(dataDir: string, databaseUrl: string | undefined): { store: RunStore; memory: Memory } {
  if (databaseUrl === undefined) return { store: new FileRunStore(dataDir), memory: new MemoryStore({ dataDir }) };
  const store = new PostgresRunStore({ url: databaseUrl });
  return { store, memory: new PostgresMemoryStore(store) };
}

/** Starts the studio and resolves once it listens. */
export async function startStudio(options: StudioOptions = {}): Promise<StudioServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? DEFAULT_STUDIO_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`port must be an integer 0..65535, got ${port}`);
  const token = options.token ?? randomBytes(24).toString('base64url');
  const tokenForReads = !isLoopbackHost(host);
  const dataDir = resolve(options.dataDir ?? '.backpackflow');
  const { store, memory } = openStores(dataDir, options.databaseUrl);
  const reader = new RunReader(store, memory);
  let context: ContextReader | undefined;
  try {
    // A database that cannot be reached is said now, not at the first request.
    if (store instanceof PostgresRunStore) await store.sql();
    context = options.workspace === undefined ? undefined : await ContextReader.open(options.workspace);
  } catch (error) {
    await reader.close().catch(() => undefined);
    throw error;
  }
  const steering = new Steering(reader, { dataDir, databaseUrl: options.databaseUrl }, options.steering);
  const page = new PageFiles(options.pageDir ?? defaultPageDir());
  // The default log is a terminal: what it prints (an error's message or stack, which may quote stored text) is
  // shown, never obeyed (see terminalText).
  const log = options.log ?? ((message: string) => process.stderr.write(`backpackflow studio: ${terminalText(message, { continuation: '  ' })}\n`));
  const streams = new Set<() => void>();
  /** Live streams admitted and not yet closed (see ApiContext.admitStream). */
  let streaming = 0;
  const ctx: ApiContext = {
    reader,
    steering,
    context,
    session: options.session,
    tokenRequired: tokenForReads,
    tail: options.tail ?? {},
    track: (stop, res) => {
      streams.add(stop);
      res.on('close', () => streams.delete(stop));
    },
    admitStream: (res) => {
      const max = options.tail?.maxStreams ?? DEFAULT_MAX_STREAMS;
      if (streaming >= max) throw new HttpError(503, `${max} live streams are open already (the studio's limit): close a tab that follows a run, then retry`, 'stream');
      streaming++;
      res.once('close', () => streaming--);
    },
  };

  const handle = async (guard: RequestGuard, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = requestTarget(req);
    try {
      const read = req.method === 'GET' || req.method === 'HEAD';
      const api = url.pathname === '/api' || url.pathname.startsWith('/api/');
      const admission = guard.admit(req, url, !read ? 'write' : api ? 'read' : 'page');
      if (!read && (req.method !== 'POST' || !api)) {
        res.setHeader('allow', api ? 'GET, HEAD, POST' : 'GET, HEAD');
        throw new HttpError(405, `method ${req.method} not allowed on ${url.pathname}`, 'method');
      }
      if (api) await handleApi(ctx, req, res, url, admission.authenticated);
      else await page.send(res, url.pathname, req.method === 'HEAD');
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof HttpError) return sendError(res, error);
      if (error instanceof InvalidIdError) return sendError(res, new HttpError(400, error.message));
      const status = storeErrorStatus(error);
      if (status !== undefined) return sendError(res, new HttpError(status, (error as Error).message));
      log(`${req.method} ${url.pathname}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      sendError(res, new HttpError(500, `server error: ${error instanceof Error ? error.message : String(error)}`));
    }
  };

  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actual = (server.address() as AddressInfo).port;
  const guard = new RequestGuard({ host, port: actual, token, tokenForReads, allowedHosts: options.allowedHosts });
  // Attached once the port is known (the Host check needs it); no request can be handled before this runs.
  server.on('request', (req, res) => void handle(guard, req, res));
  const url = `http://${urlHost(host)}:${actual}/?token=${token}`;
  return {
    url,
    host,
    port: actual,
    token,
    location: store.location,
    server,
    close: async () => {
      for (const stop of streams) stop();
      streams.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await steering.close();
      await reader.close();
      await context?.close();
    },
  };
}

/**
 * The status of a store error that is not the server's fault: 404 for a run deleted while the request read it (or a
 * file of it gone under the read, ENOENT), 409
 * for damage of a run's stored files (the error names the file: what they say, or could not say). Undefined for the
 * rest, which stay logged 500s: a failed system call under the store (no permission, a full disk: an error whose
 * `cause` carries an errno code), a database out of reach, a fault of ours.
 */
export function storeErrorStatus(error: unknown): 404 | 409 | undefined {
  if (error instanceof RunGoneError) return 404;
  if (!(error instanceof EventStoreError || error instanceof CheckpointStoreError || error instanceof ProjectionStoreError || error instanceof RunFolderError)) return undefined;
  if (error instanceof LockError) return 409; // a live writer holds the run: a conflict, not damage, but a 409 all the same
  const code = ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return 404; // the file went away under the read: the run was deleted meanwhile
  return typeof code === 'string' ? undefined : 409;
}
