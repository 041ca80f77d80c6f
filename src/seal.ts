import { hardenClass } from './harden.js';

/**
 * Freezes what the package exports (README: threat model). Node code imports the package too, and reaches the
 * library's classes through any object it is handed (`Object.getPrototypeOf(node)`, `handle.constructor`): were they
 * open, it could rewrite what the library runs for the owner and for other nodes (a loader's `loadFlow`, a store's
 * `appendBatch`, a node class's `prep`, an error class's `Symbol.hasInstance`), or the constants it reads
 * (`StreamEventType`, `FlowAction`). So every exported class is hardened (its prototype and the class itself: see
 * harden.ts, which keeps instances free to own properties named like methods), every exported function frozen, and
 * every exported constant at every depth (plain objects, arrays, and the library's own instances such as
 * `defaultFlowLoader`; RegExps aside, whose `lastIndex` their methods write). Zod schemas are left as they are: zod fills their caches on
 * first use, and they are zod's objects, outside the guarantee as built-ins are.
 *
 * Called once by each entry point of the package (`index.ts`, `langgraph/index.ts`) with its own namespace, before
 * any code that imports it runs. Nothing else of the package imports this module.
 */
export function sealPublicApi(api: Readonly<Record<string, unknown>>): void {
  const seen = new Set<object>();
  for (const value of Object.values(api)) seal(value, seen);
}

function seal(value: unknown, seen: Set<object>): void {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) return;
  seen.add(value);
  if (isZodSchema(value)) return;
  if (typeof value === 'function') {
    const prototype = (value as { prototype?: unknown }).prototype;
    if (prototype !== null && typeof prototype === 'object') hardenClass(value as abstract new () => unknown);
    else Object.freeze(value);
    return;
  }
  // A RegExp keeps its `lastIndex` in a property its own methods write: a frozen one throws in `test` and `replace`
  // (with the `g` flag). The exported ones are copies the library does not read (see redact/patterns.ts).
  if (value instanceof RegExp) return;
  Object.freeze(value);
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key)!;
    if ('value' in descriptor) seal(descriptor.value, seen);
  }
}

/** A zod schema (zod 4 keeps its internals under `_zod`). */
function isZodSchema(value: object): boolean {
  return '_zod' in value;
}
