import type { ConfigProblem } from './errors.js';

// The nesting bound is the one for every value that comes from outside (flow configs, run inputs, tool arguments).
export { MAX_JSON_NESTING, nestingProblem } from '../backpack/nesting.js';

/** Largest flow config text accepted by default (16 MiB); raise it with the `maxBytes` option or `--max-flow-bytes`. */
export const DEFAULT_MAX_FLOW_BYTES = 16 * 1024 * 1024;

/** `text` without a leading UTF-8 byte order mark (editors on Windows write one; JSON.parse rejects it). */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The problem of a flow config text longer than `maxBytes` (UTF-8), or undefined. */
export function sizeProblem(bytes: number, maxBytes: number, source: string): ConfigProblem | undefined {
  if (bytes <= maxBytes) return undefined;
  return { path: '', message: `${source} is ${bytes} bytes, over the limit of ${maxBytes} bytes; raise the limit (option maxBytes, or --max-flow-bytes) if it is meant to be that large` };
}
