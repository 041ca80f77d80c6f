/**
 * The one redaction pass every persistence boundary runs (DESIGN D15): the event log, keyframes, projections,
 * memory, the flow config recorded with a run, and the context engine's frames all call {@link Redactor.redact}
 * on what they are about to write.
 *
 * What it replaces with `'[REDACTED]'`:
 * - secret-looking text anywhere, also inside longer strings ({@link DEFAULT_SECRET_PATTERNS}, plus the user's
 *   patterns): in string values, object keys, Map keys and Set members (live Maps and Sets, and their encoded
 *   form `{ "$bp": "map" | "set", v }`), at any depth;
 * - every string under a secret-named key, and a number right under one ({@link SecretKeyMatcher}): object keys, Map
 *   keys (also a `[key, value]` pair in a list, as an encoded Map holds them, whatever the other pairs' keys are),
 *   and an entry that names its
 *   key in a `key` field (a `backpack.packed` event: `{ key: 'password', valueSummary }`), whose
 *   `value`, `valueSummary`, `previousValue`, `newValue` and `summary` are blanked. A Backpack item under such a
 *   key keeps its provenance (`metadata`, `accessControl`); only its value is blanked. Numbers, booleans and the
 *   shape of objects are kept;
 * - the start of a secret cut short by a summary (`"ghp_abc…`);
 * - secrets in the text of byte arrays (`Uint8Array`, `Buffer`, and their encoded form `{ "$bp": "typed", v }`) that
 *   hold text (no NUL byte in their first 8 KB, git's test for binary data): the bytes of the redacted text replace
 *   them.
 *
 * Objects that are not plain data (class instances, URL objects, errors, objects with a `toJSON`) are checked in the
 * form `JSON.stringify` writes them (the result of their `toJSON`, else their own enumerable properties), and
 * replaced by that form, redacted, when it holds a secret.
 *
 * The walk is copy-on-write: nothing is allocated unless something is redacted, and the input is never modified.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { renewAfterSnapshot } from '../fs/snapshot.js';
import { LiteralSet } from './literal-set.js';
import { redactYamlBlockValues } from './yaml-values.js';
import { NAMED_PAIR, blankStructure } from './text-structures.js';
import { SecretKeyMatcher } from './keys.js';
import { isAuthCredential } from './basic-credential.js';
import { DEFAULT_SECRET_PATTERNS, INSPECT_BYTES, INSPECT_TAG, NETRC_MIN_LENGTH, TRUNCATED_SECRET_TAIL, isDateAlone, lastToken, type SecretPattern } from './patterns.js';
import { VENDOR_TOKEN_PATTERN } from './vendor-patterns.js';
import { REDACTED } from './marker.js';

export { REDACTED };

/** Thrown inside a {@link Redactor.containsSecrets} walk at the first text it would replace, and caught there. */
const FOUND: unique symbol = Symbol('redaction: secret found');

/** Secrets of your own, added to the built-in catalogue (an option of runFlow, the stores and the ContextEngine). */
export interface RedactionOptions {
  /**
   * More secret-looking values. Each match is replaced (only the named group `secret` when the pattern has one).
   * The global flag is added when missing. These run on every string, so keep them specific.
   */
  readonly patterns?: readonly RegExp[];
  /** More secret key names (see {@link SecretKeyMatcher}): values under such keys are blanked. */
  readonly secretKeys?: readonly string[];
}

/** Result of {@link Redactor.redact}: the redacted copy (the input itself when nothing was redacted) and whether anything was. */
export interface RedactionResult<T> {
  value: T;
  redacted: boolean;
}

/**
 * A character every built-in pattern's match but a netrc entry's and a listed header's holds: an upper-case letter
 * (`AKIA`, `AIza`, `eyJ`, `Bearer`, `-----BEGIN`, the AWS secret key's mixed case), or `_`, `-`, `:` or `=` (`sk-`,
 * `ghp_`, `xoxb-`, `://`, `name=value`, `name: value`).
 */
const MAY_HOLD_SECRET = /[A-Z_:=-]/;

/** A character the visible start of a secret cut short by a summary holds (see TRUNCATED_SECRET_TAIL). */
const MAY_START_SECRET = /[A-Z0-9_:=/+-]/;

/** The last word of a text cut short (`…` at its end): what follows its last blank or quote, without the `…`. */
function lastWord(text: string): string {
  let i = text.length - 2;
  for (; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x22 || c === 0x27 || c === 0x60) break;
  }
  return text.slice(i + 1, text.length - 1);
}

/**
 * Text shorter than this holds a match of a built-in pattern only when {@link mayHoldShortSecret} says so: the matches
 * whose only character of {@link MAY_HOLD_SECRET} is `-` (OpenAI, GitLab and vendor tokens) are longer, except
 * Slack's (`xoxb-` and ten characters, `xapp-1-a-1-a`). So ids such as `ev-4f0c2a9b1d3e-1a` cost one test.
 */
const SHORT_TEXT = 22;

/** A character of every match {@link mayHoldShortSecret} looks for (`x` starts `xox` and `xapp`). */
const SHORT_GATE = /[A-Z_:=x]/;
const SHORT_SECRET_CHAR = /[A-Z_:=]/;

/**
 * Whether `text` holds an upper-case letter, `_`, `:`, `=`, `xox` or `xapp`: in text shorter than {@link SHORT_TEXT},
 * every built-in match does. Generated ids hold none of these characters (nor an `x`): one character-class test.
 */
function mayHoldShortSecret(text: string): boolean {
  return SHORT_GATE.test(text) && (SHORT_SECRET_CHAR.test(text) || text.includes('xox') || text.includes('xapp'));
}

/**
 * Whether `text`, which holds none of {@link MAY_HOLD_SECRET}'s characters, may hold a netrc entry's password (the
 * one pattern whose matches need none of them): it is long enough and holds `password`.
 */
function mayHoldNetrcPassword(text: string): boolean {
  return text.length >= NETRC_MIN_LENGTH && text.includes('password');
}

/**
 * Whether `text`, which holds none of {@link MAY_HOLD_SECRET}'s characters, may hold an Authorization header written as
 * a name and a value in a list (`"authorization","token 9944…"`, the one other form of a match that needs none of
 * them): it holds `authorization`. (Such a match is longer than {@link SHORT_TEXT}.)
 */
function mayHoldListedHeader(text: string): boolean {
  return text.includes('authorization');
}

/** The fields of a Backpack item of the stored state or a state delta (see backpack/state.ts, StateItemSchema). */
const ITEM_FIELDS: ReadonlySet<string> = new Set(['value', 'metadata', 'accessControl', 'quarantine']);

/**
 * Whether `record` (in its encoded form) has the shape of a Backpack item as the stores write one (a state item, a
 * quarantined item, a state-delta entry): only an item's fields, and a `metadata` of an item's (its `timestamp` and
 * `version` numbers and `tags` list). Under a secret-named key such an item keeps its provenance (see secretEntry);
 * any other object there (a Kubernetes Secret, whose `metadata` is its own) has every string blanked.
 */
export function isItemShape(record: Record<string, unknown>): boolean {
  const metadata = record['metadata'];
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return false;
  const meta = metadata as Record<string, unknown>;
  if (typeof meta['timestamp'] !== 'number' || typeof meta['version'] !== 'number' || !Array.isArray(meta['tags'])) return false;
  if (!onlyFields(meta, ITEM_META_FIELDS)) return false;
  const rules = record['accessControl'];
  if (rules !== undefined && (rules === null || typeof rules !== 'object' || Array.isArray(rules) || !onlyFields(rules as Record<string, unknown>, ITEM_RULE_FIELDS))) return false;
  return onlyFields(record, ITEM_FIELDS);
}

/** An item's metadata fields and its rules' fields (backpack/state.ts, ItemMetaSchema; backpack/access.ts). */
const ITEM_META_FIELDS: ReadonlySet<string> = new Set(['sourceNodeId', 'sourceNodeName', 'sourceNamespace', 'timestamp', 'version', 'tags']);
const ITEM_RULE_FIELDS: ReadonlySet<string> = new Set(['read', 'write']);

/** Whether every own field of `record` is one of `fields`. */
function onlyFields(record: Record<string, unknown>, fields: ReadonlySet<string>): boolean {
  for (const field of Object.keys(record)) if (!fields.has(field)) return false;
  return true;
}

/** The tag of a value in the codec's encoded form (`{ "$bp": "map", v }`: backpack/values.ts). */
const CODEC_TAG = '$bp';

/** The fields of each encoded form the codec writes besides its tag, and what each holds (see backpack/codec.ts). */
const ENCODED_FORMS: Readonly<Record<string, Readonly<Record<string, (v: unknown) => boolean>>>> = {
  number: { v: (v) => v === '-0' || v === 'NaN' || v === 'Infinity' || v === '-Infinity' },
  bigint: { v: (v) => typeof v === 'string' && /^-?\d+$/.test(v) },
  undefined: {},
  date: { v: (v) => v === null || typeof v === 'number' },
  map: { v: Array.isArray },
  set: { v: Array.isArray },
  typed: { t: (v) => typeof v === 'string', v: (v) => typeof v === 'string' },
  object: { v: (v) => v !== null && typeof v === 'object' && !Array.isArray(v) },
  unavailable: { key: (v) => typeof v === 'string', bytes: (v) => typeof v === 'number', summary: (v) => typeof v === 'string', reason: (v) => typeof v === 'string' },
};

/**
 * The codec's tag of `value` when it is a value in one of the codec's encoded forms, exactly (its tag, and only the
 * fields that form has, each of its kind); undefined for anything else, an object that only claims a tag included.
 */
function encodedTag(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const tag = record[CODEC_TAG];
  if (typeof tag !== 'string' || !Object.hasOwn(ENCODED_FORMS, tag)) return undefined;
  const form = ENCODED_FORMS[tag]!;
  for (const key of Object.keys(record)) {
    if (key === CODEC_TAG) continue;
    if (!Object.hasOwn(form, key) || !form[key]!(record[key])) return undefined;
  }
  return tag;
}

/** Byte arrays holding text are scanned; one with a NUL byte in its first this many bytes is binary data. */
const TEXT_PROBE_BYTES = 8000;
/** The encoded typed arrays (`{ "$bp": "typed", t, v }`) whose text is scanned: those of one-byte elements. */
const BYTE_ARRAY_TYPES = new Set(['Uint8Array', 'Uint8ClampedArray', 'Int8Array']);
/** The base64 of `[REDACTED]`: what a blanked byte array holds. */
const BLANK_BYTES = Buffer.from(REDACTED, 'latin1').toString('base64');
const DATE_TO_JSON = Date.prototype.toJSON;

/**
 * Records that name their value in a field of their own: per field that holds (a summary of) the value, the fields
 * that may name it. A Backpack event names its value in `key` (`{ key: 'password', valueSummary }`); a Kubernetes or
 * ECS env entry, a HAR or fetch header, an Azure app setting in `name` (`{ name: 'OPENAI_API_KEY', value }`); AWS in
 * `Name` or `Key` (`{ Name, Value }`: SSM parameters, tags); CloudFormation in `ParameterKey`. When one of the naming
 * fields holds a secret-named string, the value field is blanked; a record without such a pair is walked as any other.
 */
const VALUE_FIELDS: ReadonlyMap<string, readonly string[]> = new Map([
  ['value', ['key', 'name', 'header']],
  ['valueSummary', ['key']],
  ['previousValue', ['key']],
  ['newValue', ['key']],
  ['summary', ['key']],
  ['Value', ['Name', 'Key']],
  ['ParameterValue', ['ParameterKey']],
]);

/** What an object key is to the walk ({@link Redactor.keyKind}): any other key. */
const PLAIN_KEY = 0;
/** A secret-named key: everything under it is blanked. */
const SECRET_KEY = 1;
/** `auth`: a `user:password`, as it is or in base64, under it is blanked ({@link isAuthCredential}). */
const AUTH_KEY = 2;
/**
 * A private member of a JSON Web Key (RFC 7518: `d` of an EC, OKP or RSA key, RSA's `p`, `q`, `dp`, `dq`, `qi`, `k`
 * of a symmetric key), as `crypto.subtle.exportKey('jwk')` and `KeyObject.export({ format: 'jwk' })` write it: a
 * string blanked in an object that has a `kty` (what makes it a JWK); the public members (`kty`, `crv`, `x`, `y`, `n`,
 * `e`) are kept.
 */
const JWK_PRIVATE_KEY = 3;
const JWK_PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']);
/** A value field of {@link VALUE_FIELDS}: the index of its naming fields in {@link NAMING_FIELDS}, plus this. */
const VALUE_KEY = 4;
const NAMING_FIELDS = [...VALUE_FIELDS.values()];
const VALUE_FIELD_KINDS = new Map([...VALUE_FIELDS.keys()].map((field, i) => [field, VALUE_KEY + i]));
/** Per naming field of {@link VALUE_FIELDS}, the value fields it may name. */
const NAMED_FIELDS: ReadonlyMap<string, readonly string[]> = (() => {
  const out = new Map<string, string[]>();
  for (const [value, names] of VALUE_FIELDS) for (const name of names) out.set(name, [...(out.get(name) ?? []), value]);
  return out;
})();
/** Deeper than this, a value is refused rather than written unchecked. */
const MAX_DEPTH = 5000;

/** A JSON Schema's `$schema` (json-schema.org's dialects: drafts 4 to 2020-12). */
const JSON_SCHEMA_DIALECT = /^https?:\/\/json-schema\.org\//;
/** JSON Schema keywords whose value maps names (field names, definition names) to subschemas. */
const SCHEMA_NAMED_SUBSCHEMAS: ReadonlySet<string> = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** JSON Schema keywords whose value is a subschema or a list of them. */
const SCHEMA_SUBSCHEMAS: ReadonlySet<string> = new Set([
  'items', 'prefixItems', 'additionalItems', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames',
  'contains', 'not', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf',
]);
/**
 * JSON Schema's keywords (2020-12 and earlier drafts, and OpenAPI's `nullable`, `discriminator`, `example`): in an
 * object walked as a schema, every other key is data and gets the key rule.
 */
const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
  '$schema', '$id', '$ref', '$defs', 'definitions', '$comment', '$anchor', '$dynamicRef', '$dynamicAnchor', '$vocabulary', '$recursiveRef', '$recursiveAnchor',
  'type', 'enum', 'const', 'default', 'examples', 'example', 'title', 'description', 'readOnly', 'writeOnly', 'deprecated', 'nullable', 'discriminator',
  'properties', 'patternProperties', 'additionalProperties', 'unevaluatedProperties', 'propertyNames', 'required', 'dependentRequired', 'dependentSchemas', 'dependencies',
  'minProperties', 'maxProperties', 'items', 'prefixItems', 'additionalItems', 'unevaluatedItems', 'contains', 'minContains', 'maxContains', 'minItems', 'maxItems', 'uniqueItems',
  'minLength', 'maxLength', 'pattern', 'format', 'contentEncoding', 'contentMediaType', 'contentSchema',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else',
]);
/** JSON Schema keywords that hold data (values an answer may take or is given). */
const SCHEMA_DATA: ReadonlySet<string> = new Set(['default', 'const', 'enum', 'examples', 'example']);

/**
 * `record` with each value replaced by `value(key, item)` and each key by `keyOf(key)` (a key that then collides
 * with one already there gets `freeKey`'s), copied only when something changed, as walkObject copies. walkObject
 * keeps its own loop: it walks every object of every step, and through this function it took 1.3-1.5x the time
 * (6 payloads of a step, 500,000 times, 6 interleaved runs).
 */
function mapEntries(
  record: Record<string, unknown>,
  value: (key: string, item: unknown) => unknown,
  keyOf: (key: string) => string = (key) => key,
  freeKey: (out: Record<string, unknown>, key: string) => string = (_out, key) => key,
): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  let index = 0;
  for (const key in record) {
    const item = record[key];
    const next = value(key, item);
    const nextKey = keyOf(key);
    if (out === undefined && (next !== item || nextKey !== key)) {
      out = {};
      let copied = 0;
      for (const earlier in record) {
        if (copied++ === index) break;
        setOwn(out, earlier, record[earlier]);
      }
    }
    if (out !== undefined) setOwn(out, nextKey === key ? key : freeKey(out, nextKey), next);
    index++;
  }
  return out ?? record;
}

/** `array` with each element replaced by `map(element)`, copied only when something changed. */
function mapArray(array: readonly unknown[], map: (element: unknown) => unknown): readonly unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < array.length; i++) {
    const next = map(array[i]);
    if (next !== array[i]) {
      out ??= array.slice();
      out[i] = next;
    }
  }
  return out ?? array;
}

function tooDeep(): RangeError {
  return new RangeError(`redaction: value nested deeper than ${MAX_DEPTH} levels; it cannot be checked for secrets`);
}

interface CompiledPattern {
  readonly regex: RegExp;
  readonly minRun: number;
  readonly gate: RegExp | undefined;
  readonly minLength: number;
  readonly accept: ((match: string, before: string) => boolean) | undefined;
}

/**
 * A copy of `pattern` with RegExps of its own: the catalogue as it was when this module loaded, before code that
 * imports the package runs (the exported patterns' RegExps can be changed in place, by `RegExp.prototype.compile`).
 */
function ownCopy(pattern: SecretPattern): SecretPattern {
  return Object.freeze({ ...pattern, regex: new RegExp(pattern.regex.source, pattern.regex.flags), ...(pattern.gate ? { gate: new RegExp(pattern.gate.source, pattern.gate.flags) } : {}) });
}

/** The built-in catalogue each redactor compiles (see {@link ownCopy}), the vendor tokens' pattern apart. */
const CATALOGUE: readonly SecretPattern[] = DEFAULT_SECRET_PATTERNS.filter((pattern) => pattern !== VENDOR_TOKEN_PATTERN).map(ownCopy);
const VENDOR: SecretPattern = ownCopy(VENDOR_TOKEN_PATTERN);

function compile(pattern: SecretPattern): CompiledPattern {
  return {
    regex: new RegExp(pattern.regex.source, pattern.regex.flags.includes('g') ? pattern.regex.flags : `${pattern.regex.flags}g`),
    gate: pattern.gate ? new RegExp(pattern.gate.source, 'i') : undefined,
    minLength: pattern.minLength,
    minRun: pattern.minRun ?? 0,
    accept: pattern.accept,
  };
}

/** Token characters (see {@link SecretPattern.minRun}), by char code below 128. */
const TOKEN_CHAR = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.~%-') TOKEN_CHAR[c.charCodeAt(0)] = 1;

function isTokenChar(c: number): boolean {
  return c < 128 && TOKEN_CHAR[c] === 1;
}

/**
 * Whether `text` holds a run of at least `length` token characters. Such a run covers at least two of every
 * `length / 2`-th position, so only those are looked at, and the run is measured around the ones that are token
 * characters (about half the work of a scan of every character in prose).
 */
function hasTokenRun(text: string, length: number): boolean {
  const stride = length >> 1;
  let from = 0;
  for (let i = stride - 1; i < text.length; i += stride) {
    if (!isTokenChar(text.charCodeAt(i))) continue;
    let start = i;
    while (start > from && isTokenChar(text.charCodeAt(start - 1))) start--;
    let end = i + 1;
    while (end < text.length && isTokenChar(text.charCodeAt(end))) end++;
    if (end - start >= length) return true;
    from = end;
    i = end - 1;
  }
  return false;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** A typed array of one-byte elements: a `Uint8Array` (also a `Buffer`), `Uint8ClampedArray` or `Int8Array`. */
function isByteArray(value: object): value is Uint8Array | Uint8ClampedArray | Int8Array {
  return value instanceof Uint8Array || value instanceof Uint8ClampedArray || value instanceof Int8Array;
}

/** The text of `bytes` (one character per byte, so ASCII secrets keep their spelling), or undefined for binary data. */
function bytesText(bytes: Buffer): string | undefined {
  return bytes.subarray(0, TEXT_PROBE_BYTES).includes(0) ? undefined : bytes.toString('latin1');
}

/** A byte array of the kind of `like` holding the bytes of `text` (one byte per character). */
function bytesLike(like: Uint8Array | Uint8ClampedArray | Int8Array, text: string): Uint8Array | Uint8ClampedArray | Int8Array {
  if (Buffer.isBuffer(like)) return Buffer.from(text, 'latin1');
  const bytes = new Uint8Array(Buffer.from(text, 'latin1'));
  return like instanceof Uint8ClampedArray ? new Uint8ClampedArray(bytes.buffer) : like instanceof Int8Array ? new Int8Array(bytes.buffer) : bytes;
}

/**
 * What `JSON.stringify` writes for `value`, an object that is not plain data, under `key`, one level deep: the result
 * of its `toJSON(key)`; the value of a boxed primitive; an array as it is; any other object as a plain object of its
 * own enumerable properties, without those JSON leaves out (functions, symbols, undefined).
 */
function jsonForm(value: object, key: string | number): unknown {
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  const form: unknown = typeof toJSON === 'function' ? (toJSON as (key: string) => unknown).call(value, String(key)) : value;
  if (form === null || typeof form !== 'object' || Array.isArray(form)) return form;
  if (form instanceof Number || form instanceof String || form instanceof Boolean) return form.valueOf();
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(form)) {
    const item = (form as Record<string, unknown>)[name];
    if (item !== undefined && typeof item !== 'function' && typeof item !== 'symbol') setOwn(out, name, item);
  }
  return out;
}

/** Sets an own property, also for the key `__proto__`. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Replaces every match of `pattern` in `text` that it accepts (or its `secret` group) with the marker. */
function replaceMatches(text: string, pattern: CompiledPattern): string {
  const { regex, accept } = pattern;
  regex.lastIndex = 0;
  if (!regex.test(text)) return text;
  regex.lastIndex = 0;
  return text.replace(regex, (...args: unknown[]) => {
    const match = args[0] as string;
    // The arguments end with the offset, the text and, for a pattern with named groups, the groups.
    const groups = args[args.length - 1];
    const named = groups !== null && typeof groups === 'object';
    if (accept !== undefined) {
      const offset = args[args.length - (named ? 3 : 2)] as number;
      if (!accept(match, offset > 0 ? text[offset - 1]! : '')) return match;
    }
    const secret = named ? (groups as { secret?: string }).secret : undefined;
    if (secret === undefined || secret === '') return REDACTED;
    const at = match.lastIndexOf(secret);
    return `${match.slice(0, at)}${REDACTED}${match.slice(at + secret.length)}`;
  });
}

/**
 * Where a quoted value may end without its closing quote: at the `…` that ends a text cut short by a summary
 * (`{user: "bob", password: "correct horse …`), so that the words after the first are replaced too.
 */
const CUT = '(?=…$)';
/**
 * The value of a named field in text: a string in double quotes (JSON escapes allowed), in escaped double quotes at
 * any depth (`\"...\"`, JSON quoted inside a string, `\\\"...\\\"` that quoted again; the quotes escaped deeper inside
 * it are part of it), in single quotes, or a run of characters up to a blank or separator (not starting with a
 * backslash, `{` or `[`: a structure is {@link blankStructure}'s). A quoted value whose closing quote a summary cut off
 * runs to the `…` that ends the text. Groups: double, the escape (number `escape` of the whole pattern: a numbered group, as a named one
 * costs an object per match), escaped, single, bare.
 */
function namedValue(escape: number): string {
  const same = `\\${escape}`;
  return String.raw`(?:"((?:[^"\\]|\\.)*)(?:"|${CUT})|(\\+)"((?:[^"\\]|\\+(?![\\"])|${same}\\+")*?)(?:${same}"|${CUT})|'([^']*)(?:'|${CUT})|(${INSPECT_BYTES}|(?!${INSPECT_TAG}[ \t]+(?:\{|\[(?!REDACTED\])))[^\s"'\`,;&}\])\\{\[][^\s"'\`,;&}\])]*))`;
}
/**
 * `name: value`, `name = value`, `name => value`, the name optionally quoted (`"name"`, `'name'`, `\"name\"`): see
 * Redactor.redactNamed. It starts only where a run of backslashes does, so a long run costs one scan, not one per
 * backslash.
 */
const NAMED_ASSIGNMENT = new RegExp(String.raw`(?<![\w$.\\-])(\\*["']|)([A-Za-z_$][\w$.-]*)\1[ \t]*(?:=>|=|:)[ \t]*${namedValue(4)}`, 'g');
/**
 * A named field whose value is a structure (`secrets: {`, `"passwords": [`, and an option's name as a key:
 * `"--token": [`): see {@link blankStructure}.
 */
const NAMED_STRUCTURE = new RegExp(String.raw`(?<![\w$.\\-])(\\*["']|)(-{0,2}[A-Za-z_$][\w$.-]*)\1[ \t]*(?:=>|=|:)[ \t]*(?:${INSPECT_TAG}[ \t]+|(?:[A-Za-z_$][\w$]{0,99}|\[REDACTED\])[ \t]+(?=\{))?(?=[{[])`, 'g');
/** A value as {@link NAMED_ASSIGNMENT} reads it, at a given place (the value of a {@link NAMED_PAIR}). */
const VALUE_AT = new RegExp(namedValue(2), 'y');
/**
 * A command-line option and its value: `--name value`, `--name=value`, `-name value` (Go's flags). A value starting
 * with `-` is the next option. One-letter options are left alone: `-p` is a password to mysql but a port to ssh and
 * docker, and `mkdir -p` takes none.
 */
const NAMED_OPTION = new RegExp(String.raw`(?<![A-Za-z0-9-])--?([A-Za-z][\w.-]{0,100})(?:[ \t]+|=)(?!-)${namedValue(3)}`, 'g');
/** An argument vector's option element whose value is the next element: `--name` or `-name`, two letters or more. */
const SECRET_OPTION = /^--?([A-Za-z][\w.-]+)$/;

/**
 * Whether `arg`, an element of an argument vector, is a command-line option whose name is secret-named
 * (`--password`, `-token`, and `--pass`; one-letter options are left alone, as in text).
 */
function isSecretOption(arg: unknown, isSecretName: (name: string) => boolean): boolean {
  if (typeof arg !== 'string' || arg.length < 3 || arg.charCodeAt(0) !== 0x2d) return false;
  const name = SECRET_OPTION.exec(arg)?.[1];
  // `--pass` alone is a password where a key named `pass` may be anything.
  return name !== undefined && (isSecretName(name) || name.toLowerCase() === 'pass');
}

/** An Authorization header's name, as a flat list of names and values holds it (Node's `rawHeaders`). */
const HEADER_NAME = /^(?:proxy-)?authorization$/i;
/**
 * An Authorization header's value: credentials, after a scheme or not (`Token 9944…`, `9944…`, `Digest username="…"`),
 * read as the catalogue's `authorization-credentials` pattern reads them (a token of 8 or more characters holding a
 * digit and a letter, or 24, and not a date; or auth-params), so that a list of labels keeps `Date of service`.
 */
const LISTED_CREDENTIAL = /^(?:[\w!#$%&*+.^|~[\]-]{1,64}[ \t]+)?(?:[\w!#$%&*+.^|~-]{1,64}[ \t]*=.*|(?=[^\s"'\\,;()]*\d)(?=[^\s"'\\,;()]*[A-Za-z])[^\s"'\\,;()]{8,}|[^\s"'\\,;()]{24,})\s*$/;

/**
 * Whether `item`, an element of a list, is the value of the element before it (`previous`): of a secret-named option
 * in an argument vector (`["--password", "…"]`, an MCP server's `args`: a string that is not itself an option), or of
 * an Authorization header in a flat list of names and values (`['Authorization', 'Token …']`, Node's `rawHeaders`:
 * credentials, see LISTED_CREDENTIAL).
 */
export function isSecretOptionValue(previous: unknown, item: unknown, isSecretName: (name: string) => boolean = isSecretKey): boolean {
  if (typeof item !== 'string' || item === '') return false;
  if (typeof previous === 'string' && HEADER_NAME.test(previous)) return item.length <= 8192 && LISTED_CREDENTIAL.test(item) && !isDateAlone(lastToken(item));
  if (isSecretHeaderName(previous, isSecretName)) return isListedHeaderValue(previous as string, item);
  return item.charCodeAt(0) !== 0x2d && isSecretOption(previous, isSecretName);
}

/** A header's name in the form HTTP writes one: words joined by `-` (`X-Api-Key`, `Private-Token`). */
const HYPHENATED_HEADER = /^[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+$/;
/** The cookie headers, whose values are sessions. */
const COOKIE_HEADER = /^(?:set-)?cookie2?$/i;

/**
 * Whether `name`, an element of a flat list of names and values (Node's `rawHeaders`: `['X-Api-Key', '…']`), is a
 * secret-named header's: a hyphenated name the key rule takes for a secret (`X-Api-Key`, `X-Auth-Token`), or a
 * cookie header. Its value, the next element, is then blanked whatever it looks like.
 */
function isSecretHeaderName(name: unknown, isSecretName: (name: string) => boolean): boolean {
  if (typeof name !== 'string' || name.length > 100) return false;
  return COOKIE_HEADER.test(name) || (HYPHENATED_HEADER.test(name) && isSecretName(name));
}

/**
 * A header's name as HTTP spells it (`X-Request-Id`, `content-type`, `Authorization`: letters joined by `-`, or a
 * common one-word header): in a list of names, not a value. (A value of only letters and dashes after a secret header
 * is kept for it: a real key holds digits or other characters.)
 */
const SPELLED_HEADER = /^(?:[A-Za-z]+(?:-[A-Za-z]+)+|authorization|cookie|accept|host|origin|referer|connection|expires|pragma|range|via|warning|date|etag|location|vary|server)$/i;

/**
 * Whether `value`, the element after secret-named header `name` in a list, is that header's value: not another
 * header's name (a list of header names: `['Content-Type', 'X-Api-Key', 'X-Request-Id']`), and for a cookie header
 * a `name=value` pair (not `['Cookie', 'Brownie']`).
 */
function isListedHeaderValue(name: string, value: string): boolean {
  if (SPELLED_HEADER.test(value)) return false;
  return !COOKIE_HEADER.test(name) || value.includes('=');
}
/** The quoted value at the start of a text (what follows a listed header's name). */
const QUOTED_AT_START = /^\\*(["'])([^"'\\]{0,8192})\1/;
/** The marker as a bare value reads it (up to its closing bracket). */
const REDACTED_BARE = REDACTED.slice(0, -1);
/**
 * Every built-in secret name holds one of these (see redact/keys.ts), and so does `auth` (a base64 `user:password`
 * under it is replaced); a text without any has no named secret.
 */
const NAMED_GATE = /key|secret|pass|pw|token|cookie|credential|auth|mnemonic|phrase|assertion|verifier/i;
/** {@link NAMED_GATE} as a table walk (see literal-set.ts). */
const NAMED_GATE_SET = LiteralSet.of([NAMED_GATE.source])!;
/**
 * A name/value pair written as a two-element list whose first element is a quoted name (`["DB_PASSWORD", "…"]`, as a
 * value summary shows `Object.entries(process.env)`), up to its value. Groups: the name.
 */
const TUPLE_PAIR = /\[\s*(["'])([A-Za-z0-9_.$-]{1,100})\1\s*,\s*/g;
/**
 * A header's name in a flat list of names and values as text (`[ 'Host', 'h', 'X-Api-Key', '…' ]`, `util.inspect` of
 * Node's `rawHeaders`), quoted, up to the value that follows it. Groups: the quote, the name.
 */
const LISTED_HEADER = /[[,][ \t\r\n]{0,100}(["'])([A-Za-z][A-Za-z0-9-]{1,99})\1\s*,\s*/g;
/**
 * A private member of a JSON Web Key in text (`"d":"…"`, `d: '…'`: a value summary, JSON, an error message), named
 * as {@link JWK_PRIVATE_MEMBERS} are, up to its value: replaced in text that has a `kty`. Groups: the quote, the name.
 */
const JWK_MEMBER = /(?<![\w$.\\-])(\\*["']?)(d|p|q|dp|dq|qi|k)\1[ \t]*[:=][ \t]*(?=\\*["'])/g;
/**
 * A `kty` or `crv` field in text (`"kty":`, `crv: `), or an `alg` naming a JOSE algorithm (`alg: "HS256"`): what makes
 * an object a JSON Web Key (an Ed25519 key as Node exports it starts `{crv, d, x, kty}`, a key with sorted members
 * `{alg, k, kid, kty}`: a summary cut at 80 characters has no `kty`).
 */
const JWK_KTY = /(?<![\w$.\\-])\\*["']?(?:(?:kty|crv)\\*["']?[ \t]*[:=]|alg\\*["']?[ \t]*[:=][ \t]*\\*["']?(?:[HRP]S|ES)(?:256|384|512)\b)/;
/**
 * An XML element holding text: `<password>…</password>` (SOAP, Maven's settings.xml, .NET's web.config), with a
 * namespace prefix and attributes (`<wsse:Password Type="…">`), its text plain or CDATA (on lines of its own too,
 * also as a JSON string writes them: `\n`), also when a summary's cut (`…` at the end of the text) took the rest. Groups: the element's name (with its
 * prefix), its local name, its text.
 */
const XML_ELEMENT = /<((?:[\w.-]{1,50}:)?([A-Za-z_][\w.-]{0,99}))(?:\s[^<>]{0,1000})?>((?:\s|\\[nrt]){0,100}<!\[CDATA\[(?:[^\]]|\](?!\]>)){0,8192}(?:\]\]>(?:\s|\\[nrt]){0,100}|(?=…$))|[^<]{1,8192})(?:<\/\1>|(?=…$))/g;
/** A character every named field holds: the mark of an assignment or the dash of an option. */
const ASSIGNMENT_MARK = /[:=-]/;
/** The marks {@link NAMED_ASSIGNMENT} ends a name with (`=>` starts with `=`). */
const ASSIGNMENT_MARKS = /[:=]/g;
/** What may stand between a name and its mark besides blanks: its closing quote, escaped at any depth. */
const QUOTING = new Set([0x22, 0x27, 0x5c]);

/** Whether `name` is `auth` in any case (see {@link isAuthCredential}). */
function isAuthName(name: string): boolean {
  return name.length === 4 && name.toLowerCase() === 'auth';
}

/** A character of a name in {@link NAMED_ASSIGNMENT}: `[\w$.-]`. */
function isNameChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x24 || c === 0x2e || c === 0x2d;
}

/** A redaction pass: the built-in catalogue plus the user's patterns and secret key names. */
export class Redactor {
  private readonly keys: SecretKeyMatcher;
  private readonly gated: CompiledPattern[] = [];
  private readonly ungated: CompiledPattern[] = [];
  /** Patterns scanned only in text holding a long run of token characters ({@link SecretPattern.minRun}). */
  private readonly byRun: CompiledPattern[] = [];
  /** The vendor tokens' pattern (scanned where {@link byRun} are), which runs before the others (see {@link redactText}). */
  private readonly vendor: CompiledPattern;
  /** The shortest {@link SecretPattern.minRun} of {@link byRun}. */
  private readonly minRun: number;
  /**
   * Union of every gate: one scan tells whether any gated pattern can match. A table walk when the gates spell only
   * literals (the built-in ones do), else a regular expression.
   */
  private readonly anyGate: { test(text: string): boolean };
  private readonly minLength: number;
  private readonly userPatterns: number;
  /** {@link redactText} of object keys, which repeat from event to event. */
  private readonly keyTexts = new Map<string, string>();

  /** Compiles the catalogue with `options`; throws a TypeError naming a bad pattern or key name. */
  constructor(options: RedactionOptions = {}) {
    this.keys = new SecretKeyMatcher(options.secretKeys ?? []);
    for (const pattern of CATALOGUE) {
      (pattern.gate ? this.gated : pattern.minRun !== undefined ? this.byRun : this.ungated).push(compile(pattern));
    }
    for (const [i, regex] of (options.patterns ?? []).entries()) {
      if (!(regex instanceof RegExp)) throw new TypeError(`redaction: patterns[${i}] must be a RegExp, got ${typeof regex}`);
      if (regex.test('')) throw new TypeError(`redaction: patterns[${i}] (${String(regex)}) matches the empty string`);
      this.ungated.push(compile({ id: `user-${i}`, source: 'user', regex, minLength: 1 }));
    }
    this.userPatterns = options.patterns?.length ?? 0;
    const gates = this.gated.map((p) => p.gate!.source);
    this.anyGate = LiteralSet.of(gates) ?? new RegExp(gates.join('|'), 'i');
    this.vendor = compile(VENDOR);
    this.minLength = Math.min(...[...this.gated, ...this.ungated, ...this.byRun, this.vendor].map((p) => p.minLength));
    this.minRun = Math.min(...[...this.byRun, this.vendor].map((p) => p.minRun));
    this.renewEnvironment();
  }

  /**
   * The values of the process's secret-named environment variables (`DB_PASSWORD`, `OPENAI_API_KEY`, a name the
   * options add), as they were when this redactor was made or last renewed ({@link renewEnvironment}): wherever one
   * appears, it is a secret, whatever its shape
   * (a self-hosted endpoint's key, a password a flow file pulled in with `${DB_PASSWORD}`, a key a node read from the
   * environment). Values shorter than {@link KNOWN_MIN_LENGTH} are left out: replacing them everywhere would blank
   * ordinary text.
   */
  private known: readonly string[] = [];

  /**
   * Reads the secret-named environment variables again (see {@link known}): a variable set after this redactor was
   * made (`dotenv` loaded late, a secret fetched from a vault at start-up, a rotation) is then replaced too, and a
   * value known before stays known. The runtime asks the shared redactor at every run's start, and the memory store
   * at every write; a long-lived process that sets such variables between its own uses of a redactor calls it itself.
   */
  renewEnvironment(): void {
    // The quick answer, as a run's start asks it: the same variables, and the same values of the secret-named ones.
    const names = Object.keys(process.env);
    const last = this.environment;
    if (last !== undefined && names.length === last.names.length && names.every((name, i) => name === last.names[i]) && last.secret.every(([name, value]) => process.env[name] === value)) {
      return;
    }
    const secret = names.filter((name) => this.keys.isSecretKey(name)).map((name) => [name, process.env[name]] as const);
    this.environment = { names, secret };
    // A value once known stays known (a rotated secret may still be quoted by what a run reads). Longest first: a
    // value that holds another is replaced whole.
    const now = secret.map(([, value]) => value).filter((value): value is string => value !== undefined && value.length >= KNOWN_MIN_LENGTH);
    const known = [...new Set([...now, ...this.known])].sort((a, b) => b.length - a.length);
    if (known.length === this.known.length) return;
    this.known = known;
    // Cached verdicts on text, which the known values decide too.
    this.keyTexts.clear();
  }

  /** The environment {@link renewEnvironment} last read: every variable's name, and each secret-named one's value. */
  private environment: { names: readonly string[]; secret: readonly (readonly [string, string | undefined])[] } | undefined;

  /** Whether `text` holds one of {@link known}. */
  private holdsKnown(text: string): boolean {
    for (const value of this.known) if (text.includes(value)) return true;
    return false;
  }

  /** Whether an object key (or Map key) names a secret. */
  isSecretKey(key: string): boolean {
    return this.keys.isSecretKey(key);
  }

  /** {@link isSecretKey} as a function of its own, made once (the walk of every array and the named pass take it). */
  private readonly isSecretName = (name: string): boolean => this.keys.isSecretKey(name);

  /** False when the pre-checks tell that {@link redactText} leaves `text` as it is. */
  private mayHoldSecret(text: string): boolean {
    if (this.known.length > 0 && text.length >= KNOWN_MIN_LENGTH && this.holdsKnown(text)) return true;
    if (text.length < this.minLength) return false;
    if (this.userPatterns > 0) return true;
    // Every built-in pattern needs one of these characters, but a netrc entry's (`machine h login u password p`) and
    // a header in a flat list (`"authorization","token 9944…"`); most text of a run (summaries, ids) has none, nor
    // `password` or `authorization`.
    if (text.length < SHORT_TEXT ? mayHoldShortSecret(text) : MAY_HOLD_SECRET.test(text) || mayHoldNetrcPassword(text) || mayHoldListedHeader(text)) return true;
    return text.charCodeAt(text.length - 1) === 0x2026 && MAY_START_SECRET.test(lastWord(text));
  }

  /**
   * Whether `text` holds anything {@link redactText} would replace. Meant for names and ids written as they are (an
   * event's nodeId or namespace), which must not hold a secret: the verdict is cached for text the pre-checks do not
   * clear, as it is for object keys.
   */
  holdsSecret(text: string): boolean {
    return this.mayHoldSecret(text) && this.redactKey(text) !== text;
  }

  /** `text` with every secret-looking part replaced by `'[REDACTED]'` (the same string when there is none). */
  redactText(text: string): string {
    if (!this.mayHoldSecret(text)) return text;
    const truncated = text.charCodeAt(text.length - 1) === 0x2026;
    let out = text;
    for (const value of this.known) if (out.includes(value)) out = out.split(value).join(REDACTED);
    // Vendor tokens (a fixed prefix and a body) first: one whose body happens to spell an assignment (`fio-u-0pWD=…`)
    // is taken whole, not cut in two by the assignment pattern, which would leave its start.
    const tokenRun = text.length >= this.minRun && hasTokenRun(text, this.minRun);
    if (tokenRun) out = replaceMatches(out, this.vendor);
    if (this.anyGate.test(text)) {
      for (const pattern of this.gated) {
        if (text.length >= pattern.minLength && pattern.gate!.test(text)) out = replaceMatches(out, pattern);
      }
    }
    for (const pattern of this.ungated) if (text.length >= pattern.minLength) out = replaceMatches(out, pattern);
    if (tokenRun) {
      for (const pattern of this.byRun) if (text.length >= pattern.minLength) out = replaceMatches(out, pattern);
    }
    // A name/value pair as a list (`["DB_PASSWORD", "…"]`): a value summary of `Object.entries(...)`, which the walk of
    // the value itself blanks (see walkArray); text shows it with no assignment mark.
    // Whether the text names a secret (asked once: every pass below but the JWK one needs a secret name).
    const named = this.keys.hasExtra || NAMED_GATE_SET.test(out);
    if (named) {
      const listed = out.includes('[');
      if (listed && (out.includes('["') || out.includes("'"))) out = this.replaceTuplePairs(out);
      // A flat header list as text (`[ 'X-Api-Key', '…' ]`), as walkArray reads it as a list.
      if ((listed || out.includes(',')) && (out.includes('-') || out.includes('ookie'))) out = this.replaceListedHeaders(out);
      if (out.includes('</') || (truncated && out.includes('<'))) out = this.replaceXmlElements(out);
    }
    // A JSON Web Key in text (a value summary cuts an Ed25519 key after its `d`): its private members.
    if ((out.includes('kty') || out.includes('crv') || out.includes('alg')) && JWK_KTY.test(out)) out = this.replaceValuesAfter(out, JWK_MEMBER, () => true);
    // A value the catalogue replaced in part (the first word of a quoted value) is one the named pass completes.
    if ((named || out !== text) && ASSIGNMENT_MARK.test(out)) {
      if (out.includes('\n')) out = redactYamlBlockValues(out, this.isSecretName, REDACTED);
      out = this.redactNamed(out);
    }
    if (truncated) {
      // Only the end can hold a cut secret: matching there keeps the cost independent of the text's length.
      const from = Math.max(0, out.length - 160);
      const tail = out.slice(from).replace(TRUNCATED_SECRET_TAIL, `${REDACTED}…`);
      if (tail !== out.slice(from)) out = out.slice(0, from) + tail;
    }
    return out;
  }

  /**
   * `text` with the value of every `name: value`, `name = value` or `--name value` whose name is secret-named by the key
   * rule ({@link isSecretKey}, the user's names included) replaced: the form a value summary (`{url: "…", secretKey:
   * "…"}`), JSON quoted inside a string, a log line, a command line or a config file gives an object's fields in text,
   * where the catalogue's own assignment pattern knows fewer names than the key rule.
   */
  private redactNamed(text: string): string {
    let out = this.mayReplaceAssigned(text) ? this.replaceAssigned(text) : text;
    // A record naming its value in another field (`name: "DB_PASSWORD", value: …`): its own name is no secret.
    if (out.includes('alue')) out = this.replacePairs(out);
    if (!out.includes('-')) return out;
    NAMED_OPTION.lastIndex = 0;
    return out.replace(NAMED_OPTION, (match: string, name: string, double?: string, _escape?: string, escaped?: string, single?: string, bare?: string) =>
      this.namedValueReplaced(match, name, double ?? escaped ?? single ?? bare ?? '', isSecretOption(`--${name}`, this.isSecretName)),
    );
  }

  /**
   * The `name: value` pass of {@link redactNamed}: a secret-named field's value (every scalar of it when it is a
   * structure); under `auth`, a base64 `user:password` too.
   */
  private replaceAssigned(text: string): string {
    const structured = text.includes('{') || text.includes('[') ? this.blankNamedStructures(text) : text;
    NAMED_ASSIGNMENT.lastIndex = 0;
    return structured.replace(NAMED_ASSIGNMENT, (match: string, _quote: string, name: string, double?: string, _escape?: string, escaped?: string, single?: string, bare?: string) => {
      const value = double ?? escaped ?? single ?? bare ?? '';
      return this.namedValueReplaced(match, name, value, this.keys.isSecretKey(name) || (isAuthName(name) && isAuthCredential(value)));
    });
  }

  /**
   * Whether a number right after `key`, in a structure a secret-named field holds, is a secret (see
   * {@link blankStructure}): under a secret-named key, or in a `value` field (as {@link secretEntry} reads a
   * structure's `value`; text does not tell depths apart, so every `value` there).
   */
  private readonly numberIsSecret = (key: string): boolean => key === 'value' || this.keys.isSecretKey(key);

  /** `text` with every scalar of the structure a secret-named field holds replaced ({@link blankStructure}). */
  private blankNamedStructures(text: string): string {
    let out = '';
    let from = 0;
    NAMED_STRUCTURE.lastIndex = 0;
    for (let m = NAMED_STRUCTURE.exec(text); m !== null; m = NAMED_STRUCTURE.exec(text)) {
      const at = m.index + m[0].length;
      if (!this.keys.isSecretKey(m[2]!) || text.startsWith(REDACTED, at)) continue;
      const blanked = blankStructure(text, at, REDACTED, this.numberIsSecret);
      out += text.slice(from, at) + blanked.text;
      from = blanked.end;
      NAMED_STRUCTURE.lastIndex = blanked.end;
    }
    return from === 0 ? text : out + text.slice(from);
  }

  /**
   * `text` with the value of every record that names it in another field with a secret name replaced
   * (`{name: "DB_PASSWORD", value: "…"}`, see {@link NAMED_PAIR} and {@link VALUE_FIELDS}).
   */
  private replacePairs(text: string): string {
    return this.replaceValuesAfter(text, NAMED_PAIR, (m) => VALUE_FIELDS.get(m[3]!)!.includes(m[1]!) && this.keys.isSecretKey(m[2]!));
  }

  /** `text` with the value of every `["<secret name>", value]` list replaced (see {@link TUPLE_PAIR}). */
  private replaceTuplePairs(text: string): string {
    return this.replaceValuesAfter(text, TUPLE_PAIR, (m) => this.keys.isSecretKey(m[2]!));
  }

  /** `text` with the value after every secret-named header of a listed header list replaced (see {@link LISTED_HEADER}). */
  private replaceListedHeaders(text: string): string {
    return this.replaceValuesAfter(text, LISTED_HEADER, (m) => {
      if (!isSecretHeaderName(m[2], this.isSecretName)) return false;
      const value = QUOTED_AT_START.exec(m.input.slice(m.index + m[0].length, m.index + m[0].length + 8200))?.[2];
      return value === undefined || isListedHeaderValue(m[2]!, value);
    });
  }

  /** `text` with the text of every XML element with a secret name replaced (see {@link XML_ELEMENT}). */
  private replaceXmlElements(text: string): string {
    XML_ELEMENT.lastIndex = 0;
    return text.replace(XML_ELEMENT, (match: string, name: string, local: string, inner: string) => {
      if (!this.keys.isSecretKey(local) || inner === REDACTED) return match;
      const open = match.indexOf('>') + 1;
      // Its closing tag, unless a summary's cut took it (the text ends with `…` inside the element).
      const close = match.endsWith(`</${name}>`) ? `</${name}>` : '';
      return `${match.slice(0, open)}${this.replaced(inner, REDACTED)}${close}`;
    });
  }

  /**
   * `text` with the value that follows each match of `pattern` (a global regular expression ending where the value
   * starts) replaced, where `secret` says the match names a secret: a structure has every scalar blanked
   * ({@link blankStructure}), a scalar (as {@link VALUE_AT} reads it) is replaced whole.
   */
  private replaceValuesAfter(text: string, pattern: RegExp, secret: (match: RegExpExecArray) => boolean): string {
    let out = '';
    let from = 0;
    pattern.lastIndex = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
      if (!secret(m)) continue;
      const at = m.index + m[0].length;
      let replaced: string;
      let end: number;
      const c = text.charCodeAt(at);
      if (c === 0x7b || c === 0x5b) {
        if (text.startsWith(REDACTED, at)) continue;
        ({ text: replaced, end } = blankStructure(text, at, REDACTED, this.numberIsSecret));
      } else {
        VALUE_AT.lastIndex = at;
        const v = VALUE_AT.exec(text);
        const value = v === null ? '' : (v[1] ?? v[3] ?? v[4] ?? v[5] ?? '');
        if (value === '' || value === REDACTED || value === REDACTED_BARE) continue;
        const k = v![0].lastIndexOf(value);
        replaced = `${v![0].slice(0, k)}${REDACTED}${v![0].slice(k + value.length)}`;
        end = at + v![0].length;
      }
      out += text.slice(from, at) + replaced;
      from = end;
      pattern.lastIndex = end;
    }
    return from === 0 ? text : out + text.slice(from);
  }

  /** Whether `name` is secret-named or `auth` (whose value {@link replaceAssigned} replaces when it is a credential). */
  private namesSecretOrAuth(name: string): boolean {
    return this.keys.isSecretKey(name) || isAuthName(name);
  }

  /**
   * False when {@link replaceAssigned} replaces nothing in `text`: no mark of an assignment (`:`, `=`) follows a
   * secret name (the run of name characters before it, past blanks and quotes, which is where every match has its
   * name), and no value holds the marker (a value the catalogue replaced in part). The regular expression tries a
   * name at every word and costs most of a long prose's redaction (about 40% of 20 KB that mentions a token and has
   * colons); this looks only at the marks.
   */
  private mayReplaceAssigned(text: string): boolean {
    if (text.includes(REDACTED_BARE)) return true;
    ASSIGNMENT_MARKS.lastIndex = 0;
    for (let mark = ASSIGNMENT_MARKS.exec(text); mark !== null; mark = ASSIGNMENT_MARKS.exec(text)) {
      let end = mark.index;
      while (end > 0 && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--;
      while (end > 0 && QUOTING.has(text.charCodeAt(end - 1))) end--;
      let start = end;
      while (start > 0 && isNameChar(text.charCodeAt(start - 1))) start--;
      if (start < end && this.namesSecretOrAuth(text.slice(start, end))) return true;
    }
    return false;
  }

  /**
   * `match`, a named field ending with its `value`, with the value replaced when `name` is secret-named (`secret`:
   * the caller's verdict on the name, for an option).
   */
  private namedValueReplaced(match: string, name: string, value: string, secret = this.keys.isSecretKey(name)): string {
    // A value an earlier pattern replaced whole already (a bare value stops at the marker's closing bracket). A value it
    // replaced in part (a quoted value with blanks, of which the catalogue takes the first word, as it does for names
    // the key rule leaves alone: `pwd: "correct horse"`) is replaced whole here.
    if (value === '' || value === REDACTED || value === REDACTED_BARE) return match;
    if (!secret && !value.startsWith(REDACTED)) return match;
    const at = match.lastIndexOf(value);
    return `${match.slice(0, at)}${REDACTED}${match.slice(at + value.length)}`;
  }

  /**
   * Returns a copy of `value` with secrets replaced by `'[REDACTED]'`, and whether anything was replaced. When
   * nothing is secret the input itself is returned (no allocation). Plain objects, arrays, Maps and Sets are
   * walked; any other object (a class instance, a URL, an error, an object with a `toJSON`) is checked in the form
   * `JSON.stringify` writes it, and kept as it is when that form holds no secret. A value nested deeper than 5,000
   * levels, or such an object that holds itself, is refused with a RangeError rather than written unchecked.
   *
   * @param key the key `value` is written under, which `JSON.stringify` passes to its `toJSON` (default `''`, the root).
   */
  redact<T>(value: T, key = ''): RedactionResult<T> {
    const next = this.walk(value, 0, key);
    return { value: next as T, redacted: next !== value };
  }

  /**
   * Whether `value` holds anything {@link redact} would replace. It stops at the first text it would replace, and
   * builds no redacted copy.
   */
  containsSecrets(value: unknown): boolean {
    this.probing = true;
    try {
      return this.walk(value, 0, '') !== value;
    } catch (error) {
      if (error === FOUND) return true;
      throw error;
    } finally {
      this.probing = false;
    }
  }

  /** The objects {@link walkOther} is walking the JSON form of (its callers' and its own). */
  private readonly converting = new Set<object>();

  /** Set while {@link containsSecrets} walks: the first replaced text ends the walk (see {@link replaced}). */
  private probing = false;

  /** `next`, the replacement of text `text`; when {@link containsSecrets} asks and they differ, the walk ends there. */
  private replaced(text: string, next: string): string {
    if (this.probing && next !== text) throw FOUND;
    return next;
  }

  /** `value`, found under `key` (an index in an array), redacted. */
  private walk(value: unknown, depth: number, key: string | number): unknown {
    if (typeof value === 'string') return this.replaced(value, this.redactText(value));
    if (value === null || typeof value !== 'object') return value;
    if (depth > MAX_DEPTH) throw tooDeep();
    if (Array.isArray(value)) return this.walkArray(value, depth, false);
    const hasToJSON = typeof (value as { toJSON?: unknown }).toJSON === 'function';
    if (!hasToJSON && isPlainObject(value)) return this.walkObject(value as Record<string, unknown>, depth, false);
    if (!hasToJSON && value instanceof Map) return this.walkMap(value, depth);
    if (!hasToJSON && value instanceof Set) return this.walkSet(value, depth);
    return this.walkOther(value, depth, key, false);
  }

  /**
   * An object that is not plain data, as `JSON.stringify` writes it under `key` ({@link jsonForm}), walked (or, with
   * `blank`, blanked): `value` itself when that form holds no secret, else the form redacted. A byte array holding text
   * is scanned as text (blanked whole under a secret-named key); other binary data is kept (JSON writes its numbers).
   */
  private walkOther(value: object, depth: number, key: string | number, blank: boolean, direct = false): unknown {
    // A date's JSON is its ISO time (or null): nothing to look for.
    if (value instanceof Date && value.toJSON === DATE_TO_JSON) return value;
    if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
      if (!isByteArray(value) || value.length === 0) return value;
      const text = bytesText(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      if (text === undefined) return value;
      const next = this.replaced(text, blank ? REDACTED : this.redactText(text));
      return next === text ? value : bytesLike(value, next);
    }
    // Objects of this kind (a client, a socket) often refer back to themselves: JSON.stringify throws on them too.
    if (this.converting.has(value)) throw new RangeError('redaction: value is circular; it cannot be written as JSON');
    this.converting.add(value);
    try {
      const form = jsonForm(value, key);
      // `direct`: the value sits right under a secret-named key (see secretEntry), and so does its JSON form.
      const next = direct ? this.secretEntry(form, depth + 1, key) : blank ? this.blank(form, depth + 1, key) : this.walk(form, depth + 1, key);
      return next === form ? value : next;
    } finally {
      this.converting.delete(value);
    }
  }

  /**
   * The encoded form of a typed array, `{ "$bp": "typed", t, v }` (`v` its bytes in base64), redacted: one of
   * one-byte elements whose bytes hold text (see {@link bytesText}) with `v` holding the bytes of its redacted text,
   * any other as it is (with `blank`: emptied, see below). Undefined for a record not of that shape (walked as any
   * object).
   */
  private encodedBytes(record: Record<string, unknown>, blank: boolean): Record<string, unknown> | undefined {
    const v = record['v'];
    const type = record['t'];
    if (typeof v !== 'string' || typeof type !== 'string' || Object.keys(record).length !== 3) return undefined;
    // `v` is encoded bytes, never text: scanned as text, base64 looks like a key (40 characters of it, a 30-byte value,
    // match the AWS secret key's shape) and replacing it would corrupt the value. Blanked, the record stays one of its
    // type: the bytes of the mark for one-byte elements, none for others.
    if (blank) {
      const marked = BYTE_ARRAY_TYPES.has(type) ? BLANK_BYTES : '';
      return v === marked ? record : { ...record, v: marked };
    }
    if (!BYTE_ARRAY_TYPES.has(type)) return record;
    const text = bytesText(Buffer.from(v, 'base64'));
    if (text === undefined) return record;
    const next = this.replaced(text, this.redactText(text));
    return next === text ? record : { ...record, v: Buffer.from(next, 'latin1').toString('base64') };
  }

  /**
   * Walks an array. With `blank`, every string is replaced (it sits under a secret-named key). Otherwise an element
   * that is a `[key, value]` pair with a secret-named string key (a Map's entry in its encoded form,
   * `Object.entries`) has its value blanked, whatever the other elements are.
   */
  private walkArray(value: readonly unknown[], depth: number, blank: boolean): unknown {
    let out: unknown[] | undefined;
    const isSecretName = this.isSecretName;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      let next: unknown;
      if (Array.isArray(item) && item.length === 2 && typeof item[0] === 'string' && this.keys.isSecretKey(item[0])) {
        // Under a secret-named key too (`blank`), what a pair's secret name holds is the secret (see secretEntry).
        const key = this.replaced(item[0], blank ? REDACTED : this.redactText(item[0]));
        const inner = this.secretEntry(item[1], depth + 2, 1);
        next = key === item[0] && inner === item[1] ? item : [key, inner];
      } else if (blank) next = this.blank(item, depth + 1, i);
      else if (i > 0 && isSecretOptionValue(value[i - 1], item, isSecretName)) next = this.replaced(item as string, REDACTED);
      else next = this.walk(item, depth + 1, i);
      if (next !== item) {
        out ??= value.slice();
        out[i] = next;
      }
    }
    return out ?? value;
  }


  /**
   * Walks an object. With `blank`, every string is replaced (it sits under a secret-named key); keys are still
   * checked for secret-looking text. `plain`: a `$bp` field is data (an escaped object's), not the codec's tag.
   * `skip`: a field left as it is (its caller redacts it).
   */
  private walkObject(record: Record<string, unknown>, depth: number, blank: boolean, plain = false, skip?: string): unknown {
    if (!blank && typeof record['$schema'] === 'string' && JSON_SCHEMA_DIALECT.test(record['$schema'])) return this.walkSchema(record, depth, false);
    let out: Record<string, unknown> | undefined;
    let index = 0;
    for (const key in record) {
      const item = record[key];
      if (!plain && key === CODEC_TAG && item === 'typed') {
        const bytes = this.encodedBytes(record, blank);
        if (bytes !== undefined) return bytes;
      }
      if (!plain && blank && key === CODEC_TAG && encodedTag(record) !== undefined) return this.blankEncoded(record, depth, false);
      // Under a secret-named key, every string is blanked, and what sits right under a secret-named key (or a value
      // a sibling names secret: `{ name: 'DB_PASSWORD', value }`) is the secret.
      const next = key === skip ? item : blank ? (this.isSecretEntry(record, key) ? this.secretEntry(item, depth + 1, key) : this.blank(item, depth + 1, key)) : this.entry(record, key, item, depth);
      const nextKey = this.replaced(key, this.redactKey(key));
      if (out === undefined && (next !== item || nextKey !== key)) {
        out = {};
        let copied = 0;
        for (const earlier in record) {
          if (copied++ === index) break;
          setOwn(out, earlier, record[earlier]);
        }
      }
      if (out !== undefined) setOwn(out, nextKey === key ? key : this.freeKey(out, nextKey, record), next);
      index++;
    }
    return out ?? record;
  }

  /**
   * Walks a JSON Schema (an object whose `$schema` names a JSON Schema dialect, as `z.toJSONSchema` writes, and the
   * subschemas in it): the names under `properties`, `$defs` and the like are field names, not values, so the key
   * rule does not blank the subschema a secret-named field has (an interrupt asking for `{ password }` must be
   * answerable after its schema was recorded). In a subschema of a secret-named field (`inSecret`), the keywords
   * that hold data (`default`, `const`, `enum`, `examples`) are blanked; every other value is walked as usual.
   */
  private walkSchema(schema: Record<string, unknown>, depth: number, inSecret: boolean, defsSecret = this.refsFromSecret(schema, false)): unknown {
    if (depth > MAX_DEPTH) throw tooDeep();
    // A subschema is an object (walked as a schema) or a boolean; anything else under a secret-named field is data, blanked.
    const sub = (value: unknown, secret: boolean): unknown =>
      value !== null && typeof value === 'object' && !Array.isArray(value) && isPlainObject(value)
        ? this.walkSchema(value as Record<string, unknown>, depth + 1, secret, defsSecret)
        : secret && typeof value !== 'boolean'
          ? this.blank(value, depth + 1, '')
          : this.walk(value, depth + 1, '');
    const keyOf = (key: string): string => this.replaced(key, this.redactKey(key));
    const freeKey = (out: Record<string, unknown>, key: string): string => this.freeKey(out, key, schema);
    return mapEntries(
      schema,
      (key, item) => {
        if (SCHEMA_NAMED_SUBSCHEMAS.has(key) && item !== null && typeof item === 'object' && !Array.isArray(item) && isPlainObject(item)) {
          const defs = defsSecret && (key === '$defs' || key === 'definitions');
          return mapEntries(item as Record<string, unknown>, (name, subschema) => sub(subschema, inSecret || defs || this.keys.isSecretKey(name)), keyOf, freeKey);
        }
        if (SCHEMA_SUBSCHEMAS.has(key)) return Array.isArray(item) ? mapArray(item, (element) => sub(element, inSecret)) : sub(item, inSecret);
        if (inSecret && SCHEMA_DATA.has(key)) return this.secretEntry(item, depth + 1, key);
        // Only JSON Schema's own keywords are exempt from the key rule: any other key of the object is data, as in
        // any object (a config file that names its schema in `$schema` keeps its `password` blanked).
        if (!SCHEMA_KEYWORDS.has(key)) return this.entry(schema, key, item, depth);
        return this.walk(item, depth + 1, key);
      },
      keyOf,
      freeKey,
    );
  }

  /**
   * Whether a secret-named field of `schema` (at any depth) refers to a definition (`$ref`): then every definition of
   * the schema is taken as a secret field's (its data keywords blanked), as following each reference is not worth its
   * cost here.
   */
  private refsFromSecret(schema: unknown, inSecret: boolean): boolean {
    const work: [unknown, boolean][] = [[schema, inSecret]];
    for (let next = work.pop(); next !== undefined; next = work.pop()) {
      const [node, secret] = next;
      if (node === null || typeof node !== 'object') continue;
      if (Array.isArray(node)) {
        for (const element of node) work.push([element, secret]);
        continue;
      }
      for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
        if (key === '$ref' && secret && typeof value === 'string') return true;
        if (SCHEMA_NAMED_SUBSCHEMAS.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
          for (const [name, sub] of Object.entries(value as Record<string, unknown>)) work.push([sub, secret || this.keys.isSecretKey(name)]);
        } else if (SCHEMA_SUBSCHEMAS.has(key)) work.push([value, secret]);
      }
    }
    return false;
  }

  /** The value `item` of `record`'s key `key`, redacted by the key's kind (see {@link keyKind}). */
  private entry(record: Record<string, unknown>, key: string, item: unknown, depth: number): unknown {
    const kind = this.keyKind(key);
    if (kind === PLAIN_KEY) return this.walk(item, depth + 1, key);
    if (kind === SECRET_KEY) return this.secretEntry(item, depth + 1, key);
    if (kind === AUTH_KEY) return typeof item === 'string' && isAuthCredential(item) ? this.replaced(item, REDACTED) : this.walk(item, depth + 1, key);
    // Members are base64url text: a number beside a `kty` is data (`{ p: 0.5, kty }`), not a key.
    if (kind === JWK_PRIVATE_KEY) return typeof record['kty'] === 'string' && typeof item === 'string' ? this.replaced(item, REDACTED) : this.walk(item, depth + 1, key);
    return this.namedBySibling(record, kind) ? this.secretEntry(item, depth + 1, key) : this.walk(item, depth + 1, key);
  }

  /** {@link keyKind} of the object keys seen, which repeat from event to event. */
  private readonly keyKinds = new Map<string, number>();

  /**
   * What `key`, an object key, is to the walk: secret-named ({@link SECRET_KEY}), `auth` ({@link AUTH_KEY}), a value
   * field of a record that may name its value in another field ({@link VALUE_FIELDS}), or any other ({@link PLAIN_KEY}).
   * Cached: one lookup per key, as the key rule's own verdicts are.
   */
  private keyKind(key: string): number {
    let kind = this.keyKinds.get(key);
    if (kind === undefined) {
      kind = this.keys.isSecretKey(key) ? SECRET_KEY : isAuthName(key) ? AUTH_KEY : JWK_PRIVATE_MEMBERS.has(key) ? JWK_PRIVATE_KEY : (VALUE_FIELD_KINDS.get(key) ?? PLAIN_KEY);
      if (this.keyKinds.size < 10_000) this.keyKinds.set(key, kind);
    }
    return kind;
  }

  /** Whether the value of `record`'s key `key` is a secret by its name or a sibling's (see {@link entry}). */
  private isSecretEntry(record: Record<string, unknown>, key: string): boolean {
    const kind = this.keyKind(key);
    return kind === SECRET_KEY || (kind >= VALUE_KEY && this.namedBySibling(record, kind));
  }

  /** Whether a field of `record` that may name its value field (of kind `kind`) holds a secret-named string. */
  private namedBySibling(record: Record<string, unknown>, kind: number): boolean {
    for (const field of NAMING_FIELDS[kind - VALUE_KEY]!) {
      const name = record[field];
      if (typeof name === 'string' && this.keys.isSecretKey(name)) return true;
    }
    return false;
  }

  /**
   * The name an object key is stored under: the key itself, or, when it holds a secret, its {@link redactText}
   * followed by ` #` and a keyed digest of the whole key ({@link keyDigest}), such as `[REDACTED] #3f9a0c12d4e5`. The
   * name depends on the key alone, not on where the key sits, so a key is stored under the same name in every record
   * of a run this process writes (a keyframe, and each step's delta that changes or deletes it). Cached.
   */
  storedKey(key: string): string {
    if (key.length < this.minLength) return key;
    let out = this.keyTexts.get(key);
    if (out === undefined) {
      out = this.redactText(key);
      if (out !== key) out = `${out} #${keyDigest(key)}`;
      if (this.keyTexts.size < 10_000) this.keyTexts.set(key, out);
    }
    return out;
  }

  /**
   * Whether the redaction of entry `key` of `record` (a plain object, not under a secret-named key) depends on more
   * than the key and the entry's value, so that a patch holding only that entry is not redacted as the whole record
   * is: `record` is a JSON Schema (walked by the schema's rules; `$schema` itself also decides it), `key` is `auth`
   * (text under it is blanked, a patch's `{ r: text }` is not), a value field a sibling names a secret
   * (`{ name: 'DB_PASSWORD', value }`), or a naming field with a value field beside it (renaming it changes how that
   * value is redacted). A step's delta replaces such a record whole instead (see StateTracker). Constant time.
   */
  redactedWithSiblings(record: Record<string, unknown>, key: string): boolean {
    if (key === '$schema') return true;
    const schema = record['$schema'];
    if (typeof schema === 'string' && JSON_SCHEMA_DIALECT.test(schema)) return true;
    const kind = this.keyKind(key);
    if (kind === AUTH_KEY) return true;
    // A JWK's private member is judged by its `kty` sibling, and a `kty` decides its siblings.
    if (kind === JWK_PRIVATE_KEY) return typeof record['kty'] === 'string' && typeof record[key] === 'string';
    if (key === 'kty') return true;
    if (kind >= VALUE_KEY) return this.namedBySibling(record, kind);
    const named = NAMED_FIELDS.get(key);
    if (named === undefined) return false;
    for (const field of named) if (Object.hasOwn(record, field)) return true;
    return false;
  }

  /**
   * Whether element `index` of `list` is redacted by the element before it (the value of a secret-named option,
   * `['--password', '…']`), or the element after it by it: a patch that appends from `index`, or lists deleted keys,
   * holds one without the other.
   */
  followsSecretOption(list: readonly unknown[], index: number): boolean {
    return index > 0 && index < list.length && isSecretOptionValue(list[index - 1], list[index], this.isSecretName);
  }

  /** {@link storedKey}. */
  private redactKey(key: string): string {
    return this.storedKey(key);
  }

  /**
   * `key` (a redacted key's stored name), or `key #2`, `key #3`, ... when that name is taken: by a key already
   * written to `out`, or by a key of `record` (the object being redacted) that is that name as it is, which keeps it
   * wherever it sits.
   */
  private freeKey(out: Record<string, unknown>, key: string, record?: Record<string, unknown>): string {
    const taken = (name: string): boolean => Object.hasOwn(out, name) || (record !== undefined && Object.hasOwn(record, name));
    if (!taken(key)) return key;
    let n = 2;
    while (taken(`${key} #${n}`)) n++;
    return `${key} #${n}`;
  }

  private walkMap(map: Map<unknown, unknown>, depth: number): unknown {
    let changed = false;
    const entries: [unknown, unknown][] = [];
    for (const [key, item] of map) {
      const nextKey = this.walk(key, depth + 1, '');
      const next = typeof key === 'string' && this.keys.isSecretKey(key) ? this.secretEntry(item, depth + 1, '') : this.walk(item, depth + 1, '');
      changed ||= nextKey !== key || next !== item;
      entries.push([nextKey, next]);
    }
    return changed ? new Map(entries) : map;
  }

  private walkSet(set: Set<unknown>, depth: number): unknown {
    let changed = false;
    const members: unknown[] = [];
    for (const member of set) {
      const next = this.walk(member, depth + 1, '');
      changed ||= next !== member;
      members.push(next);
    }
    return changed ? new Set(members) : set;
  }

  /**
   * A value in the codec's encoded form (`{ "$bp": "map", v }`, see backpack/codec.ts) under a secret-named key,
   * blanked so that it still decodes to a value of its kind: its tag kept, the rest blanked (a Map's entries, a Set's
   * members, an escaped object's fields). A BigInt or a number the codec encodes (`-0`, `NaN`, `Infinity`) is a
   * number: replaced when it sits right under the key (`direct`), kept inside a structure.
   */
  private blankEncoded(record: Record<string, unknown>, depth: number, direct: boolean): unknown {
    const tag = record[CODEC_TAG] as string;
    if (tag === 'bigint' || tag === 'number') return direct ? this.replaced(String(record['v']), REDACTED) : record;
    if (depth > MAX_DEPTH) throw tooDeep();
    let out: Record<string, unknown> | undefined;
    for (const name in record) {
      if (name === CODEC_TAG) continue;
      const item = record[name];
      // An escaped object (`{ "$bp": "object", v }`) is the user's own, whose `$bp` field is data.
      const own = tag === 'object' && name === 'v' && item !== null && typeof item === 'object' && !Array.isArray(item) && isPlainObject(item);
      const next = own ? this.walkObject(item as Record<string, unknown>, depth + 1, true, true) : this.blank(item, depth + 1, name);
      if (next !== item) {
        out ??= { ...record };
        setOwn(out, name, next);
      }
    }
    return out ?? record;
  }

  /** Every string replaced (keeping numbers, booleans and the shape: a structure's numbers are ports, counts, sizes). */
  private blank(value: unknown, depth: number, key: string | number): unknown {
    if (typeof value === 'string') return this.replaced(value, REDACTED);
    if (value === null || typeof value !== 'object') return value;
    if (depth > MAX_DEPTH) throw tooDeep();
    if (Array.isArray(value)) return this.walkArray(value, depth, true);
    const hasToJSON = typeof (value as { toJSON?: unknown }).toJSON === 'function';
    if (!hasToJSON && isPlainObject(value)) return this.walkObject(value as Record<string, unknown>, depth, true);
    if (!hasToJSON && value instanceof Map) {
      return new Map([...value].map(([k, v]) => [this.walk(k, depth + 1, ''), typeof k === 'string' && this.keys.isSecretKey(k) ? this.secretEntry(v, depth + 1, '') : this.blank(v, depth + 1, '')]));
    }
    if (!hasToJSON && value instanceof Set) return new Set([...value].map((m) => this.blank(m, depth + 1, '')));
    return this.walkOther(value, depth, key, true);
  }

  /**
   * What is stored right under a secret-named key (or named secret by a sibling), the same in every form the
   * stores write it in (so that a keyframe and the deltas that lead to it hold the same): a number is the secret itself
   * (a PIN, a numeric password) and is replaced as a string is; a state delta's replacement (`{ r: value }`, see
   * runtime/json-delta.ts) holds the value itself; a Backpack item ({@link isItemShape}: a state item, a quarantined
   * item, a state-delta entry) keeps its provenance, its `metadata` and `accessControl` walked like any other data,
   * and the rest redacted by this rule; a structure's `value` field is redacted by this rule too (the rest blanked);
   * an object written as its JSON form is that form; anything else has every string blanked (see {@link blank}).
   */
  private secretEntry(value: unknown, depth: number, key: string | number): unknown {
    if (typeof value === 'number') return this.replaced(String(value), REDACTED);
    // An object written as its JSON form (a `toJSON`, a boxed number, a class instance): that form is what sits here.
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const hasToJSON = typeof (value as { toJSON?: unknown }).toJSON === 'function';
      const data = isPlainObject(value) || value instanceof Map || value instanceof Set || ArrayBuffer.isView(value) || value instanceof ArrayBuffer;
      if (hasToJSON ? !(value instanceof Date && value.toJSON === DATE_TO_JSON) : !data && !(value instanceof Date)) return this.walkOther(value, depth, key, true, true);
    }
    const tag = encodedTag(value);
    if (tag !== undefined && tag !== 'typed') return this.blankEncoded(value as Record<string, unknown>, depth, true);
    if (isReplacement(value)) {
      const inner = this.secretEntry(value.r, depth + 1, 'r');
      return inner === value.r ? value : { r: inner };
    }
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && isPlainObject(value)) {
      const record = value as Record<string, unknown>;
      if (isItemShape(record)) {
        if (depth > MAX_DEPTH) throw tooDeep();
        let out: Record<string, unknown> | undefined;
        for (const name in record) {
          const item = record[name];
          const next = name === 'metadata' || name === 'accessControl' ? this.walk(item, depth + 1, name) : this.secretEntry(item, depth + 1, name);
          if (next !== item) {
            out ??= { ...record };
            setOwn(out, name, next);
          }
        }
        return out ?? record;
      }
      // A structure right under the key that holds its secret in a `value` field (a secret manager's answer,
      // `{ value: 58203917, version: 'v1' }`): that value is the secret, whatever it is; the rest is blanked.
      if (Object.hasOwn(record, 'value')) {
        // The rest blanked, `value` left for one walk of its own (walked twice, a chain of them cost 2^depth).
        const blanked = this.walkObject(record, depth, true, false, 'value') as Record<string, unknown>;
        const inner = this.secretEntry(record['value'], depth + 1, 'value');
        if (inner === record['value']) return blanked;
        const out = blanked === record ? { ...record } : blanked;
        setOwn(out, 'value', inner);
        return out;
      }
    }
    return this.blank(value, depth, key);
  }
}

/** A plain object whose one own key is `r`: a state delta's replacement of a value (see runtime/json-delta.ts). */
function isReplacement(value: unknown): value is { r: unknown } {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === 'r';
}

/**
 * Whether `key` has the form of a redacted key's stored name (see {@link Redactor.storedKey}: ` #` and 12 hex digits
 * at its end, maybe then ` #2`, ...): a key a record read back gives, which a redacted key of the same object could be
 * stored under too.
 */
export function looksLikeStoredKey(key: string): boolean {
  return key.includes(' #') && STORED_KEY_TAIL.test(key);
}
const STORED_KEY_TAIL = / #[0-9a-f]{12}(?: #\d+)?$/;

/** The key of {@link keyDigest}: random, made once per process, never written anywhere. */
let keyDigestKey: Buffer | undefined;
// One drawn while a startup snapshot was built is in the snapshot's file: each restored process makes its own.
renewAfterSnapshot(() => {
  keyDigestKey = undefined;
});

/**
 * 12 hex digits of an HMAC-SHA256 of `key` under a random key of this process: the same key always gives the same
 * digits in this process, and nothing written lets anyone test a guess of the key against them.
 */
function keyDigest(key: string): string {
  return createHmac('sha256', (keyDigestKey ??= randomBytes(32))).update(key).digest('hex').slice(0, 12);
}

/** Shortest value of a secret-named environment variable that {@link Redactor} replaces wherever it appears. */
export const KNOWN_MIN_LENGTH = 8;

let shared: Redactor | undefined;

/** The redactor for `options`: the shared default one when there are none (compiled once). */
export function redactorFor(options?: RedactionOptions): Redactor {
  if (options === undefined || ((options.patterns?.length ?? 0) === 0 && (options.secretKeys?.length ?? 0) === 0)) {
    return (shared ??= new Redactor());
  }
  return new Redactor(options);
}

/**
 * {@link Redactor.renewEnvironment} of the shared default redactor, when there is one yet (a redactor made with
 * options reads the environment when it is made). The runtime calls it at every run's start; a node that sets a
 * secret-named variable during a run (a secret fetched from a vault) calls it, so that the rest of the run knows it.
 */
export function renewEnvironmentSecrets(): void {
  shared?.renewEnvironment();
}

/** {@link Redactor.redact} with the built-in catalogue only. */
export function redact<T>(value: T): RedactionResult<T> {
  return redactorFor().redact(value);
}

/** {@link Redactor.containsSecrets} with the built-in catalogue only. */
export function containsSecrets(value: unknown): boolean {
  return redactorFor().containsSecrets(value);
}

/** Whether `key` names a secret under the built-in rule. */
export function isSecretKey(key: string): boolean {
  return redactorFor().isSecretKey(key);
}
