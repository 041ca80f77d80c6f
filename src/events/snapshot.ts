/**
 * Copies of events (or their payloads) for code that must not change them: node code (DESIGN D6, D12). The streamer
 * hands the owner's subscribers, its history and the durable runtime one event object each; a node gets a copy of its
 * own instead, made when it asks (see nodes/event-view.ts), so that nothing a node holds is an object anyone else
 * reads. Found by the adversarial review of 2026-11-28: a node that kept the object its `emit` returned, or one its
 * subscriber got, could rewrite it into another node's `node.completed` or a `checkpoint.saved` before the step's
 * batch was written.
 */
import { types } from 'node:util';

/**
 * A copy of `value` that shares no object a caller could change with it, taken from the one who hands it over (a
 * node's own payload, at emit, in its own execution): plain objects and arrays are copied member by member and frozen
 * (a `__proto__` key stays an own key, as in the original); Maps, Sets, Dates, typed arrays and ArrayBuffers are
 * copied (`Object.freeze` does not freeze their contents, so each copy is its holder's own); an instance of another
 * class (or a Proxy that claims to be one) becomes its JSON form, taken now and copied as data (the log records events
 * as JSON anyway): so nothing its holder changes, and no trap or `toJSON` that runs later, changes the copy. One whose
 * JSON form cannot be taken (a cycle through it, a BigInt) becomes its own data properties, as {@link copyData} takes
 * them. Functions are left out (JSON leaves them out too). Cycles of plain data stay cycles; getters are read once,
 * into data properties. So the copy is data only: nothing in it runs code of its holder's when it is read later. Any
 * depth: the copy uses a work list, not recursion (the store then decides what it can write: the redaction pass
 * refuses a value nested over 5,000 levels, naming it).
 */
export function snapshot<T>(value: T): T {
  return copy(value, false);
}

/**
 * A copy of `value`, as {@link snapshot}, that runs no code of the value: for what the library holds, handed to a
 * reader in the reader's execution (a node reading the event history). Only data properties are copied: an accessor
 * (getter) becomes undefined, a Proxy and a function are left out (undefined), an instance of a class other than
 * Map, Set, Date, a typed array or ArrayBuffer becomes a plain object of its own enumerable data properties, and no
 * `toJSON` runs. The library's own events hold only data, so for them this is the same copy as `snapshot`'s; anything
 * else that reached an event (an object node code slipped past a check) is never run in the reader's execution.
 */
export function copyData<T>(value: T): T {
  return copy(value, true);
}

/** `%TypedArray%.prototype[Symbol.toStringTag]`: the name of a typed array's class, from its internal slot (no code of it runs). */
const typedArrayName = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag)!.get as (this: unknown) => string | undefined;
const TYPED_ARRAYS: Readonly<Record<string, new (from: ArrayBufferView) => ArrayBufferView>> = Object.freeze({
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array,
});

/** The value of `object`'s own property `key` if it is a data property; undefined for an accessor or none. */
function dataOf(object: object, key: PropertyKey): unknown {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  return descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined;
}

/** {@link snapshot} (`inert` false: reads as its holder's code would) or {@link copyData} (`inert`: runs no code of `value`). */
function copy<T>(value: T, inert: boolean): T {
  if (typeof value === 'function') return undefined as T;
  if (value === null || typeof value !== 'object') return value;
  const seen = new Map<object, unknown>();
  /** Tasks, last in first out: each sets one member of a copy, or freezes a copy once its members are set. */
  const work: (() => void)[] = [];
  const copyOf = (member: unknown): unknown => {
    if (typeof member === 'function') return undefined;
    if (member === null || typeof member !== 'object') return member;
    return seen.has(member) ? seen.get(member) : inert ? inertShell(member) : shell(member);
  };
  /** A frozen plain copy of `original`'s own enumerable members, read by `read` (filled by tasks on `work`). */
  const plain = (original: object, proto: null | object, read: (key: string) => unknown): Record<string, unknown> => {
    const out: Record<string, unknown> = proto === null ? Object.create(null) : {};
    seen.set(original, out);
    const keys = Object.keys(original);
    fill(keys.length, (i) => {
      const key = keys[i]!;
      const member = copyOf(read(key));
      if (key === '__proto__') Object.defineProperty(out, key, { value: member, enumerable: true, writable: true, configurable: true });
      else out[key] = member;
    }, () => Object.freeze(out));
    return out;
  };
  /** A new copy of `original`, empty; tasks on `work` fill its members in order. */
  const shell = (original: object): unknown => {
    if (Array.isArray(original)) {
      const out: unknown[] = new Array(original.length);
      seen.set(original, out);
      fill(original.length, (i) => (out[i] = copyOf(original[i])), () => Object.freeze(out));
      return out;
    }
    const proto = Object.getPrototypeOf(original) as unknown;
    if (proto === Object.prototype || proto === null) return plain(original, proto, (key) => (original as Record<string, unknown>)[key]);
    if (original instanceof Map) {
      const out = new Map<unknown, unknown>();
      seen.set(original, out);
      const entries = [...original];
      fill(entries.length, (i) => out.set(copyOf(entries[i]![0]), copyOf(entries[i]![1])));
      return out;
    }
    if (original instanceof Set) {
      const out = new Set<unknown>();
      seen.set(original, out);
      const items = [...original];
      fill(items.length, (i) => out.add(copyOf(items[i])));
      return out;
    }
    if (original instanceof Date) return new Date(original.getTime());
    if (ArrayBuffer.isView(original) && !(original instanceof DataView)) return (original as unknown as { slice(): unknown }).slice();
    if (original instanceof ArrayBuffer) return original.slice(0);
    let form: unknown;
    try {
      form = JSON.parse(JSON.stringify(original) ?? 'null');
    } catch {
      // No JSON form: its own data properties, taken without running anything more of it.
      return inertShell(original);
    }
    const copied = form === null || typeof form !== 'object' ? form : shell(form);
    seen.set(original, copied);
    return copied;
  };
  /**
   * A new copy of `original` as {@link copyData} takes it: every check here reads internal slots or own property
   * descriptors (of an object that is not a Proxy), so no getter, trap, `toJSON` or method of `original` runs.
   */
  const inertShell = (original: object): unknown => {
    if (types.isProxy(original)) {
      seen.set(original, undefined);
      return undefined;
    }
    if (Array.isArray(original)) {
      const length = original.length;
      const out: unknown[] = new Array(length);
      seen.set(original, out);
      fill(length, (i) => (out[i] = copyOf(dataOf(original, i))), () => Object.freeze(out));
      return out;
    }
    if (types.isMap(original)) {
      const out = new Map<unknown, unknown>();
      seen.set(original, out);
      const entries: [unknown, unknown][] = [];
      Map.prototype.forEach.call(original, (v: unknown, k: unknown) => entries.push([k, v]));
      fill(entries.length, (i) => out.set(copyOf(entries[i]![0]), copyOf(entries[i]![1])));
      return out;
    }
    if (types.isSet(original)) {
      const out = new Set<unknown>();
      seen.set(original, out);
      const items: unknown[] = [];
      Set.prototype.forEach.call(original, (v: unknown) => items.push(v));
      fill(items.length, (i) => out.add(copyOf(items[i])));
      return out;
    }
    if (types.isDate(original)) return new Date(Date.prototype.getTime.call(original));
    if (types.isTypedArray(original)) {
      const Typed = TYPED_ARRAYS[typedArrayName.call(original) ?? ''];
      if (Typed !== undefined) return new Typed(original);
    }
    if (types.isArrayBuffer(original)) return new Uint8Array(original).slice().buffer;
    const proto = Object.getPrototypeOf(original) as object | null;
    return plain(original, proto === null ? null : Object.prototype, (key) => dataOf(original, key));
  };
  /**
   * Queues `set(0)` ... `set(count - 1)`, then `done`: each member is set before the next one (so a copied object
   * lists its keys in the original's order), after what the previous member queued (depth first).
   */
  const fill = (count: number, set: (i: number) => void, done?: () => void): void => {
    const step = (i: number): void => {
      if (i === count) return done?.();
      work.push(() => step(i + 1));
      set(i);
    };
    work.push(() => step(0));
  };
  const root = copyOf(value);
  for (let task = work.pop(); task !== undefined; task = work.pop()) task();
  return root as T;
}
