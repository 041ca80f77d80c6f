/**
 * Values are data and immutable (DESIGN D7): `prepareValue` checks a value, copies it and freezes the copy in one
 * walk, and measures its approximate encoded size. Maps, Sets and Dates become frozen subclasses whose mutators
 * throw; typed arrays cannot be frozen in JavaScript, so values holding them are copied again on every read.
 * Objects with a null prototype are stored as plain objects (JSON cannot tell them apart); instances of other
 * classes are rejected rather than silently stripped of their prototype.
 */
import { BackpackError } from './errors.js';

function frozenMutator(kind: string): () => never {
  return () => {
    throw new TypeError(`Cannot mutate a ${kind} read from the Backpack: it is frozen; pack a changed copy instead`);
  };
}

/** A Map whose mutators throw. Its `constructor` is Map, so it compares equal to a plain Map. */
class FrozenMap<K, V> extends Map<K, V> {
  constructor(entries: Iterable<readonly [K, V]>) {
    super();
    for (const [k, v] of entries) Map.prototype.set.call(this, k, v);
    Object.freeze(this);
  }
}

/** A Set whose mutators throw. */
class FrozenSet<T> extends Set<T> {
  constructor(values: Iterable<T>) {
    super();
    for (const v of values) Set.prototype.add.call(this, v);
    Object.freeze(this);
  }
}

/** A Date whose setters throw. */
class FrozenDate extends Date {
  constructor(time: number) {
    super(time);
    Object.freeze(this);
  }
}

for (const [cls, base, names] of [
  [FrozenMap, Map, ['set', 'delete', 'clear']],
  [FrozenSet, Set, ['add', 'delete', 'clear']],
  [FrozenDate, Date, Object.getOwnPropertyNames(Date.prototype).filter((n) => n.startsWith('set'))],
] as const) {
  for (const name of names) Object.defineProperty(cls.prototype, name, { value: frozenMutator(base.name) });
  Object.defineProperty(cls.prototype, 'constructor', { value: base });
}

/**
 * Stands in for a value that history did not keep (it was larger than `maxValueBytes`): a snapshot that needs it
 * shows this marker instead of inventing a value.
 */
export class UnavailableValue {
  /** Always true; lets JSON readers recognise the marker. */
  readonly unavailable = true;
  constructor(
    /** The key whose value is missing. */
    readonly key: string,
    /** Approximate encoded size of the missing value. */
    readonly bytes: number,
    /** Short description of the missing value. */
    readonly summary: string,
    /** Why it is missing. */
    readonly reason: string,
  ) {
    Object.freeze(this);
  }
}

/** True when `value` is the marker of a value history did not keep. */
export function isUnavailable(value: unknown): value is UnavailableValue {
  return value instanceof UnavailableValue;
}

/** A typed array (not a DataView). */
export type TypedArray =
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

/** True for typed arrays (not DataView). */
export function isTypedArray(value: unknown): value is TypedArray {
  return ArrayBuffer.isView(value) && !(value instanceof DataView);
}

/** A checked, frozen copy of a value with its approximate encoded size. */
export interface PreparedValue {
  value: unknown;
  bytes: number;
  /** The value holds typed arrays, which cannot be frozen: reads copy it. */
  copyOnRead: boolean;
}

const SUPPORTED = 'pack plain data: JSON types, undefined, Date, Map, Set, BigInt or typed arrays';

/**
 * Every object a {@link Walker} made (a frozen copy holding no typed array), with its approximate encoded size.
 * Such an object can never change, so a value packed again with it inside (a list a node grew, an object with one
 * key changed) shares it instead of copying it again: packing costs what is new, and readers that compare stored
 * values (the durable runtime, from step to step) find what did not change by identity.
 */
const STORED = new WeakMap<object, number>();

class Walker {
  bytes = 0;
  copyOnRead = false;
  readonly path: (string | number)[] = [];
  readonly ancestors = new Set<object>();
  constructor(readonly key: string) {}

  fail(problem: string): never {
    let where = '';
    for (const seg of this.path) where += typeof seg === 'number' ? `[${seg}]` : where === '' ? seg : `.${seg}`;
    const at = where === '' ? 'the value' : `the value at '${where}'`;
    throw new BackpackError(`Cannot pack key '${this.key}': ${at} ${problem}; ${SUPPORTED}`, { key: this.key });
  }

  copy(v: unknown): unknown {
    switch (typeof v) {
      case 'string':
        this.bytes += v.length + 2;
        return v;
      case 'number':
        this.bytes += 8;
        return v;
      case 'boolean':
        this.bytes += 5;
        return v;
      case 'undefined':
        this.bytes += 9;
        return v;
      case 'bigint':
        this.bytes += 24;
        return v;
      case 'function':
        return this.fail('is a function');
      case 'symbol':
        return this.fail('is a symbol');
    }
    if (v === null) {
      this.bytes += 4;
      return v;
    }
    return this.copyObject(v as object);
  }

  copyObject(v: object): unknown {
    if (v instanceof UnavailableValue) {
      this.bytes += 64;
      return v;
    }
    const shared = STORED.get(v);
    if (shared !== undefined) {
      this.bytes += shared;
      return v;
    }
    if (this.ancestors.has(v)) return this.fail('refers to itself (circular reference)');
    this.ancestors.add(v);
    const bytesBefore = this.bytes;
    const typedBefore = this.copyOnRead;
    this.copyOnRead = false;
    let out: unknown;
    if (Array.isArray(v)) {
      const arr = new Array<unknown>(v.length);
      this.bytes += 2;
      for (let i = 0; i < v.length; i++) {
        this.path.push(i);
        arr[i] = this.copy(v[i]);
        this.path.pop();
        this.bytes += 1;
      }
      out = Object.freeze(arr);
    } else if (v instanceof Date) {
      this.bytes += 40;
      out = new FrozenDate(v.getTime());
    } else if (v instanceof Map) {
      const entries: [unknown, unknown][] = [];
      this.bytes += 20;
      for (const [k, val] of v) {
        this.path.push('<map key>');
        const ck = this.copy(k);
        this.path.pop();
        this.path.push(typeof k === 'string' || typeof k === 'number' ? String(k) : '<map value>');
        entries.push([ck, this.copy(val)]);
        this.path.pop();
      }
      out = new FrozenMap(entries);
    } else if (v instanceof Set) {
      const values: unknown[] = [];
      this.bytes += 20;
      for (const member of v) {
        this.path.push('<set member>');
        values.push(this.copy(member));
        this.path.pop();
      }
      out = new FrozenSet(values);
    } else if (isTypedArray(v)) {
      this.copyOnRead = true;
      this.bytes += Math.ceil(v.byteLength * 1.37) + 40;
      out = v.slice();
    } else {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        const name = (proto?.constructor as { name?: string } | undefined)?.name || 'object with a custom prototype';
        this.ancestors.delete(v);
        return this.fail(`is a ${name}`);
      }
      if (Object.getOwnPropertySymbols(v).length > 0) this.fail('has symbol keys');
      const obj: Record<string, unknown> = {};
      this.bytes += 2;
      for (const k of Object.keys(v)) {
        this.path.push(k);
        const copied = this.copy((v as Record<string, unknown>)[k]);
        this.path.pop();
        this.bytes += k.length + 4;
        setOwn(obj, k, copied);
      }
      out = Object.freeze(obj);
    }
    this.ancestors.delete(v);
    // A copy holding a typed array is not frozen all through: it is copied on every read, and never shared.
    if (!this.copyOnRead) STORED.set(out as object, this.bytes - bytesBefore);
    this.copyOnRead ||= typedBefore;
    return out;
  }
}

/**
 * Checks `value` (stored under `key`), returns a deep-frozen copy and its approximate encoded size in bytes.
 * Throws BackpackError naming the key and the path of a function, symbol, circular reference or unsupported object.
 */
export function prepareValue(key: string, value: unknown): PreparedValue {
  if (typeof value === 'string') return { value, bytes: value.length + 2, copyOnRead: false };
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return { value, bytes: 8, copyOnRead: false };
  const walker = new Walker(key);
  const copy = walker.copy(value);
  return { value: copy, bytes: walker.bytes, copyOnRead: walker.copyOnRead };
}

/** A fresh frozen copy of a stored value (for values holding typed arrays, which cannot be frozen). */
export function copyStoredValue(key: string, value: unknown): unknown {
  return new Walker(key).copy(value);
}

function isPrimitiveKey(k: unknown): boolean {
  return k === null || (typeof k !== 'object' && typeof k !== 'function');
}

/**
 * Sets `obj[key] = value` as an own, enumerable property, also for the key `__proto__` (where plain assignment would
 * set the prototype instead). Every object built from data keys goes through this.
 */
export function setOwn(obj: object, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else (obj as Record<string, unknown>)[key] = value;
}

/**
 * Structural equality over the supported values: Object.is for primitives, element-wise for arrays and typed
 * arrays, key sets and values for plain objects (a key holding undefined differs from a missing key), time for
 * Dates, members for Maps and Sets.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && Object.is(a.getTime(), b.getTime());
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    if ([...a.keys()].every(isPrimitiveKey)) {
      for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
      return true;
    }
    return deepEqual([...a], [...b]);
  }
  if (a instanceof Set || b instanceof Set) {
    if (!(a instanceof Set && b instanceof Set) || a.size !== b.size) return false;
    if ([...a].every(isPrimitiveKey)) {
      for (const v of a) if (!b.has(v)) return false;
      return true;
    }
    return deepEqual([...a], [...b]);
  }
  if (isTypedArray(a) || isTypedArray(b)) {
    if (!isTypedArray(a) || !isTypedArray(b) || a.constructor !== b.constructor || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
    return true;
  }
  if (a instanceof UnavailableValue || b instanceof UnavailableValue) {
    return (
      a instanceof UnavailableValue &&
      b instanceof UnavailableValue &&
      a.key === b.key &&
      a.bytes === b.bytes &&
      a.summary === b.summary &&
      a.reason === b.reason
    );
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}
