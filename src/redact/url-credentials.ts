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

/**
 * A path segment (or host label) made of lower-case words (`production-gateway`): a name, not a token. A word has at
 * most 12 letters: a long run of letters alone (`kqzvhtpwmxbnrjdfyglc`) is a token.
 */
const WORDS = /^[a-z]{1,12}(?:[-_.][a-z]{1,12})*$/;

/**
 * `url` as messages show it: scheme, host and path, with each path segment and host label that looks like a token
 * (but the host's last two labels), every query value and every query name that looks like a token replaced by
 * `***`; no user name, password or fragment. `http://127.0.0.1:3000/mcp` is shown as it
 * is.
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
  const query = queryEntries(parsed.search)
    .map(({ name, value }) => {
      const shown = looksLikeTokenName(name) ? MASK : encodeURIComponent(name);
      return value === undefined ? shown : `${shown}=${MASK}`;
    })
    .join('&');
  const host = hostLabels(parsed.hostname)
    .map(({ label, named }) => (!named && looksLikeToken(label) ? MASK : label))
    .join('.');
  return `${parsed.protocol}//${host}${parsed.port === '' ? '' : `:${parsed.port}`}${path}${query === '' ? '' : `?${query}`}`;
}

/** The entries of a URL's query (`?a=1&b`): each name, and its value as written (undefined for an entry without `=`). */
function queryEntries(search: string): { name: string; value: string | undefined }[] {
  const out: { name: string; value: string | undefined }[] = [];
  for (const pair of search.slice(1).split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    // Form encoding: '+' is a space.
    out.push(at < 0 ? { name: decoded(pair.replaceAll('+', ' ')), value: undefined } : { name: decoded(pair.slice(0, at).replaceAll('+', ' ')), value: pair.slice(at + 1) });
  }
  return out;
}

/**
 * The labels of a host name, each marked `named` when it is one of the last two (the registrable name, roughly:
 * `example.com`) or the host is an IP address: those name the server, the others may carry a tenant's token.
 */
function hostLabels(hostname: string): { label: string; named: boolean }[] {
  const labels = hostname.split('.');
  const ip = /^[\d.]+$/.test(hostname) || hostname.startsWith('[');
  return labels.map((label, i) => ({ label, named: ip || i >= labels.length - 2 }));
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
  for (const { name, value } of queryEntries(parsed.search)) {
    // A name that looks like a token is one (`?<token>`, `?<token>=1`).
    if (looksLikeTokenName(name)) out.push(['query', name]);
    if (value === undefined) continue;
    out.push([name === '' ? 'query' : name, value]);
    const plain = decoded(value.replaceAll('+', ' '));
    if (plain !== value) out.push([name, plain]);
  }
  for (const segment of parsed.pathname.split('/')) {
    if (looksLikeToken(decoded(segment))) both('path', segment);
  }
  for (const { label, named } of hostLabels(parsed.hostname)) if (!named && looksLikeToken(label)) out.push(['host', label]);
  return out;
}

function looksLikeToken(segment: string): boolean {
  return segment.length >= MIN_PATH_TOKEN_LENGTH && !WORDS.test(segment);
}

/**
 * Whether a query name is a token: as {@link looksLikeToken}, but not words joined as parameter names are
 * (`X-Amz-SignedHeaders`, `includeDeprecatedTools`, `MaxResultsPerPage`: see {@link NAME_WORDS}).
 */
function looksLikeTokenName(name: string): boolean {
  return looksLikeToken(name) && !NAME_WORDS.test(name);
}

/**
 * Words of 3 to 14 letters, joined by `-`, `_`, `.` or a capital (`X` alone may lead: `X-Amz-Credential`; an
 * upper-case word between separators: `X-AMZ-DATE`). A longer run of letters is no word (`kqzvhtpwmxbnrjdfyglc`).
 */
const NAME_WORDS = /^(?:[A-Za-z](?=[-_.])|[A-Za-z][a-z]{2,13})(?:[-_.]?[A-Z][a-z]{2,13}|[-_.][A-Za-z][a-z]{2,13}|[-_.][A-Z]{2,}(?=[-_.]|$))*$/;

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
