/**
 * The studio's JSON API: `GET /api/...` routes over a {@link RunReader} (and a {@link ContextReader} with
 * `--workspace`), and two writes, `POST /api/runs/:id/resume` and `POST /api/runs/:id/fork` ({@link Steering}),
 * whose job `GET /api/runs/:id/job` follows.
 * Every id is validated before use.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamEventTypeSchema } from '../events/index.js';
import type { ContextReader } from './context-reader.js';
import { HttpError, idParam, intParam, readJsonBody, requiredIntParam, sendJson, type RequestTarget } from './http.js';
import { MAX_PAGE_SIZE, type RunReader, type RunRef } from './run-reader.js';

/** Most top-level trace lines one request may ask for. */
const MAX_TRACE_ITEMS = 5000;
import type { Steering } from './steer.js';
import { parseLastEventId, tailEvents, type TailOptions } from './tail.js';

/** What the API routes share. */
export interface ApiContext {
  reader: RunReader;
  steering: Steering;
  /** The workspace's context store, with `--workspace`. */
  context: ContextReader | undefined;
  /** The session of run requests that name none; also the only session listed when set by the user. */
  session: string | undefined;
  /** Whether requests need the token (shown to the page, never the token itself). */
  tokenRequired: boolean;
  tail: TailOptions;
  /** Registers an open stream (until its response closes) so that closing the server ends it. */
  track(stop: () => void, res: ServerResponse): void;
  /** Counts a live stream from now until `res` closes; a 503 when {@link TailOptions.maxStreams} are open. */
  admitStream(res: ServerResponse): void;
}

const DEFAULT_SESSION = 'default';

function segments(pathname: string): string[] {
  return pathname
    .split('/')
    .slice(1)
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        throw new HttpError(400, `malformed path segment ${JSON.stringify(s)}`, 'path');
      }
    });
}

function runRef(ctx: ApiContext, url: RequestTarget, runId: string): RunRef {
  const session = url.searchParams.get('session');
  return { session: session === null ? (ctx.session ?? DEFAULT_SESSION) : idParam(session, 'session'), runId: idParam(runId, 'runId') };
}

/** The routes that take a POST (everything else is GET or HEAD). */
const WRITES = new Set(['resume', 'fork']);

/** The body of a write: a JSON object (a 400 otherwise). */
function bodyObject(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new HttpError(400, 'request body must be a JSON object', 'body');
  return value as Record<string, unknown>;
}

/**
 * Answers one API request (`/api/...`); unknown routes are a 404 naming the path, a route asked with the wrong method
 * a 405 naming the right one. `authenticated`: the request carried the studio's token.
 */
export async function handleApi(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, url: RequestTarget, authenticated: boolean): Promise<void> {
  const parts = segments(url.pathname).slice(1); // drop 'api'
  const [head, runId, view, ...rest] = parts;
  const write = head === 'runs' && runId !== undefined && view !== undefined && WRITES.has(view) && rest.length === 0;
  const post = req.method === 'POST';
  if (write !== post) {
    res.setHeader('allow', write ? 'POST' : 'GET, HEAD');
    throw new HttpError(405, `method ${req.method} not allowed on ${url.pathname}: use ${write ? 'POST' : 'GET'}`, 'method');
  }
  if (head === 'info' && parts.length === 1) {
    sendJson(res, 200, {
      version: '0.1.0',
      store: ctx.reader.store.kind,
      location: ctx.reader.location,
      session: ctx.session ?? null,
      sessions: await ctx.reader.sessions(),
      eventTypes: StreamEventTypeSchema.options,
      tokenRequired: ctx.tokenRequired,
      canWrite: authenticated,
      workspace: ctx.context?.workspace ?? null,
    });
    return;
  }
  if (head === 'context') return contextRoute(ctx, res, url, parts.slice(1));
  if (head === 'memory' && parts.length === 1) {
    const top = intParam(url, 'k', { min: 1, max: 100 }) ?? 10;
    sendJson(res, 200, { query: url.searchParams.get('q') ?? '', ...(await ctx.reader.searchMemory(url.searchParams.get('q') ?? '', top)) });
    return;
  }
  if (head !== 'runs') throw new HttpError(404, `no API route ${url.pathname}`, 'path');
  if (runId === undefined) {
    const session = url.searchParams.get('session');
    sendJson(res, 200, { runs: await ctx.reader.runs(session === null ? ctx.session : idParam(session, 'session')) });
    return;
  }
  const ref = runRef(ctx, url, runId);
  if (view === undefined) {
    const detail = await ctx.reader.run(ref);
    sendJson(res, 200, { ...detail, steer: await ctx.steering.describe(ref), job: ctx.steering.job(ref) ?? null });
    // The run view opens on its trace, of a long run the slowest answer: its read starts once this answer is sent,
    // while the page draws the header (not for a running run, whose trace would be read again as its log grows).
    if (detail.meta.status !== 'running') ctx.reader.prepareTrace(ref);
    return;
  }
  if (write) {
    const body = bodyObject(await readJsonBody(req));
    const job =
      view === 'resume'
        ? await ctx.steering.resume(ref, body['answer'], pauseOf(body))
        : await ctx.steering.fork(ref, forkStep(body), forkId(body));
    return sendJson(res, job.state === 'running' ? 202 : 200, { job });
  }
  if (view === 'blame' && rest.length === 1) return sendJson(res, 200, await ctx.reader.blame(ref, rest[0]!));
  if (rest.length > 0) throw new HttpError(404, `no API route ${url.pathname}`, 'path');
  switch (view) {
    case 'trace': {
      // Without `limit`, the whole tree (as `runs show --json`); with it, a page of its top-level lines.
      const limit = intParam(url, 'limit', { min: 1, max: MAX_TRACE_ITEMS });
      if (limit === undefined) return sendJson(res, 200, await ctx.reader.trace(ref));
      // `head=1`: the first lines as the head of the log tells them, at once (the page then asks for the whole).
      if (url.searchParams.get('head') === '1') return sendJson(res, 200, await ctx.reader.traceHead(ref, limit));
      return sendJson(res, 200, await ctx.reader.tracePage(ref, intParam(url, 'offset', { min: 0 }) ?? 0, limit));
    }
    case 'events': {
      const page = intParam(url, 'page', { min: 1 }) ?? 1;
      const pageSize = intParam(url, 'pageSize', { min: 1, max: MAX_PAGE_SIZE }) ?? 50;
      const type = url.searchParams.get('type') || undefined;
      const namespace = url.searchParams.get('namespace') || undefined;
      return sendJson(res, 200, await ctx.reader.eventsPage(ref, { type, namespace, page, pageSize }));
    }
    case 'state':
      return sendJson(res, 200, await ctx.reader.state(ref, intParam(url, 'step')));
    case 'diff':
      return sendJson(res, 200, await ctx.reader.diff(ref, requiredIntParam(url, 'from'), requiredIntParam(url, 'to')));
    case 'steps':
      return sendJson(res, 200, await ctx.reader.steps(ref));
    case 'job':
      // The studio's latest resume or fork writing this run, or null; answered before the run has any events, so
      // that the page can follow a fork whose child has not written its run yet (and show why, when it failed).
      return sendJson(res, 200, { job: ctx.steering.job(ref) ?? null });
    case 'stream': {
      ctx.admitStream(res);
      const at = await ctx.reader.existing(ref);
      const lastId = req.headers['last-event-id'];
      const resumed = typeof lastId === 'string' ? parseLastEventId(lastId) : undefined;
      ctx.track(await tailEvents(req, res, ctx.reader.store, at, resumed ?? { from: intParam(url, 'from') ?? 0 }, ctx.tail), res);
      return;
    }
    default:
      throw new HttpError(404, `no API route ${url.pathname}`, 'path');
  }
}

/** The id asked for the fork: a string, or none (the studio makes one); anything else is a 400. */
function forkId(body: Record<string, unknown>): string | undefined {
  const id = body['newRunId'];
  if (id === undefined || typeof id === 'string') return id;
  throw new HttpError(400, `newRunId must be a string (or left out for a new id), got ${id === null ? 'null' : Array.isArray(id) ? 'an array' : typeof id}`, 'newRunId');
}

/** The pause an answer is to (InterruptInfo.pause): an integer >= 0, or left out (a resume without an answer). */
function pauseOf(body: Record<string, unknown>): number | undefined {
  const pause = body['pause'];
  if (pause === undefined || (typeof pause === 'number' && Number.isSafeInteger(pause) && pause >= 0)) return pause;
  throw new HttpError(400, `invalid pause ${JSON.stringify(pause)}: must be the pause the answer is to (an integer >= 0, as the run's interrupt gives it)`, 'pause');
}

function forkStep(body: Record<string, unknown>): number {
  const step = body['step'];
  if (typeof step !== 'number' || !Number.isSafeInteger(step) || step < 0) {
    throw new HttpError(400, `invalid step ${JSON.stringify(step ?? null)}: must be an integer >= 0 (a recorded step of the run)`, 'step');
  }
  return step;
}

/** `/api/context`, `/api/context/node?path=`, `/api/context/frames/:frameId`: a 404 saying how to get one without `--workspace`. */
async function contextRoute(ctx: ApiContext, res: ServerResponse, url: RequestTarget, parts: string[]): Promise<void> {
  if (ctx.context === undefined) throw new HttpError(404, 'this studio has no workspace: start it with --workspace <dir> to see its context', 'workspace');
  if (parts.length === 0) return sendJson(res, 200, await ctx.context.summary());
  if (parts.length === 1 && parts[0] === 'node') {
    const path = url.searchParams.get('path') ?? '';
    if (path.length > 4096) throw new HttpError(400, `invalid path: at most 4096 characters, got ${path.length}`, 'path');
    return sendJson(res, 200, await ctx.context.node(path));
  }
  if (parts.length === 2 && parts[0] === 'frames') {
    if (!/^[0-9a-f]{64}$/.test(parts[1]!)) throw new HttpError(400, `invalid frameId ${JSON.stringify(parts[1]!.slice(0, 100))}: 64 lowercase hex digits`, 'frameId');
    return sendJson(res, 200, await ctx.context.frame(parts[1]!));
  }
  throw new HttpError(404, `no API route ${url.pathname}`, 'path');
}
