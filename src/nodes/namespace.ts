/**
 * Namespace composition (DESIGN D4, tech spec decision 5): nodes define a segment, flows compose full paths.
 */

const SEGMENT = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
const ONE_SEGMENT = /^[A-Za-z0-9_-]+$/;

/** Checks a node's namespace segment: exactly one part of letters, digits, `_` and `-` (no dot). */
export function checkSegment(value: unknown, what: string): string {
  if (typeof value !== 'string' || !ONE_SEGMENT.test(value)) {
    throw new TypeError(`${what} must be one segment of letters, digits, '_' or '-' (no '.', no '*'); got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Full namespace of a segment under a parent: `parent.segment`, or just `segment` when the parent is empty. */
export function composeNamespace(parent: string | undefined, segment: string): string {
  return parent ? `${parent}.${segment}` : segment;
}

/**
 * Checks a namespace or segment: dot-separated parts of letters, digits, `_` and `-`; no empty part, so never a
 * leading, trailing or double dot, and no pattern characters. Returns it, or throws naming `what`.
 */
export function checkNamespace(value: unknown, what: string): string {
  if (typeof value !== 'string' || !SEGMENT.test(value)) {
    throw new TypeError(
      `${what} must be dot-separated parts of letters, digits, '_' or '-' (no leading, trailing or double dot, no '*'); got ${JSON.stringify(value)}`,
    );
  }
  return value;
}
