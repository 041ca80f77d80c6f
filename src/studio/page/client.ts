/**
 * The page's side of the studio API: the studio's token, typed GETs and POSTs that carry it, and the route in the
 * location hash.
 */
import type { RunTrace } from '../../cli/backpackflow/trace.js';
import type { BlameReport, DiffReport, StateReport } from '../../cli/backpackflow/inspect.js';
import type { ContextNodeView, ContextSummary } from '../context-reader.js';
import type { EventsPageResult, MemoryHit, RunDetail, RunSummary, StepRange, TracePage } from '../run-reader.js';
import type { SteerInfo, SteerJob } from '../steer.js';

export type { BlameReport, ContextNodeView, ContextSummary, DiffReport, EventsPageResult, MemoryHit, RunDetail, RunSummary, RunTrace, StateReport, StepRange, SteerInfo, SteerJob, TracePage };

/** What `/api/runs/:id` answers: the run, how the studio could steer it, and its latest studio job. */
export interface RunPage extends RunDetail {
  steer: SteerInfo;
  job: SteerJob | null;
}

/** What `/api/info` tells the page. */
export interface StudioInfo {
  version: string;
  /** Where the runs are: `'files'` (a data directory) or `'postgres'`. */
  store: 'files' | 'postgres';
  /** The data directory, or the database URL without its password. */
  location: string;
  session: string | null;
  sessions: string[];
  eventTypes: string[];
  tokenRequired: boolean;
  /** Whether this page holds the studio's token (it may answer, resume and fork). */
  canWrite: boolean;
  /** The workspace of the Context view, or null. */
  workspace: string | null;
}

/** An API error: the server's message (it names the parameter that was wrong). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Where the token lives while this tab lives: sessionStorage is kept per origin (port included) and per tab. */
const TOKEN_KEY = 'bpf-studio-token';
let token: string | undefined;

/**
 * Takes the studio's token from the address the page was opened with (`?token=`, the URL the studio printed), and
 * takes it out of the address bar and history; without one, the token this tab was given before (a reload). It is
 * kept in memory and sessionStorage, never in a cookie (browsers send cookies to every port of the host), and sent
 * only as `Authorization: Bearer` to this page's own origin. Call it once, before any request.
 */
export function adoptToken(): void {
  const params = new URLSearchParams(location.search);
  const given = params.get('token');
  try {
    if (given === null) token = sessionStorage.getItem(TOKEN_KEY) ?? undefined;
    else if (given === '') sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, given);
  } catch {
    // storage may be off: a token from the address lasts for this page
  }
  if (given === null) return;
  token = given || undefined;
  params.delete('token');
  const qs = params.toString();
  history.replaceState(history.state, '', `${location.pathname}${qs ? `?${qs}` : ''}${location.hash}`);
}

function withToken(headers: Record<string, string>): Record<string, string> {
  return token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` };
}

/**
 * The URL of a server-sent events stream. An EventSource cannot send headers, so when reads need the token (a
 * studio off loopback) it goes in the query, as in the URL the studio printed; on loopback it is left out.
 */
export function streamUrl(path: string, query: Record<string, string | number>, tokenRequired: boolean): string {
  const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
  if (tokenRequired && token !== undefined) params.set('token', token);
  return `${path}?${params.toString()}`;
}

/** GET `path` (with `query`, empty values left out) as JSON; throws an {@link ApiError} with the server's message. */
export async function getJson<T>(path: string, query: Record<string, string | number | undefined> = {}, signal?: AbortSignal): Promise<T> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  const res = await fetch(`${path}${qs ? `?${qs}` : ''}`, { headers: withToken({ accept: 'application/json' }), signal });
  const body = (await res.json().catch(() => ({ error: `${res.status} ${res.statusText}` }))) as T & { error?: string };
  if (!res.ok) throw new ApiError(res.status, body.error ?? `${res.status} ${res.statusText}`);
  return body;
}

/** What a write answered: its status and body (`error`, `problems`, `command` when refused; `job` when done). */
export interface WriteReply {
  status: number;
  body: { job?: SteerJob; error?: string; problems?: Array<{ path: string; message: string }>; command?: string };
}

/** POSTs `body` as JSON with the token; never throws for an answer the server gave. */
export async function postJson(path: string, query: Record<string, string>, body: unknown): Promise<WriteReply> {
  const qs = new URLSearchParams(query).toString();
  const res = await fetch(`${path}${qs ? `?${qs}` : ''}`, { method: 'POST', headers: withToken({ 'content-type': 'application/json', accept: 'application/json' }), body: JSON.stringify(body) });
  const parsed = (await res.json().catch(() => ({ error: `${res.status} ${res.statusText}` }))) as WriteReply['body'];
  return { status: res.status, body: parsed };
}

/** The API path of a run (ids are validated by the server; encoded here so any text is sent as one segment). */
export function runPath(runId: string, view = ''): string {
  return `/api/runs/${encodeURIComponent(runId)}${view ? `/${view}` : ''}`;
}

export { parseHash, runHash, type Route } from './route.js';

/** `0.42ms`, `12.5ms`, `1.50s`, `2m 5s`. */
export function formatMs(ms: number | null | undefined): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  if (ms < 1) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${ms.toFixed(1)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`;
  return `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`;
}

/** A run's duration; a lower bound (a segment cut short by a killed writer, or still running) as `≥ 945.0ms`. */
export function formatDuration(ms: number | null | undefined, lowerBound: boolean): string {
  const text = formatMs(ms);
  return lowerBound && text !== '' ? `≥ ${text}` : text;
}

/** A timestamp as local date and time. */
export function formatTime(ms: number | undefined): string {
  if (typeof ms !== 'number' || ms <= 0) return '';
  return new Date(ms).toLocaleString();
}
