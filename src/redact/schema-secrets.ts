/**
 * Parts of a value that its JSON Schema marks secret: a subschema with `writeOnly: true` or `format: 'password'` (a
 * person's answer to a pause, whose schema the node gave). The Studio's answer form masks such a field as it is
 * typed; the run's log blanks it, whatever its name or text. One predicate for both: {@link isSecretSchema}.
 */
import { REDACTED } from './marker.js';

/** A JSON Schema (or a part of one). */
type Schema = Record<string, unknown>;

/**
 * How deep a value is followed (past the 512 levels an answer may have: see backpack/nesting.ts); deeper parts are
 * blanked whole, as the walk only runs for a schema that marks something secret.
 */
const MAX_DEPTH = 600;

/** Whether `schema` itself marks its value secret: `writeOnly: true` or `format: 'password'`. */
export function isSecretSchema(schema: unknown): boolean {
  return isSchema(schema) && (schema.writeOnly === true || schema.format === 'password');
}

/** The keywords whose subschemas apply to the same value as the schema holding them. */
const BRANCH_KEYWORDS = ['allOf', 'anyOf', 'oneOf'] as const;

/**
 * Whether a field of `schema` is secret itself: `schema` or one of its `allOf`/`anyOf`/`oneOf` branches is marked
 * (a nullable secret is `anyOf: [{ writeOnly }, { type: 'null' }]`). The Studio masks such a field as it is typed.
 */
export function isSecretFieldSchema(schema: unknown): boolean {
  if (isSecretSchema(schema)) return true;
  if (!isSchema(schema)) return false;
  return BRANCH_KEYWORDS.some((field) => Array.isArray(schema[field]) && (schema[field] as unknown[]).some(isSecretSchema));
}

/** `value` with every part its `schema` marks secret replaced by `[REDACTED]`, and whether any was. */
export interface SchemaBlanked {
  value: unknown;
  blanked: boolean;
}

/**
 * Blanks the parts of `value` that `schema` (a JSON Schema, as `z.toJSONSchema` gives it) marks secret (see
 * {@link isSecretSchema}). It follows `properties`, `patternProperties`, `additionalProperties`, `items` and
 * `prefixItems`, local `$ref`s (`#/$defs/…`, `#/definitions/…`), and `allOf`, `anyOf`, `oneOf`: conservatively, a
 * value that any branch marks secret is blanked. A value is blanked whole (a number, an object), never in part of its
 * text. A schema it cannot follow (a remote `$ref`, a pattern that is not a valid regex) blanks what it might mark.
 */
export function blankSchemaSecrets(value: unknown, schema: unknown): SchemaBlanked {
  // A schema that marks nothing secret blanks nothing: the answer is not walked at all.
  if (!marksSecret(schema)) return { value, blanked: false };
  const state = { blanked: false, root: schema };
  return { value: walk(value, [schema], state, 0), blanked: state.blanked };
}

/** Whether `schema` marks anything secret, anywhere in it (its `$defs` included); remembered per schema object. */
export function marksSecret(schema: unknown): boolean {
  if (!isSchema(schema)) return false;
  let known = marked.get(schema);
  if (known === undefined) marked.set(schema, (known = marksAnySecret(schema, 0)));
  return known;
}

const marked = new WeakMap<object, boolean>();

interface WalkState {
  blanked: boolean;
  readonly root: unknown;
}

/**
 * Walks `value` once with every subschema that applies to it (`schemas`, each expanded to its `$ref`s and branches,
 * kept once each): a value many branches describe alike (a recursive union: `{ op, args: Filter[] }`) is walked once,
 * not once per branch and again inside each, which doubled the work at every level of nesting.
 */
function walk(value: unknown, schemas: readonly unknown[], state: WalkState, depth: number): unknown {
  if (value === undefined) return value;
  const applying = depth > MAX_DEPTH ? 'unknown' : expand(schemas, state.root);
  // A schema not followed (a remote `$ref`, too deep): the value is blanked, as the schema marks something secret.
  if (applying === 'unknown' || applying.some(isSecretSchema)) {
    state.blanked = true;
    return REDACTED;
  }
  if (applying.length === 0 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const next = walk(value[i], applying.map((s) => itemSchema(s, i)), state, depth + 1);
      if (next !== value[i]) (out ??= [...value])[i] = next;
    }
    return out ?? value;
  }
  const record = value as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(record)) {
    const next = walk(record[key], applying.flatMap((s) => propertySchemas(s, key)), state, depth + 1);
    if (next !== record[key]) {
      out ??= { ...record };
      Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
    }
  }
  return out ?? record;
}

/**
 * The schemas that apply to one value: each of `schemas` with the subschemas that apply to the same value (its local
 * `$ref`, `allOf`, `anyOf`, `oneOf`, followed to any depth), each once, in one pass over them all (a union whose
 * branches each refer back to it is expanded once, not once per branch); 'unknown' when a `$ref` cannot be followed.
 */
function expand(schemas: readonly unknown[], root: unknown): Schema[] | 'unknown' {
  const seen = new Set<Schema>();
  const queue: Schema[] = schemas.filter(isSchema);
  for (let i = 0; i < queue.length; i++) {
    const s = queue[i]!;
    if (seen.has(s)) continue;
    seen.add(s);
    if (seen.size > 256) return 'unknown';
    if (typeof s.$ref === 'string') {
      const target = resolveRef(s.$ref, root);
      if (target === undefined) return 'unknown';
      queue.push(target);
    }
    for (const field of BRANCH_KEYWORDS) {
      const list = s[field];
      if (Array.isArray(list)) for (const branch of list) if (isSchema(branch) && !seen.has(branch)) queue.push(branch);
    }
  }
  return [...seen];
}

/** The schema a local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`, any JSON pointer into the root) points to. */
function resolveRef(ref: string, root: unknown): Schema | undefined {
  if (ref === '#') return isSchema(root) ? root : undefined;
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return isSchema(at) ? at : undefined;
}

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The subschemas of `schema` for the object field `key`. */
function propertySchemas(schema: Schema, key: string): unknown[] {
  const out: unknown[] = [];
  const properties = schema.properties;
  const named = isSchema(properties) && Object.hasOwn(properties, key);
  if (named) out.push(properties[key]);
  let patterned = false;
  const patterns = schema.patternProperties;
  if (isSchema(patterns)) {
    for (const [pattern, sub] of Object.entries(patterns)) {
      if (matches(pattern, key)) {
        out.push(sub);
        patterned = true;
      }
    }
  }
  if (!named && !patterned && isSchema(schema.additionalProperties)) out.push(schema.additionalProperties);
  return out;
}

/** Whether `key` matches the `patternProperties` pattern; a pattern that does not compile matches (conservatively). */
function matches(pattern: string, key: string): boolean {
  let regex = patterns.get(pattern);
  if (regex === undefined) {
    try {
      regex = new RegExp(pattern, 'u');
    } catch {
      regex = null;
    }
    if (patterns.size > 1024) patterns.clear();
    patterns.set(pattern, regex);
  }
  return regex === null || regex.test(key);
}

/** `patternProperties` patterns compiled (null: not a valid pattern), by source: a walk compiles each once. */
const patterns = new Map<string, RegExp | null>();

/** The subschema of `schema` for the list element at `index`. */
function itemSchema(schema: Schema, index: number): unknown {
  const prefix = schema.prefixItems;
  if (Array.isArray(prefix) && index < prefix.length) return prefix[index];
  const items = schema.items;
  if (Array.isArray(items)) return index < items.length ? items[index] : schema.additionalItems;
  return items;
}

/** Whether `schema` marks anything secret, at any depth (bounded). */
function marksAnySecret(schema: unknown, depth: number): boolean {
  if (depth > 256) return true;
  if (Array.isArray(schema)) return schema.some((s) => marksAnySecret(s, depth + 1));
  if (!isSchema(schema)) return false;
  if (isSecretSchema(schema)) return true;
  return Object.values(schema).some((v) => v !== null && typeof v === 'object' && marksAnySecret(v, depth + 1));
}
