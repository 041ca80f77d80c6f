/**
 * The logic of the answer form (no rendering, so it can be tested alone): how each JSON Schema shape is edited, the
 * starting text of each field, the answer the fields make, and where a problem at a JSON pointer is shown.
 */
import { SecretKeyMatcher } from '../../redact/keys.js';
import { isSecretFieldSchema, marksSecret } from '../../redact/schema-secrets.js';

/** A JSON Schema, as recorded. */
export type Schema = Record<string, unknown>;

const secretNames = new SecretKeyMatcher();

/**
 * Whether the field `key` of this schema holds a secret: marked so by its schema (`writeOnly`, `format: 'password'`)
 * or named like one (the redactor's rule: `password`, `apiKey`, `token`...). Its input is masked, and its answer is
 * never written into the page.
 */
export function isSecretField(schema: unknown, key: string | undefined): boolean {
  return isSecretFieldSchema(schema) || (key !== undefined && secretNames.isSecretKey(key));
}

/**
 * Whether any part of `schema` is secret: marked so anywhere (through `$ref`, unions, lists, records, tuples: what
 * the run's log blanks, see redact/schema-secrets.ts), or a field named like a secret (nested objects included).
 * The answer then never goes on a command line the page shows.
 */
export function hasSecretField(schema: unknown, key?: string, depth = 0): boolean {
  if (depth === 0 && marksSecret(schema)) return true;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema) || depth > 64) return false;
  if (isSecretField(schema, key)) return true;
  const properties = (schema as Schema).properties;
  if (properties === null || typeof properties !== 'object') return false;
  return Object.entries(properties as Record<string, unknown>).some(([name, child]) => hasSecretField(child, name, depth + 1));
}

/** The last key of a JSON pointer (undefined for the whole answer). */
export function keyOfPointer(pointer: string): string | undefined {
  if (pointer === '') return undefined;
  return pointer.slice(pointer.lastIndexOf('/') + 1).replace(/~1/g, '/').replace(/~0/g, '~');
}

/** A problem of an answer at a JSON pointer (`''`: the whole answer). */
export interface FieldProblem {
  path: string;
  message: string;
}

export type Scalar = 'string' | 'number' | 'integer' | 'boolean';
export type Kind = Scalar | 'enum' | 'array' | 'object' | 'json';
/** What a field holds: text, a checkbox, the items of a list (undefined: not set). */
export type Raw = string | boolean | string[] | undefined;

const SCALARS = new Set(['string', 'number', 'integer', 'boolean']);

function isScalarValue(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** How a schema is edited. */
export function kindOf(schema: unknown): Kind {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'json';
  const s = schema as Schema;
  if (Array.isArray(s.enum) && s.enum.length > 0 && s.enum.every(isScalarValue)) return 'enum';
  if (typeof s.type === 'string' && SCALARS.has(s.type)) return s.type as Scalar;
  if (s.type === 'array') {
    const items = kindOf(s.items);
    return items === 'string' || items === 'number' || items === 'integer' || items === 'enum' ? 'array' : 'json';
  }
  if (s.type === 'object' && s.properties !== null && typeof s.properties === 'object' && !Array.isArray(s.properties)) return 'object';
  return 'json';
}

export function pointerOf(parent: string, key: string): string {
  return `${parent}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

export function propertiesOf(schema: Schema): Array<[string, Schema]> {
  return Object.entries(schema.properties as Record<string, Schema>);
}

export function requiredOf(schema: Schema): Set<string> {
  return new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
}

/** The starting text of every field (by JSON pointer): its default, else empty. */
export function initialRaws(schema: unknown, pointer: string, out: Map<string, Raw>): Map<string, Raw> {
  const kind = kindOf(schema);
  const s = (schema ?? {}) as Schema;
  const fallback = s.default;
  if (kind === 'object') {
    for (const [key, child] of propertiesOf(s)) initialRaws(child, pointerOf(pointer, key), out);
  } else if (kind === 'boolean') {
    out.set(pointer, typeof fallback === 'boolean' ? fallback : undefined);
  } else if (kind === 'array') {
    out.set(pointer, Array.isArray(fallback) ? fallback.map(String) : []);
  } else if (kind === 'json') {
    out.set(pointer, fallback === undefined ? '' : JSON.stringify(fallback, null, 2));
  } else {
    out.set(pointer, fallback === undefined ? '' : String(fallback));
  }
  return out;
}

/** One scalar from its text, or a problem. */
function scalar(kind: Kind, text: string, schema: Schema): { value?: unknown; problem?: string } {
  if (kind === 'enum') {
    const match = (schema.enum as unknown[]).find((v) => String(v) === text);
    return match === undefined ? { problem: `one of ${(schema.enum as unknown[]).map(String).join(', ')}` } : { value: match };
  }
  if (kind === 'number' || kind === 'integer') {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n)) return { problem: 'a number' };
    if (kind === 'integer' && !Number.isInteger(n)) return { problem: 'a whole number' };
    return { value: n };
  }
  return { value: text };
}

/**
 * The answer the fields make, and the problems found on the way (missing required fields, unparsable numbers and
 * JSON). An optional field left empty is left out.
 */
export function buildAnswer(schema: unknown, pointer: string, raws: ReadonlyMap<string, Raw>, required: boolean, problems: FieldProblem[]): unknown {
  const kind = kindOf(schema);
  const s = (schema ?? {}) as Schema;
  if (kind === 'object') {
    const needed = requiredOf(s);
    const out: Record<string, unknown> = {};
    for (const [key, child] of propertiesOf(s)) {
      const value = buildAnswer(child, pointerOf(pointer, key), raws, needed.has(key), problems);
      if (value !== undefined) out[key] = value;
    }
    return out;
  }
  const raw = raws.get(pointer);
  const missing = (): undefined => {
    if (required) problems.push({ path: pointer, message: 'required' });
    return undefined;
  };
  if (kind === 'boolean') return typeof raw === 'boolean' ? raw : missing();
  if (kind === 'array') {
    const items = (Array.isArray(raw) ? raw : []).filter((t) => t !== '');
    const itemSchema = s.items as Schema;
    const values = items.map((text, i) => {
      const parsed = scalar(kindOf(itemSchema), text, itemSchema);
      if (parsed.problem) problems.push({ path: `${pointer}/${i}`, message: `must be ${parsed.problem}` });
      return parsed.value;
    });
    return values.length === 0 && !required ? undefined : values;
  }
  const text = typeof raw === 'string' ? raw : '';
  if (kind === 'json') {
    if (text.trim() === '') return missing();
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      problems.push({ path: pointer, message: `not valid JSON: ${(error as Error).message}` });
      return undefined;
    }
  }
  if (text === '' && (kind !== 'string' || !required)) return missing();
  const parsed = scalar(kind, text, s);
  if (parsed.problem) problems.push({ path: pointer, message: `must be ${parsed.problem}` });
  return parsed.value;
}

/** Every field pointer of the form (where a problem can be shown). */
function fieldPointers(schema: unknown, pointer: string, out: string[]): string[] {
  out.push(pointer);
  if (kindOf(schema) === 'object') for (const [key, child] of propertiesOf(schema as Schema)) fieldPointers(child, pointerOf(pointer, key), out);
  return out;
}

/** Problems by the field that shows them: the field they name, or the nearest one above it. */
export function problemsByField(schema: unknown, problems: readonly FieldProblem[]): Map<string, string[]> {
  const fields = fieldPointers(schema, '', []);
  const out = new Map<string, string[]>();
  for (const p of problems) {
    const at = fields.filter((f) => p.path === f || p.path.startsWith(`${f}/`)).sort((a, b) => b.length - a.length)[0] ?? '';
    const list = out.get(at) ?? [];
    const where = p.path === at ? '' : `${p.path.slice(at.length)}: `;
    list.push(`${where}${p.message}`);
    out.set(at, list);
  }
  return out;
}

