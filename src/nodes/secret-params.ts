/**
 * Secret params of a node (DESIGN D14): which params hold a secret, and copies with them masked. `exportFlow` masks
 * them in what it writes, and a node's `config` and `params` mask them when another node's code reads them
 * (`BackpackNode.config`). Here, below both, so that one rule serves them.
 *
 * @module
 */
import { globalRegistry, type ZodType } from 'zod';
import { isSecretKey, isSecretOptionValue, maskUrlCredentials, onlyEnvReferences, redactorFor } from '../redact/index.js';

/** What a masked secret exports as. */
export const MASK = '***';

/**
 * True when a param's name says it holds a secret: the one rule of secret-named keys that redaction uses too
 * ({@link isSecretKey}): `apiKey`, `OPENAI_API_KEY`, `privateKey`, `token`, `clientSecret`, `password`, ...; a bare
 * `key` (a backpack key name) or a structural `...Key` (`sessionKey`, `cacheKey`) is not.
 */
export function isSecretParamName(name: string): boolean {
  return isSecretKey(name);
}

/** Zod's internals of a schema, as far as {@link SecretPaths} reads them (zod 4; any of its flavours: classic, mini, core). */
interface ZodInternals {
  _zod: {
    def: {
      type: string;
      innerType?: ZodType;
      in?: ZodType;
      out?: ZodType;
      options?: readonly ZodType[];
      left?: ZodType;
      right?: ZodType;
      shape?: Record<string, ZodType>;
      catchall?: ZodType;
      element?: ZodType;
      items?: readonly ZodType[];
      rest?: ZodType | null;
      valueType?: ZodType;
    };
    /** A lazy schema's inner schema, made once (its getter may make a new one at each call). */
    innerType?: ZodType;
  };
}

/** What of a schema the masking reads: its def, a lazy schema's inner schema, and how it is marked secret. */
interface SchemaView {
  readonly def: ZodInternals['_zod']['def'] | undefined;
  readonly innerType: ZodType | undefined;
  readonly marking: 'whole' | 'url' | undefined;
}

/**
 * Schemas as they were when a node class holding them was locked (see {@link rememberSchema}): their defs copied
 * and frozen, their marks read once. Zod's schemas and its registry are shared, changeable objects (`_zod.def`,
 * `z.globalRegistry`): code that removes a mark or edits a shape later changes nothing the masking of those nodes sees.
 */
const remembered = new WeakMap<object, SchemaView>();

/** `schema` as the masking reads it: as remembered, else as it is now. */
function viewOf(schema: ZodType): SchemaView {
  const kept = remembered.get(schema);
  if (kept !== undefined) return kept;
  const internals = (schema as unknown as Partial<ZodInternals>)._zod;
  return { def: internals?.def, innerType: internals?.innerType, marking: liveMarking(schema) };
}

/**
 * Remembers `schema` and every schema it holds (see {@link remembered}), up to {@link MAX_SCHEMAS}: called when the
 * flow locks a node's class (its `paramsSchema`), before other nodes' code runs against its nodes. Never throws.
 */
export function rememberSchema(schema: ZodType | undefined): void {
  if (schema === undefined || remembered.has(schema)) return;
  try {
    const pending: ZodType[] = [schema];
    for (let seen = 0; pending.length > 0 && seen < MAX_SCHEMAS; seen++) {
      const next = pending.pop()!;
      if (remembered.has(next)) continue;
      const internals = (next as unknown as Partial<ZodInternals>)._zod;
      const live = internals?.def;
      const def = live === undefined ? undefined : Object.freeze({ ...live, ...(live.shape ? { shape: Object.freeze({ ...live.shape }) } : {}), ...(live.options ? { options: Object.freeze([...live.options]) } : {}), ...(live.items ? { items: Object.freeze([...live.items]) } : {}) });
      const view: SchemaView = Object.freeze({ def, innerType: internals?.innerType, marking: liveMarking(next) });
      remembered.set(next, view);
      pending.push(...sameValue(next), ...childSchemas(next));
    }
  } catch {
    // A schema that cannot be read as zod's: read as it is at each use.
  }
}

/** The schemas that describe the same value as `schema`: what wrappers, unions, intersections, pipes and lazy hold. */
function sameValue(schema: ZodType): ZodType[] {
  const internals = viewOf(schema);
  const def = internals.def;
  if (def === undefined) return [];
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      return def.innerType ? [def.innerType] : [];
    case 'pipe':
      return [def.in, def.out].filter((s) => s !== undefined);
    case 'lazy':
      return internals.innerType ? [internals.innerType] : [];
    case 'union':
      return [...(def.options ?? [])];
    case 'intersection':
      return [def.left, def.right].filter((s) => s !== undefined);
    default:
      return [];
  }
}

/** The schemas of the members of a value `schema` describes: `key`'s of an object or record, item `index`'s of an array or tuple. */
function memberSchemas(schema: ZodType, member: { key: string } | { index: number }): ZodType | undefined {
  const def = viewOf(schema).def;
  if (def === undefined) return undefined;
  if ('key' in member) {
    if (def.type === 'object') return (Object.hasOwn(def.shape ?? {}, member.key) ? def.shape![member.key] : undefined) ?? def.catchall;
    if (def.type === 'record') return def.valueType;
    return undefined;
  }
  if (def.type === 'array') return def.element;
  if (def.type === 'tuple') return def.items?.[member.index] ?? def.rest ?? undefined;
  return undefined;
}

function childSchemas(schema: ZodType): ZodType[] {
  const def = viewOf(schema).def;
  if (def === undefined) return [];
  const out: (ZodType | null | undefined)[] = [def.catchall, def.element, def.rest, def.valueType, ...Object.values(def.shape ?? {}), ...(def.items ?? [])];
  return out.filter((s): s is ZodType => s !== undefined && s !== null);
}

/**
 * How `schema` itself is marked secret (its own meta, or inherited from the schema it refines): `.meta({ secret: true })`
 * marks the whole value, `.meta({ secret: 'url' })` the credentials a URL carries (user name, password, query values,
 * token-like path segments: see {@link maskUrlCredentials}), so that its host and path still show.
 */
function marking(schema: ZodType): 'whole' | 'url' | undefined {
  return viewOf(schema).marking;
}

/** {@link marking} as zod's registry says it now. */
function liveMarking(schema: ZodType): 'whole' | 'url' | undefined {
  const secret = (globalRegistry.get(schema as never) as { secret?: unknown } | undefined)?.secret;
  return secret === true ? 'whole' : secret === 'url' ? 'url' : undefined;
}

function isMarked(schema: ZodType): boolean {
  return marking(schema) !== undefined;
}

const markedAnywhere = new WeakMap<object, boolean>();
/**
 * Schemas {@link marksSecrets} looks at before it answers yes unseen: a getter may make a new schema at each call,
 * without end, and the answer only spares the value-guided walk, which the value bounds.
 */
const MAX_SCHEMAS = 10_000;

/** Whether `schema` may mark anything secret, at any depth (cached per schema). */
function marksSecrets(schema: ZodType): boolean {
  const cached = markedAnywhere.get(schema);
  if (cached !== undefined) return cached;
  const seen = new Set<ZodType>();
  const pending = [schema];
  let found = false;
  while (pending.length > 0 && !found) {
    const next = pending.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    found = isMarked(next) || seen.size > MAX_SCHEMAS;
    pending.push(...sameValue(next), ...childSchemas(next));
  }
  markedAnywhere.set(schema, found);
  return found;
}

/** `schemas` and every schema describing the same value through them (each once). */
function expand(schemas: Iterable<ZodType>): Set<ZodType> {
  const out = new Set<ZodType>();
  const pending = [...schemas];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (out.has(next)) continue;
    out.add(next);
    pending.push(...sameValue(next));
  }
  return out;
}

/** What masks params: which secrets, and how. */
interface MaskRule {
  /** Mask values under secret-named keys, and secret-looking strings (the redaction catalogue). */
  readonly byNameAndValue: boolean;
  /** Keep a marked string written as environment references only (`"${PIN}"`): it holds no secret. */
  readonly keepEnvRefs: boolean;
}

/**
 * A copy of `params` with the secrets `rule` names replaced by `'***'`: every value at a JSON path the schema marks
 * secret (`.meta({ secret: true })`, or in a URL marked `.meta({ secret: 'url' })` its credentials, on the field, on a wrapper of it, on a union member or pipe end describing it, at
 * any depth of objects, records, arrays and tuples) and, by `rule`, values under secret-named keys and
 * secret-looking strings. `undefined` and `null` stay as they are.
 */
function maskParams(params: Record<string, unknown>, schema: ZodType | undefined, rule: MaskRule): Record<string, unknown> {
  const redactor = redactorFor();
  const secret = (value: unknown, how: 'whole' | 'url' = 'whole'): unknown => {
    if (value === undefined || value === null) return value;
    if (rule.keepEnvRefs && typeof value === 'string' && onlyEnvReferences(value)) return value;
    return how === 'url' && typeof value === 'string' ? maskUrlCredentials(value) : MASK;
  };
  const walk = (value: unknown, schemas: Set<ZodType>): unknown => {
    for (const s of schemas) {
      const how = marking(s);
      if (how !== undefined) return secret(value, how);
    }
    if (typeof value === 'string') return rule.byNameAndValue && redactor.redactText(value) !== value ? MASK : value;
    if (value === null || typeof value !== 'object') return value;
    const members = (member: { key: string } | { index: number }): Set<ZodType> => {
      const found: ZodType[] = [];
      for (const s of schemas) {
        const m = memberSchemas(s, member);
        if (m !== undefined) found.push(m);
      }
      return expand(found);
    };
    if (Array.isArray(value)) {
      // An argument vector's value after a secret-named option (`["--password", "…"]`) is masked as redaction blanks it.
      return value.map((item, index) =>
        rule.byNameAndValue && index > 0 && isSecretOptionValue(value[index - 1], item) ? secret(item) : walk(item, members({ index })),
      );
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const next = rule.byNameAndValue && isSecretParamName(key) ? secret(item) : walk(item, members({ key }));
      // A key that holds a secret (a map of tokens) is written as the run's recorded config writes it: redacted.
      const outKey = rule.byNameAndValue ? freeKey(out, redactor.storedKey(key), key, value as Record<string, unknown>) : key;
      // (defined, not assigned: a '__proto__' key of JSON data is an ordinary key)
      Object.defineProperty(out, outKey, { value: next, enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  return walk(params, expand(schema === undefined ? [] : [schema])) as Record<string, unknown>;
}

/**
 * `key`, or when its stored name `text` (Redactor.storedKey) differs, `text` made unique as the redaction pass does it
 * (`text`, then `text #2`, `text #3`, ...: a name taken in `out`, or a key of `record` that is that name as it is), so
 * that two keys do not overwrite each other.
 */
function freeKey(out: Record<string, unknown>, text: string, key: string, record: Record<string, unknown>): string {
  const taken = (name: string): boolean => Object.hasOwn(out, name) || Object.hasOwn(record, name);
  if (text === key || !taken(text)) return text;
  let n = 2;
  while (taken(`${text} #${n}`)) n++;
  return `${text} #${n}`;
}

/**
 * A copy of `params` as `exportFlow` writes it: every secret replaced by `'***'`, that is each value at a JSON path
 * the params schema marks secret (`.meta({ secret: true })`, found through optional, nullable, default, catch,
 * readonly, pipe, lazy, union and intersection schemas, in objects, records, arrays and tuples, at any depth), each
 * value under a secret-named key ({@link isSecretParamName}), and each string the redaction catalogue finds a
 * secret in (what a run's recorded flow config shows as `[REDACTED]`).
 */
export function maskSecrets(params: Record<string, unknown>, schema?: ZodType): Record<string, unknown> {
  return maskParams(params, schema, { byNameAndValue: true, keepEnvRefs: false });
}

/**
 * `params` with each value `schema` marks secret replaced by `'***'`, at the same JSON paths as
 * {@link maskSecrets} finds them, unless it is written as environment references only (`"${PIN}"`), which are
 * resolved at load and never hold the secret. What the run's recorder applies to a flow file before it stores it
 * (the names and the catalogue are then the redaction pass's), so that a rebuilt flow resolves its references
 * again. `params` itself when the schema marks nothing.
 */
export function maskMarkedSecrets(params: Record<string, unknown>, schema?: ZodType): Record<string, unknown> {
  if (schema === undefined || !marksSecrets(schema)) return params;
  return maskParams(params, schema, { byNameAndValue: false, keepEnvRefs: true });
}

/** What code other than a node's own sees of its config and params (see {@link maskedForOthers}). */
export interface MaskedConfig {
  readonly config: Readonly<Record<string, unknown>>;
  readonly params: Readonly<Record<string, unknown>>;
}

/**
 * What another node's code sees of a node's `config` and `params` (`BackpackNode.config`): a copy, frozen at every
 * depth, whose params are masked as `exportFlow` masks them ({@link maskSecrets}: marked in `schema`, secret-named, or
 * secret-looking); the `reserved` keys (id, namespace segment, retry settings, permissions) are kept as they are.
 * Params the mask cannot walk (a cycle) are all masked.
 */
export function maskedForOthers(config: Readonly<Record<string, unknown>>, schema: ZodType | undefined, reserved: ReadonlySet<string>): MaskedConfig {
  const kept: Record<string, unknown> = {};
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    // (defined, not assigned: a '__proto__' key is an ordinary key)
    Object.defineProperty(reserved.has(key) ? kept : params, key, { value, enumerable: true, writable: true, configurable: true });
  }
  let masked: Record<string, unknown>;
  try {
    masked = maskSecrets(params, schema);
  } catch {
    masked = {};
    for (const key of Object.keys(params)) Object.defineProperty(masked, key, { value: MASK, enumerable: true, writable: true, configurable: true });
  }
  freezeDeep(masked);
  const whole: Record<string, unknown> = {};
  for (const part of [kept, masked]) {
    for (const [key, value] of Object.entries(part)) Object.defineProperty(whole, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return Object.freeze({ config: Object.freeze(whole), params: masked });
}

/** Freezes the objects and arrays of `value`, every one of them a copy {@link maskSecrets} made (a function is left as it is). */
function freezeDeep(value: unknown): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const item of Object.values(value)) freezeDeep(item);
}
