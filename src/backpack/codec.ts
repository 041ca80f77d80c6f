/**
 * The value codec (DESIGN D7): one way to turn Backpack values into plain JSON and back, used by `toJSON`, the
 * checkpoint store and events. JSON types pass through; everything else becomes a tagged object `{ "$bp": tag, ... }`:
 * undefined, non-finite numbers and -0, BigInt, Date, Map, Set, typed arrays and the UnavailableValue marker. A plain
 * object that itself has a `$bp` key is wrapped (`{ "$bp": "object", "v": {...} }`) so it never reads as a tag.
 */
import { BackpackError } from './errors.js';
import {
  CODEC_TAG,
  isStoredJson,
  isUnavailable,
  setOwn,
  TYPED_ARRAYS,
  typedArrayName,
  UnavailableValue,
  type TypedArray,
  type TypedArrayName,
} from './values.js';

/** A value JSON can hold exactly. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export { CODEC_TAG };
const TAG = CODEC_TAG;

function encodeNumber(n: number): JsonValue {
  if (Number.isFinite(n) && !Object.is(n, -0)) return n;
  return { [TAG]: 'number', v: Object.is(n, -0) ? '-0' : String(n) };
}

/**
 * Where the encoder is, as a stack of segments: a number is an array index, a string starting with `<` a map or set
 * position, any other string an object key. Only an error turns it into text, so encoding a large array or object
 * builds no path strings.
 */
type PathStack = (string | number)[];

function pathText(stack: PathStack): string {
  let out = '';
  for (const segment of stack) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (segment.startsWith('<')) out += segment;
    else out = out ? `${out}.${segment}` : segment;
  }
  return out || '(root)';
}

function encodeChild(value: unknown, stack: PathStack, segment: string | number): JsonValue {
  stack.push(segment);
  const encoded = encodeAt(value, stack);
  stack.pop();
  return encoded;
}

function encodeAt(value: unknown, stack: PathStack): JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return encodeNumber(value);
    case 'undefined':
      return { [TAG]: 'undefined' };
    case 'bigint':
      return { [TAG]: 'bigint', v: value.toString() };
    case 'function':
    case 'symbol':
      throw new BackpackError(`Cannot encode the ${typeof value} at '${pathText(stack)}': only data can be encoded`);
  }
  if (value === null) return null;
  // A stored value that is plain JSON (frozen, never to change) is its own encoding: no copy.
  if (isStoredJson(value as object)) return value as JsonValue;
  if (Array.isArray(value)) {
    const out: JsonValue[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = encodeChild(value[i], stack, i);
    return out;
  }
  if (value instanceof Date) {
    const time = value.getTime();
    return { [TAG]: 'date', v: Number.isNaN(time) ? null : time };
  }
  if (value instanceof Map) {
    const entries: JsonValue[] = [];
    let i = 0;
    for (const [k, v] of value) {
      entries.push([encodeChild(k, stack, `<key ${i}>`), encodeChild(v, stack, `<value ${i}>`)]);
      i++;
    }
    return { [TAG]: 'map', v: entries };
  }
  if (value instanceof Set) {
    const members: JsonValue[] = [];
    let i = 0;
    for (const m of value) members.push(encodeChild(m, stack, `<member ${i++}>`));
    return { [TAG]: 'set', v: members };
  }
  const typed = typedArrayName(value);
  if (typed !== undefined) {
    const array = value as TypedArray;
    const bytes = Buffer.from(array.buffer as ArrayBuffer, array.byteOffset, array.byteLength);
    return { [TAG]: 'typed', t: typed, v: bytes.toString('base64') };
  }
  if (isUnavailable(value)) {
    return { [TAG]: 'unavailable', key: value.key, bytes: value.bytes, summary: value.summary, reason: value.reason };
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    throw new BackpackError(`Cannot encode the ${proto?.constructor?.name ?? 'object'} at '${pathText(stack)}': only data can be encoded`);
  }
  const obj: { [key: string]: JsonValue } = {};
  for (const k of Object.keys(value as object)) {
    const encoded = encodeChild((value as Record<string, unknown>)[k], stack, k);
    setOwn(obj, k, encoded);
  }
  return Object.prototype.hasOwnProperty.call(value, TAG) ? { [TAG]: 'object', v: obj } : obj;
}

/** Encodes a Backpack value as plain JSON (see the module comment for the tags). Throws BackpackError on non-data. */
export function encodeValue(value: unknown): JsonValue {
  return encodeAt(value, []);
}

function bad(path: string, problem: string): never {
  throw new BackpackError(`Cannot decode the value at '${path || '(root)'}': ${problem}`);
}

function decodeTagged(obj: Record<string, unknown>, path: string): unknown {
  const tag = obj[TAG];
  const v = obj.v;
  switch (tag) {
    case 'undefined':
      return undefined;
    case 'number':
      if (v === '-0') return -0;
      if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return Number(v);
      return bad(path, `number tag with value ${JSON.stringify(v)}`);
    case 'bigint':
      if (typeof v !== 'string' || !/^-?\d+$/.test(v)) return bad(path, `bigint tag with value ${JSON.stringify(v)}`);
      return BigInt(v);
    case 'date':
      if (v !== null && typeof v !== 'number') return bad(path, 'date tag needs a number or null');
      return new Date(v === null ? Number.NaN : v);
    case 'map':
      if (!Array.isArray(v)) return bad(path, 'map tag needs an array of [key, value] pairs');
      return new Map(
        v.map((pair, i) => {
          if (!Array.isArray(pair) || pair.length !== 2) return bad(`${path}<entry ${i}>`, 'not a [key, value] pair');
          return [decodeAt(pair[0], `${path}<key ${i}>`), decodeAt(pair[1], `${path}<value ${i}>`)] as const;
        }),
      );
    case 'set':
      if (!Array.isArray(v)) return bad(path, 'set tag needs an array');
      return new Set(v.map((m, i) => decodeAt(m, `${path}<member ${i}>`)));
    case 'typed': {
      const ctor = TYPED_ARRAYS[obj.t as TypedArrayName];
      if (!ctor || !Object.prototype.hasOwnProperty.call(TYPED_ARRAYS, obj.t as string)) {
        return bad(path, `unknown typed array ${JSON.stringify(obj.t)}`);
      }
      if (typeof v !== 'string') return bad(path, 'typed tag needs base64 text');
      const bytes = Buffer.from(v, 'base64');
      if (bytes.byteLength % ctor.BYTES_PER_ELEMENT !== 0) return bad(path, `${String(obj.t)} bytes not a multiple of its element size`);
      const copy = new Uint8Array(bytes.byteLength);
      copy.set(bytes);
      return new ctor(copy.buffer, 0, bytes.byteLength / ctor.BYTES_PER_ELEMENT) as TypedArray;
    }
    case 'unavailable':
      if (typeof obj.key !== 'string' || typeof obj.bytes !== 'number' || typeof obj.summary !== 'string' || typeof obj.reason !== 'string') {
        return bad(path, 'unavailable tag needs key, bytes, summary and reason');
      }
      return new UnavailableValue(obj.key, obj.bytes, obj.summary, obj.reason);
    case 'object':
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return bad(path, 'object tag needs an object');
      return decodePlain(v as Record<string, unknown>, path);
    default:
      return bad(path, `unknown tag ${JSON.stringify(tag)}`);
  }
}

function decodePlain(obj: Record<string, unknown>, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(obj)) {
    const decoded = decodeAt(obj[k], path ? `${path}.${k}` : k);
    setOwn(out, k, decoded);
  }
  return out;
}

function decodeAt(json: unknown, path: string): unknown {
  if (json === null || typeof json === 'string' || typeof json === 'boolean') return json;
  if (typeof json === 'number') return json;
  if (Array.isArray(json)) return json.map((v, i) => decodeAt(v, `${path}[${i}]`));
  if (typeof json === 'object') {
    const obj = json as Record<string, unknown>;
    return Object.prototype.hasOwnProperty.call(obj, TAG) ? decodeTagged(obj, path) : decodePlain(obj, path);
  }
  return bad(path, `${typeof json} is not JSON`);
}

/** Decodes what {@link encodeValue} produced. Throws BackpackError naming the path of anything malformed. */
export function decodeValue(json: unknown): unknown {
  return decodeAt(json, '');
}

class Summary {
  text = '';
  constructor(readonly limit: number) {}
  get full(): boolean {
    return this.text.length > this.limit;
  }
  add(s: string): void {
    if (!this.full) this.text += s;
  }
  value(v: unknown, depth: number): void {
    if (this.full) return;
    switch (typeof v) {
      case 'string':
        return this.add(JSON.stringify(v.length > this.limit ? v.slice(0, this.limit) : v));
      case 'number':
      case 'boolean':
        return this.add(String(v));
      case 'bigint':
        return this.add(`${v}n`);
      case 'undefined':
        return this.add('undefined');
      case 'function':
        return this.add('[function]');
      case 'symbol':
        return this.add(v.toString());
    }
    if (v === null) return this.add('null');
    if (depth > 8) return this.add('…');
    if (Array.isArray(v)) return this.list('[', v, ']', depth);
    if (v instanceof Date) return this.add(Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString());
    if (v instanceof Map) {
      this.add(`Map(${v.size}) {`);
      let first = true;
      for (const [k, val] of v) {
        if (this.full) return;
        if (!first) this.add(', ');
        first = false;
        this.value(k, depth + 1);
        this.add(' => ');
        this.value(val, depth + 1);
      }
      return this.add('}');
    }
    if (v instanceof Set) return this.list(`Set(${v.size}) {`, v, '}', depth);
    const typed = typedArrayName(v);
    if (typed !== undefined) return this.add(`${typed}(${(v as TypedArray).length})`);
    if (isUnavailable(v)) return this.add(`[unavailable ${v.bytes} bytes: ${v.summary}]`);
    this.add('{');
    let first = true;
    for (const k in v as object) {
      if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
      if (this.full) return;
      if (!first) this.add(', ');
      first = false;
      this.add(/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k));
      this.add(': ');
      this.value((v as Record<string, unknown>)[k], depth + 1);
    }
    this.add('}');
  }
  list(open: string, items: Iterable<unknown>, close: string, depth: number): void {
    this.add(open);
    let first = true;
    for (const item of items) {
      if (this.full) return;
      if (!first) this.add(', ');
      first = false;
      this.value(item, depth + 1);
    }
    this.add(close);
  }
}

/**
 * A short, human-readable description of a value, at most `maxLen` characters (longer ones end in `…`). Stops
 * walking the value once the budget is spent, so it is cheap for large values.
 */
export function summarizeValue(value: unknown, maxLen = 80): string {
  const s = new Summary(maxLen);
  s.value(value, 0);
  return s.text.length > maxLen ? `${s.text.slice(0, Math.max(0, maxLen - 1))}…` : s.text;
}
