/**
 * Namespace patterns (DESIGN D5): one compiled, cached matcher serves access control, namespace queries and
 * event subscriptions.
 *
 * A pattern is split on `.` into segments. `*` matches exactly one non-empty segment, `**` matches zero or more
 * whole segments, anything else matches that segment literally. `sales.*` matches `sales.chat` but neither `sales`,
 * `sales.` nor `sales.chat.x`; `sales.**` matches `sales`, `sales.chat` and `sales.chat.x`. Keys and namespaces never
 * have an empty segment ({@link checkSegments} rejects them when they are packed or assigned).
 */

/** A compiled namespace pattern. */
export type NamespaceMatcher = (namespace: string) => boolean;

const cache = new Map<string, NamespaceMatcher>();
const CACHE_LIMIT = 1024;

function compile(pattern: string): NamespaceMatcher {
  const segments = pattern.split('.');
  if (!segments.includes('*') && !segments.includes('**')) {
    return (namespace) => namespace === pattern;
  }
  if (segments.length === 1 && segments[0] === '**') return () => true;
  return (namespace) => matchSegments(segments, namespace.split('.'));
}

/**
 * Whether the segments `parts` match the pattern's: wildcard matching over segments, where `**` matches any run of
 * whole segments and every other pattern segment exactly one. Greedy, with a retry from the last `**` only (the
 * other `**` before it can stay as they matched): at most patterns × parts steps. Trying every split point of every
 * `**` instead took exponential time, and a pattern is caller input (a Studio query of 400 `**` held the server for
 * 107 s).
 */
function matchSegments(pattern: readonly string[], parts: readonly string[]): boolean {
  let pi = 0;
  let si = 0;
  /** The last `**` seen, and the first segment it has not yet taken. */
  let star = -1;
  let resume = 0;
  while (si < parts.length) {
    const seg = pattern[pi];
    if (seg === '**') {
      star = pi++;
      resume = si;
    } else if (seg !== undefined && (seg === '*' ? parts[si] !== '' : seg === parts[si])) {
      pi++;
      si++;
    } else if (star >= 0) {
      // The last `**` takes one segment more, and what follows it is matched again from there.
      pi = star + 1;
      si = ++resume;
    } else return false;
  }
  while (pattern[pi] === '**') pi++;
  return pi === pattern.length;
}

/** Returns the cached matcher for `pattern`, compiling it on first use. */
export function compileNamespacePattern(pattern: string): NamespaceMatcher {
  let matcher = cache.get(pattern);
  if (!matcher) {
    if (cache.size >= CACHE_LIMIT) cache.clear();
    matcher = compile(pattern);
    cache.set(pattern, matcher);
  }
  return matcher;
}

/** True when `namespace` matches `pattern` (see {@link compileNamespacePattern}). */
export function matchesNamespace(pattern: string, namespace: string): boolean {
  return compileNamespacePattern(pattern)(namespace);
}

/** True when `namespace` matches at least one of `patterns`. */
export function matchesAnyNamespace(patterns: readonly string[], namespace: string): boolean {
  for (const p of patterns) if (compileNamespacePattern(p)(namespace)) return true;
  return false;
}

/**
 * Checks that `name` (a key or namespace) is a non-empty string of dot-separated, non-empty segments, so that no
 * `*` can match an empty part of it (`sales.`, `a..b`, `.x` are refused). Throws `make(message)` naming it.
 */
export function checkSegments(name: unknown, what: string, make: (message: string) => Error): asserts name is string {
  if (typeof name !== 'string' || name === '') {
    throw make(`${what} must be a non-empty string, got ${typeof name === 'string' ? 'an empty string' : String(name)}`);
  }
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..')) {
    throw make(`${what} '${name}' has an empty segment (a leading, trailing or double '.'): segments are separated by single dots`);
  }
}
