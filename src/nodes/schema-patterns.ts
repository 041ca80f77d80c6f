/**
 * JSON Schemas that come from outside the process (an MCP server's tool schemas, a question's schema recorded in a
 * run's log) are checked here without their regular expressions: a `pattern` such as `^(a+)+$` backtracks for an
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
