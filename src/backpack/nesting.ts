/**
 * How deep a JSON-like value may nest, and JSON pointers to say where: one bound for everything that reaches the
 * library from outside (flow configs, run inputs, interrupt answers, a model's tool-call arguments). Everything that
 * later walks such values (validation, redaction, the Backpack's clone and freeze, the value codec, the AI SDK's
 * copies) recurses; this bound keeps all of them far from the stack limit, so that what validates also runs.
 *
 * @module
 */

/** Deepest nesting of arrays and objects accepted in a flow config, a run's input and a tool call's arguments. */
export const MAX_JSON_NESTING = 512;

/** The JSON pointer (RFC 6901) of a path: `/a/0/b~1c`; '' for the root. */
export function jsonPointer(path: readonly PropertyKey[]): string {
  return path.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** A JSON pointer shortened for messages: its first segments, how many are left out, and its last one. */
function shortPointer(path: readonly string[]): string {
  if (path.length <= 12) return jsonPointer(path);
  return `${jsonPointer(path.slice(0, 8))}/…(${path.length - 9} more)…${jsonPointer(path.slice(-1))}`;
}

interface Frame {
  readonly node: object;
  readonly key: string;
  keys: string[] | undefined;
  i: number;
}

/**
 * The problem of `value` nesting arrays and objects more than `limit` levels deep (the value itself is level 1), or
 * undefined. The walk is iterative and stops at the first container past the limit, so any depth is safe to check;
 * the problem's path is a JSON pointer to that container (shortened when long) and its message names the limit.
 */
export function nestingProblem(value: unknown, limit = MAX_JSON_NESTING): { path: string; message: string } | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const stack: Frame[] = [{ node: value, key: '', keys: undefined, i: 0 }];
  // A value that contains itself is not deep but circular: not followed here (the config checks name the cycle).
  const ancestors = new Set<object>([value]);
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const array = Array.isArray(top.node);
    const keys = array ? undefined : (top.keys ??= Object.keys(top.node));
    const length = array ? (top.node as unknown[]).length : keys!.length;
    if (top.i >= length) {
      ancestors.delete(stack.pop()!.node);
      continue;
    }
    const key = array ? String(top.i) : keys![top.i]!;
    top.i++;
    const child = (top.node as Record<string, unknown>)[key];
    if (child === null || typeof child !== 'object' || ancestors.has(child)) continue;
    if (stack.length >= limit) {
      const path = [...stack.slice(1).map((f) => f.key), key];
      return { path: shortPointer(path), message: `nested more than ${limit} levels deep (the limit is ${limit} levels of arrays and objects)` };
    }
    stack.push({ node: child, key, keys: undefined, i: 0 });
    ancestors.add(child);
  }
  return undefined;
}
