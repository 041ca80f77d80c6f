/**
 * The credentials a URL carries: its user name and password, its query values and the path segments that look like
 * tokens (hosted services such as MCP servers put one in the path). {@link urlCredentials} lists them (for a node
 * that removes them from what it emits), {@link maskUrlCredentials} shows the URL without them (in messages, and
 * where a param marked `.meta({ secret: 'url' })` is masked: see nodes/secret-params.ts).
 *
 * @module
 */

/** What a credential is replaced with in a masked URL. */
const MASK = '***';

/** Fewest characters of a URL path segment that may be a token (hosted MCP servers put one in the path). */
const MIN_PATH_TOKEN_LENGTH = 16;

/** A path segment made of lower-case words (`production-gateway`): a name, not a token. */
const WORDS = /^[a-z]+(?:[-_.][a-z]+)*$/;

/**
 * `url` as messages show it: scheme, host and path, with each path segment that looks like a token and every query
 * value replaced by `***`; no user name, password or fragment. `http://127.0.0.1:3000/mcp` is shown as it is.
 */
export function maskUrlCredentials(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return MASK;
  }
  const path = parsed.pathname
    .split('/')
    .map((segment) => (looksLikeToken(decoded(segment)) ? MASK : segment))
    .join('/');
  const query = [...parsed.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=${MASK}`).join('&');
  return `${parsed.protocol}//${parsed.host}${path}${query === '' ? '' : `?${query}`}`;
}

/** The name and value of each credential in `url` (user name, password, query values, token-like path segments). */
export function urlCredentials(url: string): Array<[string, string]> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const out: Array<[string, string]> = [];
  const both = (name: string, raw: string): void => {
    out.push([name, raw]);
    const plain = decoded(raw);
    if (plain !== raw) out.push([name, plain]);
  };
  if (parsed.username !== '') both('username', parsed.username);
  if (parsed.password !== '') both('password', parsed.password);
  for (const pair of parsed.search.slice(1).split('&')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    // Form encoding: '+' is a space.
    const name = decoded(pair.slice(0, at).replaceAll('+', ' '));
    const raw = pair.slice(at + 1);
    out.push([name, raw]);
    const plain = decoded(raw.replaceAll('+', ' '));
    if (plain !== raw) out.push([name, plain]);
  }
  for (const segment of parsed.pathname.split('/')) {
    if (looksLikeToken(decoded(segment))) both('path', segment);
  }
  return out;
}

function looksLikeToken(segment: string): boolean {
  return segment.length >= MIN_PATH_TOKEN_LENGTH && !WORDS.test(segment);
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
