/**
 * Values are data and immutable (DESIGN D7): `prepareValue` checks a value, copies it and freezes the copy in one
 * walk, and measures its approximate encoded size. Objects with a null prototype are stored as plain objects (JSON
 * cannot tell them apart); instances of other classes are rejected rather than silently stripped of their prototype.
 *
 * Maps, Sets, Dates and typed arrays keep their contents in internal slots, which `Object.freeze` does not cover
 * (`Map.prototype.set.call(frozenMap, …)` still writes): a value holding one is copied on every read, so a reader
 * only ever changes its own copy. They are read through the built-in methods alone and stored as the built-in
 * classes (an instance of a subclass, such as a Buffer or a Date made under fake timers, as its built-in class), so a
 * stored value carries no code of the packer's to run later in a reader. A proxy of one is rejected; a proxy of a
 * plain object or array is read once, by `pack`, into a plain copy. Reads get Maps, Sets and Dates that are frozen
 * and whose mutators throw, and fresh typed arrays.
 */
import { types } from 'node:util';
import { BackpackError } from './errors.js';
import { jsonPointer, MAX_JSON_NESTING } from './nesting.js';
import { hardenClass } from '../harden.js';

/** The key of the codec's tagged forms (`{ "$bp": tag, ... }`, see codec.ts): a plain object holding it is wrapped. */
export const CODEC_TAG = '$bp';

function frozenMutator(kind: string): () => never {
  return () => {
    throw new TypeError(`Cannot mutate a ${kind} read from the Backpack: it is frozen; pack a changed copy instead`);
  };
}

/**
 * The prototype of the Maps, Sets or Dates the Backpack makes: the built-in one, with its mutators throwing and its
 * `constructor` the built-in class (so such a value compares equal to a plain one). Frozen: every reader shares it,
 * and a node must not rewrite what others run (README: threat model).
 */
function frozenPrototype(base: MapConstructor | SetConstructor | DateConstructor, mutators: readonly string[]): object {
  const proto = Object.create(base.prototype) as object;
  for (const name of mutators) Object.defineProperty(proto, name, { value: frozenMutator(base.name) });
  Object.defineProperty(proto, 'constructor', { value: base });
  return Object.freeze(proto);
}
const FROZEN_MAP = frozenPrototype(Map, ['set', 'delete', 'clear']);
const FROZEN_SET = frozenPrototype(Set, ['add', 'delete', 'clear']);
const FROZEN_DATE = frozenPrototype(Date, Object.getOwnPropertyNames(Date.prototype).filter((n) => n.startsWith('set')));

/**
 * Gives `obj`, a Map, Set or Date just built by the built-in constructor and methods, its frozen prototype, and
 * freezes it. (Built as a plain Map and then given the prototype: filling an instance of a subclass is several times
 * slower.)
 */
function frozenAs<T extends object>(obj: T, proto: object): T {
  Object.setPrototypeOf(obj, proto);
  return Object.freeze(obj);
}

/** The UnavailableValue instances its constructor made: the only ones a value may hold (see {@link isUnavailable}). */
const GENUINE = new WeakSet<object>();

/**
 * Stands in for a value that history did not keep (it was larger than `maxValueBytes`): a snapshot that needs it
 * shows this marker instead of inventing a value. Only instances made by this constructor (not by a subclass,
 * `Object.create` or a proxy) count as the marker and may be packed.
 */
export class UnavailableValue {
  /** Always true; lets JSON readers recognise the marker. */
  readonly unavailable = true;
  /** @throws TypeError when a field has the wrong type (the marker holds strings and a number, nothing else). */
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
    const fields = { key, bytes, summary, reason };
    for (const [name, v] of Object.entries(fields)) {
      const type = name === 'bytes' ? 'number' : 'string';
      if (typeof v !== type) throw new TypeError(`UnavailableValue: ${name} must be a ${type}, got ${v === null ? 'null' : typeof v}`);
    }
    Object.freeze(this);
    if (new.target === UnavailableValue) GENUINE.add(this);
  }
}
hardenClass(UnavailableValue);
Object.freeze(UnavailableValue);

/** True when `value` is the marker of a value history did not keep (made by the UnavailableValue constructor). */
export function isUnavailable(value: unknown): value is UnavailableValue {
  return typeof value === 'object' && value !== null && GENUINE.has(value);
}

/** The built-in typed array classes, by name. */
export const TYPED_ARRAYS = Object.freeze({
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
});

/** The name of a built-in typed array class. */
export type TypedArrayName = keyof typeof TYPED_ARRAYS;

/** A typed array (not a DataView). */
export type TypedArray = InstanceType<(typeof TYPED_ARRAYS)[TypedArrayName]>;

// The built-in accessors of %TypedArray%.prototype read the internal slots: no method of the object itself runs.
const TYPED_ARRAY_PROTO = Object.getPrototypeOf(Uint8Array.prototype) as object;
function builtinGetter(name: string | symbol): (this: unknown) => unknown {
  return Object.getOwnPropertyDescriptor(TYPED_ARRAY_PROTO, name)!.get!;
}
const typedArrayTag = builtinGetter(Symbol.toStringTag) as (this: unknown) => TypedArrayName | undefined;
const typedArrayLength = builtinGetter('length') as (this: TypedArray) => number;
const typedArrayByteLength = builtinGetter('byteLength') as (this: TypedArray) => number;
const typedArraySet = (TYPED_ARRAY_PROTO as { set: (this: TypedArray, source: TypedArray) => void }).set;
// The classes themselves as they were when this module loaded (fake timers, for one, replace the global Date).
const NativeMap = Map;
const NativeSet = Set;
const NativeDate = Date;
const mapForEach = Map.prototype.forEach;
const mapSet = Map.prototype.set;
const setForEach = Set.prototype.forEach;
const setAdd = Set.prototype.add;
const dateGetTime = Date.prototype.getTime;

/**
 * The built-in class of a typed array (`'Uint8Array'` for a Uint8Array or a Buffer), read from its internal slot;
 * undefined for anything else (a DataView, a proxy, an object that only borrowed a typed array prototype).
 */
export function typedArrayName(value: unknown): TypedArrayName | undefined {
  return typedArrayTag.call(value);
}

/** True for typed arrays (not DataView), by their internal slot. */
export function isTypedArray(value: unknown): value is TypedArray {
  return typedArrayTag.call(value) !== undefined;
}

/** What a Map, Set, Date or typed array is, read from its internal slots whatever its prototype says; else undefined. */
function slotKind(v: object): 'map' | 'set' | 'date' | TypedArrayName | undefined {
  if (types.isMap(v)) return 'map';
  if (types.isSet(v)) return 'set';
  if (types.isDate(v)) return 'date';
  return typedArrayName(v);
}

/** The class name a prototype shows, read without running any getter of it. */
function className(proto: object): string {
  const ctor = Object.getOwnPropertyDescriptor(proto, 'constructor')?.value as unknown;
  const name = typeof ctor === 'function' ? (Object.getOwnPropertyDescriptor(ctor, 'name')?.value as unknown) : undefined;
  return typeof name === 'string' && name !== '' ? name : 'object with a custom prototype';
}

/** A checked, frozen copy of a value with its approximate encoded size. */
export interface PreparedValue {
  value: unknown;
  bytes: number;
  /** The value holds Maps, Sets, Dates or typed arrays, which freezing does not protect: reads copy it. */
  copyOnRead: boolean;
}

const SUPPORTED = 'pack plain data: JSON types, undefined, Date, Map, Set, BigInt or typed arrays';

/**
 * Every object a {@link Walker} made or adopted (frozen all through, holding no Map, Set, Date or typed array), with
 * its record (see {@link storedRecord}): its approximate encoded size, its height (levels of nesting), and whether it
 * is plain JSON that the codec encodes as itself. Such an
 * object can never change, so a value packed again with it inside (a list a node grew, an object with one key
 * changed) shares it instead of copying it again: packing costs what is new, and readers that compare stored values
 * (the durable runtime, from step to step) find what did not change by identity. The codec hands out a plain-JSON
 * one as its own encoding instead of building a copy.
 */
const STORED = new WeakMap<object, number>();

/** Heights a record holds: more than {@link MAX_JSON_NESTING}, which no stored value passes. */
const HEIGHTS = 1024;

/** The record of a stored object: its size in bytes, its height (1: it holds no object) and whether it is plain JSON. */
function storedRecord(bytes: number, height: number, json: boolean): number {
  return (bytes * HEIGHTS + height) * 2 + (json ? 1 : 0);
}

function recordBytes(record: number): number {
  return Math.floor(record / (2 * HEIGHTS));
}

function recordHeight(record: number): number {
  return Math.floor(record / 2) % HEIGHTS;
}

/**
 * Stored arrays packed over a stored array they start with: each maps to the number of that array (in
 * {@link ARRAY_NUMBERS}), so that {@link extendsStored} tells, without looking at the elements, that an array a node
 * grew kept everything it had. Numbers rather than the arrays themselves, so that no array keeps the one before it
 * (and that one the one before it, ...) alive.
 */
const EXTENDS = new WeakMap<object, number>();
const ARRAY_NUMBERS = new WeakMap<object, number>();
let lastArrayNumber = 0;

/**
 * Whether stored array `next` was packed over stored array `prev` and starts with `prev`'s own elements, each the
 * same value in the same place (`Object.is`: an equal copy of an object does not count). Then `next` encodes as
 * `prev`'s encoding followed by its own further elements. False also when it cannot be told that way (the elements
 * must then be compared): a pack over another value, or two packs of the key since `prev`.
 */
export function extendsStored(next: readonly unknown[], prev: readonly unknown[]): boolean {
  const number = EXTENDS.get(next);
  return number !== undefined && number === ARRAY_NUMBERS.get(prev);
}

function recordExtension(next: object, prev: object): void {
  let number = ARRAY_NUMBERS.get(prev);
  if (number === undefined) ARRAY_NUMBERS.set(prev, (number = ++lastArrayNumber));
  EXTENDS.set(next, number);
}

/**
 * Whether `value` is a stored value (see {@link prepareValue}) that is plain JSON: strings, finite numbers other
 * than -0, booleans, null, arrays and plain objects without the codec's tag key. Such a value encodes as itself.
 */
export function isStoredJson(value: object): boolean {
  return (STORED.get(value) ?? 0) % 2 === 1;
}

class Walker {
  bytes = 0;
  /**
   * The deepest level (length of {@link path}) at which an object lies, of those walked since the object being
   * walked began: what gives that object's height, and refuses a value that shares a stored one deeper than the limit.
   */
  deepest = 0;
  copyOnRead = false;
  /** Everything walked since this was last reset is plain JSON that encodes as itself. */
  json = true;
  readonly path: (string | number)[] = [];
  readonly ancestors = new Set<object>();
  /**
   * @param inPlace adopt the value instead of copying it: check it and freeze its own objects (see {@link adoptValue}).
   */
  constructor(
    readonly key: string,
    readonly inPlace = false,
  ) {}

  fail(problem: string): never {
    let where = '';
    for (const seg of this.path) where += typeof seg === 'number' ? `[${seg}]` : where === '' ? seg : `.${seg}`;
    const at = where === '' ? 'the value' : `the value at '${where}'`;
    throw new BackpackError(`Cannot pack key '${this.key}': ${at} ${problem}; ${SUPPORTED}`, { key: this.key });
  }

  /**
   * The error for a value nested deeper than {@link MAX_JSON_NESTING} levels (the bound of every value that reaches
   * the library: everything that walks a stored value, the redaction at each persistence boundary and the value
   * codec among them, recurses), naming the key and a JSON pointer to where the limit is passed.
   */
  tooDeep(): never {
    const path = this.path.map(String);
    const at = path.length <= 12 ? jsonPointer(path) : `${jsonPointer(path.slice(0, 8))}/…(${path.length - 9} more)…${jsonPointer(path.slice(-1))}`;
    throw new BackpackError(`Cannot pack key '${this.key}': the value at ${at} is nested more than ${MAX_JSON_NESTING} levels deep (the limit is ${MAX_JSON_NESTING} levels of arrays, objects, Maps and Sets)`, { key: this.key });
  }

  /**
   * A frozen copy of `v`. `before` is what was stored at the same place before (the key's previous value, or the
   * member at the same key or index of it), when the caller knows it: an array copied over a stored array whose
   * elements it keeps in place is recorded as extending it (see {@link extendsStored}).
   */
  copy(v: unknown, before?: unknown): unknown {
    switch (typeof v) {
      case 'string':
        this.bytes += v.length + 2;
        return v;
      case 'number':
        this.bytes += 8;
        if (!Number.isFinite(v) || Object.is(v, -0)) this.json = false;
        return v;
      case 'boolean':
        this.bytes += 5;
        return v;
      case 'undefined':
        this.bytes += 9;
        this.json = false;
        return v;
      case 'bigint':
        this.bytes += 24;
        this.json = false;
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
    return this.copyObject(v as object, before);
  }

  copyObject(v: object, before: unknown): unknown {
    const shared = STORED.get(v);
    const depth = this.path.length;
    if (shared !== undefined) {
      // A stored value shared, not walked again: its height says how deep it goes from here.
      const bottom = depth + recordHeight(shared) - 1;
      if (bottom >= MAX_JSON_NESTING) return this.tooDeep();
      if (bottom > this.deepest) this.deepest = bottom;
      this.bytes += recordBytes(shared);
      if (shared % 2 === 0) this.json = false;
      return v;
    }
    if (this.ancestors.has(v)) return this.fail('refers to itself (circular reference)');
    if (depth >= MAX_JSON_NESTING) return this.tooDeep();
    const deepestBefore = this.deepest;
    this.deepest = depth;
    if (this.inPlace) {
      const adopted = this.adoptObject(v);
      if (deepestBefore > this.deepest) this.deepest = deepestBefore;
      return adopted;
    }
    this.ancestors.add(v);
    const bytesBefore = this.bytes;
    const slotsBefore = this.copyOnRead;
    const jsonBefore = this.json;
    this.copyOnRead = false;
    this.json = true;
    let out: unknown;
    if (Array.isArray(v)) {
      const length = v.length;
      const arr = new Array<unknown>(length);
      this.bytes += 2;
      // The stored array this one may extend, and how many of its elements were kept in place so far.
      const prior = Array.isArray(before) && STORED.has(before) && before.length <= length ? (before as readonly unknown[]) : undefined;
      let kept = 0;
      // Elements read by the quick pass below, kept in `arr` for the loop after it: each is read once.
      let read = 0;
      if (prior !== undefined) {
        // An array grown from the stored one (`[...stored, next]`, the way lists grow) starts with the stored array's
        // own elements, checked and frozen already: a tight pass takes them, and the stored array's record gives their
        // size, instead of a walk and a comparison of each (36 µs instead of 55 for 4,000 strings here; a read of a
        // frozen array costs about twice one of a plain array in this V8, which is most of what is left). It takes
        // only what the walk would keep as it is: primitives and stored objects (not the inner objects of an
        // adopted value, which the walk copies).
        const n = prior.length;
        let same = 0;
        while (read < n) {
          const item = v[read];
          arr[read++] = item;
          const was = prior[read - 1];
          if (item !== was || (item === 0 && !Object.is(item, was)) || (typeof item === 'object' && item !== null && !STORED.has(item))) break;
          same++;
        }
        if (same === n) {
          const record = STORED.get(prior)!;
          // The record counts the brackets (2) and each element's size and separator, as the loop below does.
          this.bytes += recordBytes(record) - 2;
          // Its elements lie one level below this array, as deep as the stored array's own went below it.
          const bottom = depth + recordHeight(record) - 1;
          if (bottom >= MAX_JSON_NESTING) return this.tooDeep();
          if (bottom > this.deepest) this.deepest = bottom;
          if (record % 2 === 0) this.json = false;
          kept = n;
        }
      }
      for (let i = kept; i < length; i++) {
        this.path.push(i);
        const value = i < read ? arr[i] : v[i];
        let item: unknown;
        if (kept === i && prior !== undefined && i < prior.length) {
          const was = prior[i];
          item = this.copy(value, was);
          // Object.is, by === first (the quicker test): the two differ only on 0 against -0 and on NaN.
          if (item === was ? item !== 0 || Object.is(item, was) : item !== item && was !== was) kept++;
        } else item = this.copy(value);
        arr[i] = item;
        this.path.pop();
        this.bytes += 1;
      }
      out = Object.freeze(arr);
      if (prior !== undefined && kept === prior.length) recordExtension(out as object, prior);
    } else {
      const proto = Object.getPrototypeOf(v) as object | null;
      out = proto === Object.prototype || proto === null ? this.copyPlain(v, before) : this.copyInstance(v, proto);
    }
    this.ancestors.delete(v);
    // A copy holding a Map, Set, Date or typed array is not immutable all through: it is copied on every read, and
    // never shared.
    if (!this.copyOnRead) STORED.set(out as object, storedRecord(this.bytes - bytesBefore, this.deepest - depth + 1, this.json));
    if (deepestBefore > this.deepest) this.deepest = deepestBefore;
    this.copyOnRead ||= slotsBefore;
    this.json &&= jsonBefore;
    return out;
  }

  /** Copies an object whose prototype is Object.prototype or null into a frozen plain object. */
  copyPlain(v: object, before: unknown): object {
    if (Object.getOwnPropertySymbols(v).length > 0) this.fail('has symbol keys');
    if (Object.hasOwn(v, CODEC_TAG)) this.json = false;
    const obj: Record<string, unknown> = {};
    this.bytes += 2;
    // A stored plain object (frozen data: reading its members runs nothing) whose members are what was there before.
    const prior = before !== null && typeof before === 'object' && !Array.isArray(before) && STORED.has(before) ? (before as Record<string, unknown>) : undefined;
    for (const k of Object.keys(v)) {
      this.path.push(k);
      const copied = this.copy((v as Record<string, unknown>)[k], prior !== undefined && Object.hasOwn(prior, k) ? prior[k] : undefined);
      this.path.pop();
      this.bytes += k.length + 4;
      setOwn(obj, k, copied);
    }
    return Object.freeze(obj);
  }

  /**
   * Copies an instance of a class: a Map, Set, Date or typed array (of the built-in class or a subclass: a Buffer, a
   * Date made under fake timers) into the built-in class, reading it through the built-in methods only, so nothing of
   * a subclass runs or is kept; or keeps an {@link UnavailableValue} its constructor made. Anything else fails: a
   * proxy, an instance of another class, an object that only borrowed a built-in prototype.
   */
  copyInstance(v: object, proto: object): unknown {
    this.json = false;
    if (GENUINE.has(v)) {
      this.bytes += 64;
      return v;
    }
    if (types.isProxy(v)) return this.fail('is a proxy');
    const kind = slotKind(v);
    if (kind === undefined) {
      if (proto === UnavailableValue.prototype) return this.fail('is an UnavailableValue its constructor did not make');
      return this.fail(`is a ${className(proto)}`);
    }
    this.copyOnRead = true;
    switch (kind) {
      case 'date':
        this.bytes += 40;
        return frozenAs(new NativeDate(dateGetTime.call(v)), FROZEN_DATE);
      case 'map': {
        const flat: unknown[] = [];
        mapForEach.call(v, (val: unknown, k: unknown) => flat.push(k, val));
        const out = new NativeMap<unknown, unknown>();
        this.bytes += 20;
        for (let i = 0; i < flat.length; i += 2) {
          const k = flat[i];
          this.path.push('<map key>');
          const ck = this.copy(k);
          this.path.pop();
          this.path.push(typeof k === 'string' || typeof k === 'number' ? String(k) : '<map value>');
          mapSet.call(out, ck, this.copy(flat[i + 1]));
          this.path.pop();
        }
        return frozenAs(out, FROZEN_MAP);
      }
      case 'set': {
        const members: unknown[] = [];
        setForEach.call(v, (member: unknown) => members.push(member));
        const out = new NativeSet<unknown>();
        this.bytes += 20;
        this.path.push('<set member>');
        for (let i = 0; i < members.length; i++) setAdd.call(out, this.copy(members[i]));
        this.path.pop();
        return frozenAs(out, FROZEN_SET);
      }
      default: {
        const source = v as TypedArray;
        this.bytes += Math.ceil(typedArrayByteLength.call(source) * 1.37) + 40;
        const out = new TYPED_ARRAYS[kind](typedArrayLength.call(source));
        typedArraySet.call(out, source);
        return out;
      }
    }
  }

  /**
   * Adopts an array or plain object (see {@link adoptValue}): checks that it is plain data all through (no proxy,
   * getter, setter, symbol key, hole, hidden property, property of an array besides its elements or other prototype:
   * JSON's kinds only), walks its members, then freezes it. Only the root is recorded as stored: an entry for each
   * object inside would cost more memory than the data (what is packed from inside it is copied, as any other value).
   */
  adoptObject(v: object): unknown {
    if (types.isProxy(v)) return this.fail('is a proxy');
    const isArray = Array.isArray(v);
    const proto = Object.getPrototypeOf(v) as unknown;
    if (isArray ? proto !== Array.prototype : proto !== Object.prototype && proto !== null) return this.fail('is not plain JSON data');
    if (Object.getOwnPropertySymbols(v).length > 0) return this.fail('has symbol keys');
    this.ancestors.add(v);
    const root = this.path.length === 0;
    if (!isArray && proto === null) this.json = false;
    this.bytes += 2;
    if (isArray) {
      const length = (v as unknown[]).length;
      // Own properties besides the indices and `length` (a `toJSON`, an accessor): JSON would not write them as data.
      if (Object.getOwnPropertyNames(v).length > length + 1) return this.fail('has properties other than its elements');
      for (let i = 0; i < length; i++) {
        this.path.push(i);
        this.member(v, i);
        this.path.pop();
        this.bytes += 1;
      }
    } else {
      const keys = Object.keys(v);
      // Hidden (non-enumerable) properties would be invisible to every reader of the value: refused.
      if (Object.getOwnPropertyNames(v).length !== keys.length) return this.fail('has non-enumerable properties');
      for (const k of keys) {
        this.path.push(k);
        this.member(v, k);
        this.path.pop();
        this.bytes += k.length + 4;
      }
      if (Object.hasOwn(v, CODEC_TAG)) this.json = false;
    }
    this.ancestors.delete(v);
    Object.freeze(v);
    if (root) STORED.set(v, storedRecord(this.bytes, this.deepest + 1, this.json));
    return v;
  }

  /** Walks the member `k` of an object being adopted: a data property, never a getter or setter (or a hole). */
  member(v: object, k: string | number): void {
    const descriptor = Object.getOwnPropertyDescriptor(v, k);
    if (descriptor === undefined) return this.fail('has a hole');
    if (!('value' in descriptor)) return this.fail('has a getter or setter');
    this.copy(descriptor.value);
  }
}

/**
 * Adopts `value` as a stored value without copying it: checks that it is plain JSON data all through (strings,
 * numbers, booleans, null, arrays and plain objects; what `JSON.parse` returns) and freezes each of its objects in
 * place, so that packing it, or anything inside it, later shares it instead of copying it. For data whose owner
 * hands it over (a flow config loaded with `shareConfig`): nobody can change it from then on. Throws a
 * BackpackError naming the path of anything else (objects checked before it stay frozen; nothing is adopted
 * partially: an object is adopted only once all it holds was).
 */
export function adoptValue(key: string, value: unknown): void {
  if (value !== null && typeof value === 'object') new Walker(key, true).copy(value);
}

/**
 * Checks `value` (stored under `key`), returns a deep-frozen copy and its approximate encoded size in bytes.
 * Throws BackpackError naming the key and the path of a function, symbol, circular reference or unsupported object.
 * `before`: the value stored under `key` until now, if any; arrays grown from it are recorded (see {@link extendsStored}).
 */
export function prepareValue(key: string, value: unknown, before?: unknown): PreparedValue {
  if (typeof value === 'string') return { value, bytes: value.length + 2, copyOnRead: false };
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return { value, bytes: 8, copyOnRead: false };
  const walker = new Walker(key);
  const copy = walker.copy(value, before);
  return { value: copy, bytes: walker.bytes, copyOnRead: walker.copyOnRead };
}

/**
 * A stored value as a reader gets it: the value itself when it is immutable all through (a primitive, an object the
 * Backpack froze holding no Map, Set, Date or typed array, an UnavailableValue), else a fresh copy (see the module
 * comment), so that a reader never holds the stored objects that freezing does not protect.
 */
export function copyStoredValue(key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null || STORED.has(value) || GENUINE.has(value)) return value;
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
  return equal(a, b, false);
}

/**
 * {@link deepEqual} that also requires the same order wherever a reader sees one: the keys of plain objects (as
 * `Object.keys` lists them), the entries of Maps and the members of Sets. True exactly when the two values encode
 * alike through the value codec (order and -0 included).
 */
export function deepEqualInOrder(a: unknown, b: unknown): boolean {
  return equal(a, b, true);
}

function equal(a: unknown, b: unknown, ordered: boolean): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!equal(a[i], b[i], ordered)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && Object.is(a.getTime(), b.getTime());
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    if (!ordered && [...a.keys()].every(isPrimitiveKey)) {
      for (const [k, v] of a) if (!b.has(k) || !equal(v, b.get(k), ordered)) return false;
      return true;
    }
    return equal([...a], [...b], ordered);
  }
  if (a instanceof Set || b instanceof Set) {
    if (!(a instanceof Set && b instanceof Set) || a.size !== b.size) return false;
    if (!ordered && [...a].every(isPrimitiveKey)) {
      for (const v of a) if (!b.has(v)) return false;
      return true;
    }
    return equal([...a], [...b], ordered);
  }
  if (isTypedArray(a) || isTypedArray(b)) {
    if (!isTypedArray(a) || !isTypedArray(b) || a.constructor !== b.constructor || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
    return true;
  }
  // A value history did not keep: the same marker (the same pack) is equal (Object.is above); two markers stand for
  // values that may differ whatever their size and summary, so they are not taken for equal.
  if (isUnavailable(a) || isUnavailable(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    if (ordered ? k !== kb[i] : !Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], ordered)) return false;
  }
  return true;
}
