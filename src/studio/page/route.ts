/**
 * The page's routes and their location hashes (no DOM: tested on its own). Every hash gives a route: one the page
 * does not know, or a link typed by hand with a malformed escape, is the runs table.
 */

/** Where the page is: the runs table, a run (with a tab and its parameters), memory, or the workspace's context. */
export type Route =
  | { page: 'runs' }
  | { page: 'memory'; q: string }
  | { page: 'context'; path: string }
  | { page: 'run'; session: string; runId: string; tab: string; params: URLSearchParams };

/**
 * Parses `#/runs/<session>/<runId>?tab=state&step=3`, `#/memory?q=...`, or anything else (a malformed escape
 * included: a link typed or pasted by hand) as the runs table.
 */
export function parseHash(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(query);
  let parts: string[];
  try {
    parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return { page: 'runs' };
  }
  if (parts[0] === 'runs' && parts.length === 3) return { page: 'run', session: parts[1]!, runId: parts[2]!, tab: params.get('tab') ?? 'trace', params };
  if (parts[0] === 'memory') return { page: 'memory', q: params.get('q') ?? '' };
  if (parts[0] === 'context') return { page: 'context', path: params.get('path') ?? '' };
  return { page: 'runs' };
}

/** The hash of a run's view. */
export function runHash(session: string, runId: string, tab?: string, extra: Record<string, string | number> = {}): string {
  const params = new URLSearchParams();
  if (tab) params.set('tab', tab);
  for (const [k, v] of Object.entries(extra)) params.set(k, String(v));
  const qs = params.toString();
  return `#/runs/${encodeURIComponent(session)}/${encodeURIComponent(runId)}${qs ? `?${qs}` : ''}`;
}
