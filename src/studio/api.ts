/** The studio's JSON API: `GET /api/...` routes over a {@link RunReader}. Every id is validated before use. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamEventTypeSchema } from '../events/index.js';
import { HttpError, idParam, intParam, requiredIntParam, sendJson, type RequestTarget } from './http.js';
import { MAX_PAGE_SIZE, type RunReader, type RunRef } from './run-reader.js';
import { tailEvents, type TailOptions } from './tail.js';

/** What the API routes share. */
export interface ApiContext {
  reader: RunReader;
  /** The session of run requests that name none; also the only session listed when set by the user. */
  session: string | undefined;
  /** Whether requests need the token (shown to the page, never the token itself). */
  tokenRequired: boolean;
  tail: TailOptions;
  /** Registers an open stream (until its response closes) so that closing the server ends it. */
  track(stop: () => void, res: ServerResponse): void;
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

/** Answers one API request (`/api/...`); unknown routes are a 404 naming the path. */
export async function handleApi(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, url: RequestTarget): Promise<void> {
  const parts = segments(url.pathname).slice(1); // drop 'api'
  const [head, runId, view, ...rest] = parts;
  if (head === 'info' && parts.length === 1) {
    sendJson(res, 200, {
      version: '0.1.0',
      dataDir: ctx.reader.dataDir,
      session: ctx.session ?? null,
      sessions: await ctx.reader.sessions(),
      eventTypes: StreamEventTypeSchema.options,
      tokenRequired: ctx.tokenRequired,
    });
    return;
  }
  if (head === 'memory' && parts.length === 1) {
    const top = intParam(url, 'k', { min: 1, max: 100 }) ?? 10;
    sendJson(res, 200, { query: url.searchParams.get('q') ?? '', hits: await ctx.reader.searchMemory(url.searchParams.get('q') ?? '', top) });
    return;
  }
  if (head !== 'runs') throw new HttpError(404, `no API route ${url.pathname}`, 'path');
  if (runId === undefined) {
    const session = url.searchParams.get('session');
    sendJson(res, 200, { runs: await ctx.reader.runs(session === null ? ctx.session : idParam(session, 'session')) });
    return;
  }
  const ref = runRef(ctx, url, runId);
  if (view === undefined) return sendJson(res, 200, await ctx.reader.run(ref));
  if (view === 'blame' && rest.length === 1) return sendJson(res, 200, await ctx.reader.blame(ref, rest[0]!));
  if (rest.length > 0) throw new HttpError(404, `no API route ${url.pathname}`, 'path');
  switch (view) {
    case 'trace':
      return sendJson(res, 200, await ctx.reader.trace(ref));
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
    case 'stream': {
      const store = ctx.reader.events(ref);
      const lastId = req.headers['last-event-id'];
      const resumeAt = typeof lastId === 'string' && /^\d+$/.test(lastId) ? Number(lastId) : undefined;
      ctx.track(tailEvents(req, res, store, resumeAt ?? intParam(url, 'from') ?? 0, ctx.tail), res);
      return;
    }
    default:
      throw new HttpError(404, `no API route ${url.pathname}`, 'path');
  }
}
