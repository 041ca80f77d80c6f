import { types } from 'node:util';

/**
 * Raised by a flow for problems of the flow itself: no entry node, step limit exceeded, a missing route under
 * `onMissingRoute: 'throw'`, a node added twice.
 */
export class FlowError extends Error {
  override name = 'FlowError';
}

/**
 * An exec failure after the last retry: names the node and the attempt, and keeps the original error as `cause`.
 */
export class NodeExecutionError extends Error {
  override name = 'NodeExecutionError';
  constructor(
    /** Id of the node whose exec failed. */
    readonly nodeId: string,
    /** The attempt that failed last (1-based). */
    readonly attempt: number,
    /** Total attempts the node allows (`maxRetries`). */
    readonly maxAttempts: number,
    cause: unknown,
  ) {
    // Made in the execution of the node whose exec failed, which may be a composite whose part threw `cause`: its
    // text is read without running code of it (see describeThrown).
    super(`Node '${nodeId}' failed on attempt ${attempt} of ${maxAttempts}: ${describeThrown(cause).message}`, { cause });
  }
}

/**
 * Not a failure: a node stopping its run on purpose (a pause for a person, DESIGN D16). Exec is not retried and
 * `execFallback` does not run for it; flows pass it up unchanged, so the run ends where it stopped.
 */
export class FlowSignal extends Error {
  override name = 'FlowSignal';
}

/**
 * Built-in accessors that read only internal slots, safe to call on any object: DOMException's `name`, `message` and
 * `code` (an aborted `fetch` throws one).
 */
const BUILT_IN_GETTERS: ReadonlySet<unknown> = new Set(
  typeof DOMException === 'function' ? ['name', 'message', 'code'].map((key) => Object.getOwnPropertyDescriptor(DOMException.prototype, key)?.get).filter((get) => get !== undefined) : [],
);

/**
 * True when reading `value` could run code through a Proxy: it is one, or one is on its prototype chain (where
 * `instanceof` would call its trap). Runs no code of `value`. Not exported from the package.
 */
export function reachesProxy(value: unknown): boolean {
  for (let o: unknown = value, depth = 0; o !== null && (typeof o === 'object' || typeof o === 'function'); o = Object.getPrototypeOf(o), depth++) {
    if (types.isProxy(o) || depth > 10_000) return true;
  }
  return false;
}

/**
 * Property `key` of `value` (its own, or inherited) when it is a data property, read without running code of `value`:
 * undefined when the property is missing, is an accessor (other than a built-in one of {@link BUILT_IN_GETTERS}), or
 * a Proxy is met on the way. For values the library reads outside the execution of the node they came from (a
 * thrown error, read by the composite it passes through): a getter there would run in that other execution. Not
 * exported from the package.
 */
export function dataProperty(value: unknown, key: PropertyKey): unknown {
  for (let o: unknown = value, depth = 0; o !== null && (typeof o === 'object' || typeof o === 'function') && depth < 10_000; o = Object.getPrototypeOf(o), depth++) {
    if (types.isProxy(o)) return undefined;
    const descriptor = Object.getOwnPropertyDescriptor(o, key);
    if (descriptor === undefined) continue;
    if ('value' in descriptor) return descriptor.value;
    if (!BUILT_IN_GETTERS.has(descriptor.get)) return undefined;
    try {
      return descriptor.get!.call(value);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * The name and message of a thrown value, as strings, read without running code of it (no getter, Proxy trap or
 * `toString`): an Error's `name` and `message` data properties (`'Error'` and `''` when they are not strings); any
 * other object's `message` if it holds a string, else `'[object Object]'` (or `'[object Array]'`); a primitive's
 * `String` form. Not exported from the package (`describeError` is its public name).
 */
export function describeThrown(error: unknown): { name: string; message: string } {
  if (error === null || (typeof error !== 'object' && typeof error !== 'function')) return { name: 'Error', message: String(error) };
  const name = dataProperty(error, 'name');
  const message = dataProperty(error, 'message');
  if (!reachesProxy(error) && error instanceof Error) return { name: typeof name === 'string' ? name : 'Error', message: typeof message === 'string' ? message : '' };
  return { name: 'Error', message: typeof message === 'string' ? message : Array.isArray(error) ? '[object Array]' : typeof error === 'function' ? '[function]' : '[object Object]' };
}
