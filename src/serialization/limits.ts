import { pointer, type ConfigProblem } from './errors.js';

/**
 * Deepest nesting of arrays and objects accepted in a flow config and in a run's input. Everything that later walks
 * these values (validation, redaction, the Backpack's clone and freeze, the value codec) recurses; this bound keeps
 * all of them far from the stack limit, so that what validates also runs.
 */
export const MAX_JSON_NESTING = 512;

/** Largest flow config text accepted by default (16 MiB); raise it with the `maxBytes` option or `--max-flow-bytes`. */
export const DEFAULT_MAX_FLOW_BYTES = 16 * 1024 * 1024;

/** `text` without a leading UTF-8 byte order mark (editors on Windows write one; JSON.parse rejects it). */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

interface Frame {
  readonly node: object;
  readonly key: string;
  keys: string[] | undefined;
  i: number;
}

/** A JSON pointer shortened for messages: its first segments, how many are left out, and its last one. */
function shortPointer(path: readonly string[]): string {
  if (path.length <= 12) return pointer(path);
  return `${pointer(path.slice(0, 8))}/…(${path.length - 9} more)…${pointer(path.slice(-1))}`;
}

/**
 * The problem of `value` nesting arrays and objects more than `limit` levels deep (the value itself is level 1), or
 * undefined. The walk is iterative and stops at the first container past the limit, so any depth is safe to check;
 * the problem's path is a JSON pointer to that container (shortened when long) and its message names the limit.
 */
export function nestingProblem(value: unknown, limit = MAX_JSON_NESTING): ConfigProblem | undefined {
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

/** The problem of a flow config text longer than `maxBytes` (UTF-8), or undefined. */
export function sizeProblem(bytes: number, maxBytes: number, source: string): ConfigProblem | undefined {
  if (bytes <= maxBytes) return undefined;
  return { path: '', message: `${source} is ${bytes} bytes, over the limit of ${maxBytes} bytes; raise the limit (option maxBytes, or --max-flow-bytes) if it is meant to be that large` };
}
