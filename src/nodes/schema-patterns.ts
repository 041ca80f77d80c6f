/**
 * JSON Schemas that come from outside the process (an MCP server's tool schemas, a question's schema recorded in a
 * run's log) are checked here without their regular expressions, and a recorded one only when it does not expand to
 * more than a bound (see {@link expandsBeyond}): a `pattern` such as `^(a+)+$` backtracks for an
 * exponential time on the wrong input, and that blocks the whole process (a server's every request, the Studio's
 * every tab), which no timeout or abort can stop. Whoever wrote the schema checks its patterns on its own side: the
 * MCP server its input, the waiting node its answer (with its own schema, when it runs again).
 */

/** Keywords whose value is a map from names (not keywords) to schemas. */
const SCHEMA_MAPS: ReadonlySet<string> = new Set(['properties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data, not a schema: left exactly as written. */
const DATA: ReadonlySet<string> = new Set(['enum', 'const', 'default', 'examples', 'required', 'dependentRequired']);

/**
 * `schema` without its regular expressions, at any depth: each `pattern` keyword is dropped (whatever its value), and
 * `patternProperties` becomes an open `additionalProperties` (the properties it described, and any other the schema's
 * own `additionalProperties` refused, are then not checked here: the schema's owner checks them).
 * Property names, `$defs` names and data (`enum`, `const`, `default`, `examples`) are kept as written, whatever
 * they are called.
 */
export function withoutPatterns(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutPatterns);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    // Whatever its value: zod compiles any truthy `pattern` (an array holding a regular expression's source too).
    if (key === 'pattern') continue;
    if (key === 'patternProperties') {
      // The properties it allowed are allowed here whatever they hold, even where no other property is.
      out['additionalProperties'] = true;
      continue;
    }
    if (key === 'additionalProperties' && 'patternProperties' in schema) continue;
    if (DATA.has(key)) out[key] = value;
    else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, withoutPatterns(sub)]));
    } else out[key] = withoutPatterns(value);
  }
  return out;
}

/**
 * The most subschemas a schema from outside may expand to, with every local `$ref` followed where it is used, for a
 * check in this process (see {@link expandsBeyond}). Checking an answer walks that expansion: `$defs` entries that
 * each refer twice to the next one (through `anyOf`, `oneOf` or `allOf`) double it at every level, so a 1.6 KB
 * schema took 24 s to check one answer, and a recursive one never ends.
 */
export const MAX_EXPANDED_SUBSCHEMAS = 10_000;

/** How deep {@link expandsBeyond} follows a schema (the nesting bound of answers and configs is 512). */
const MAX_DEPTH = 256;

/**
 * Whether `schema`, with each local `$ref` (`#/...`) replaced by what it points to, holds more than `limit`
 * subschemas (objects and arrays at schema positions), or nests them deeper than 256: what a check of an answer
 * against it may walk. It stops counting past `limit`, so it costs at most that much; a `$ref` that cannot be
 * followed counts as nothing.
 */
export function expandsBeyond(schema: unknown, limit = MAX_EXPANDED_SUBSCHEMAS): boolean {
  let count = 0;
  const resolve = (ref: string): unknown => {
    if (!ref.startsWith('#')) return undefined;
    let at: unknown = schema;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (at === null || typeof at !== 'object' || !Object.hasOwn(at, part)) return undefined;
      at = (at as Record<string, unknown>)[part];
    }
    return at;
  };
  // Deeper than MAX_DEPTH counts as too large too (a recursive schema, followed, gets there long before the count).
  const walk = (node: unknown, depth: number): boolean => {
    if (node === null || typeof node !== 'object') return false;
    if (++count > limit || depth > MAX_DEPTH) return true;
    const inner = (value: unknown): boolean => walk(value, depth + 1);
    if (Array.isArray(node)) return node.some(inner);
    for (const [key, value] of Object.entries(node)) {
      if (DATA.has(key)) continue;
      if (key === '$ref' && typeof value === 'string') {
        if (inner(resolve(value))) return true;
      } else if (key === '$defs' || key === 'definitions') {
        // Counted where they are used, through $ref.
      } else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        if (Object.values(value).some(inner)) return true;
      } else if (inner(value)) return true;
    }
    return false;
  };
  return walk(schema, 0);
}

