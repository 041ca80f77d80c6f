/** Small HTTP helpers of the studio server: JSON replies, errors with a status, query parameters. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { nestingProblem } from '../serialization/index.js';
import { idProblem } from '../store/index.js';

/** An error the server answers with `status` and `{ error, parameter?, ...extra }` as JSON. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    /** The request parameter that was wrong, when one was. */
    readonly parameter?: string,
    /** More fields of the reply (e.g. the problems of an answer, the command to run instead). */
    readonly extra: Record<string, unknown> = {},
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

/** Sends an error as `{ error, parameter?, ...extra }`. */
export function sendError(res: ServerResponse, error: HttpError): void {
  sendJson(res, error.status, { ...error.extra, error: error.message, ...(error.parameter !== undefined ? { parameter: error.parameter } : {}) });
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

/** Largest request body the write routes read. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The request's body as JSON. Only `application/json` is accepted (415 otherwise: an HTML form cannot send it, and a
 * script of another origin cannot without a CORS preflight the server never grants), at most {@link MAX_BODY_BYTES}
 * (413), well-formed and not nested too deep (400 naming where).
 */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  const [media, ...params] = type.split(';').map((s) => s.trim());
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length);
  if (media !== 'application/json' || (charset !== undefined && charset !== 'utf-8')) {
    throw new HttpError(415, `a write needs Content-Type: application/json (UTF-8), got ${JSON.stringify(req.headers['content-type'] ?? '')}`, 'content-type');
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) throw new HttpError(413, `request body of ${declared} bytes is over the limit of ${MAX_BODY_BYTES}`, 'body');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body is over the limit of ${MAX_BODY_BYTES} bytes`, 'body');
    chunks.push(chunk);
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    throw new HttpError(400, `request body is not valid JSON: ${(error as Error).message}`, 'body');
  }
  const deep = nestingProblem(value);
  if (deep) throw new HttpError(400, `request body: ${deep.path}: ${deep.message}`, 'body');
  return value;
}
