/** Small HTTP helpers of the studio server: JSON replies, errors with a status, query parameters. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { idProblem } from '../store/index.js';

/** An error the server answers with `status` and `{ error, parameter? }` as JSON. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    /** The request parameter that was wrong, when one was. */
    readonly parameter?: string,
  ) {
    super(message);
  }
}

/** Headers every studio response carries: no sniffing, no framing, no referrer (a token may be in the URL). */
export const BASE_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

/** Sends `body` as JSON with `status`; never cached (runs change while they are read). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...BASE_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

/** Sends an error as `{ error, parameter? }`. */
export function sendError(res: ServerResponse, error: HttpError): void {
  sendJson(res, error.status, { error: error.message, ...(error.parameter !== undefined ? { parameter: error.parameter } : {}) });
}

/**
 * A request's path and query. The path is kept as sent, not normalized (a URL parser would turn `/a/../b` into
 * `/b`): the routes and the file server see, and refuse, what the client really asked for.
 */
export interface RequestTarget {
  pathname: string;
  searchParams: URLSearchParams;
}

/** The path and query of a request. */
export function requestTarget(req: IncomingMessage): RequestTarget {
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  return { pathname: q < 0 ? raw : raw.slice(0, q), searchParams: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}

/** A path or query value that must be a store id (session, run): a 400 naming the parameter otherwise. */
export function idParam(value: string | null | undefined, parameter: string): string {
  const problem = idProblem(value ?? '');
  if (problem !== undefined) throw new HttpError(400, `invalid ${parameter} ${JSON.stringify(value ?? '')}: ${problem}`, parameter);
  return value!;
}

/** An optional non-negative integer query parameter (`undefined` when absent), a 400 naming it when malformed. */
export function intParam(url: RequestTarget, parameter: string, options: { min?: number; max?: number } = {}): number | undefined {
  const raw = url.searchParams.get(parameter);
  if (raw === null || raw === '') return undefined;
  const min = options.min ?? 0;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || (options.max !== undefined && n > options.max)) {
    const range = options.max !== undefined ? `between ${min} and ${options.max}` : `>= ${min}`;
    throw new HttpError(400, `invalid ${parameter} ${JSON.stringify(raw)}: must be an integer ${range}`, parameter);
  }
  return n;
}

/** A required integer query parameter. */
export function requiredIntParam(url: RequestTarget, parameter: string, options: { min?: number; max?: number } = {}): number {
  const n = intParam(url, parameter, options);
  if (n === undefined) throw new HttpError(400, `missing query parameter ${parameter}`, parameter);
  return n;
}
