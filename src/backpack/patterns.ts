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
  return (namespace) => matchSegments(segments, 0, namespace.split('.'), 0);
}

function matchSegments(pattern: string[], pi: number, parts: string[], si: number): boolean {
  while (pi < pattern.length) {
    const seg = pattern[pi];
    if (seg === '**') {
      // Zero or more whole segments: try every split point (patterns are short, so this stays cheap).
      for (let k = si; k <= parts.length; k++) {
        if (matchSegments(pattern, pi + 1, parts, k)) return true;
      }
      return false;
    }
    if (si >= parts.length) return false;
    const part = parts[si]!;
    if (seg === '*' ? part === '' : seg !== part) return false;
    pi++;
    si++;
  }
  return si === parts.length;
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
