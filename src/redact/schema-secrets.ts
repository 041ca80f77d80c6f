/**
 * Parts of a value that its JSON Schema marks secret: a subschema with `writeOnly: true` or `format: 'password'` (a
 * person's answer to a pause, whose schema the node gave). The Studio's answer form masks such a field as it is
 * typed; the run's log blanks it, whatever its name or text. One predicate for both: {@link isSecretSchema}.
 */
import { REDACTED } from './marker.js';

/** A JSON Schema (or a part of one). */
type Schema = Record<string, unknown>;

/** How deep a value is followed: deeper parts are blanked whole when the schema holds any secret mark. */
const MAX_DEPTH = 64;

/** Whether `schema` itself marks its value secret: `writeOnly: true` or `format: 'password'`. */
export function isSecretSchema(schema: unknown): boolean {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return false;
  const s = schema as Schema;
  return s.writeOnly === true || s.format === 'password';
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
  const state = { blanked: false, root: schema };
  return { value: walk(value, schema, state, 0), blanked: state.blanked };
}

interface WalkState {
  blanked: boolean;
  readonly root: unknown;
}

function walk(value: unknown, schema: unknown, state: WalkState, depth: number): unknown {
  if (value === undefined || schema === null || typeof schema !== 'object' || Array.isArray(schema)) return value;
  const schemas = depth > MAX_DEPTH ? 'unknown' : branches(schema as Schema, state.root);
  // A schema not followed (a remote `$ref`, too deep): the value is blanked if the schema marks anything secret.
  const secret = schemas === 'unknown' ? marksAnySecret(state.root, 0) : schemas.some(isSecretSchema);
  if (secret) {
    state.blanked = true;
    return REDACTED;
  }
  if (schemas === 'unknown' || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      let next: unknown = value[i];
      for (const s of schemas) next = walk(next, itemSchema(s, i), state, depth + 1);
      if (next !== value[i]) (out ??= [...value])[i] = next;
    }
    return out ?? value;
  }
  const record = value as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(record)) {
    let next = record[key];
    for (const s of schemas) for (const sub of propertySchemas(s, key)) next = walk(next, sub, state, depth + 1);
    if (next !== record[key]) {
      out ??= { ...record };
      Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
    }
  }
  return out ?? record;
}

/**
 * `schema` and the subschemas that apply to the same value (its local `$ref`, `allOf`, `anyOf`, `oneOf`, followed
 * to any depth); 'unknown' when a `$ref` cannot be followed.
 */
function branches(schema: Schema, root: unknown): Schema[] | 'unknown' {
  const out: Schema[] = [];
  const queue: Schema[] = [schema];
  const seen = new Set<Schema>();
  while (queue.length > 0) {
    const s = queue.shift()!;
    if (seen.has(s)) continue;
    seen.add(s);
    out.push(s);
    if (seen.size > 256) return 'unknown';
    if (typeof s.$ref === 'string') {
      const target = resolveRef(s.$ref, root);
      if (target === undefined) return 'unknown';
      queue.push(target);
    }
    for (const field of ['allOf', 'anyOf', 'oneOf'] as const) {
      const list = s[field];
      if (Array.isArray(list)) for (const branch of list) if (isSchema(branch)) queue.push(branch);
    }
  }
  return out;
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
  try {
    return new RegExp(pattern, 'u').test(key);
  } catch {
    return true;
  }
}

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
  if (depth > MAX_DEPTH * 4) return true;
  if (Array.isArray(schema)) return schema.some((s) => marksAnySecret(s, depth + 1));
  if (!isSchema(schema)) return false;
  if (isSecretSchema(schema)) return true;
  return Object.values(schema).some((v) => v !== null && typeof v === 'object' && marksAnySecret(v, depth + 1));
}
