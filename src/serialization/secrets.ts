import type { ZodType } from 'zod';
import { isSecretKey } from '../redact/index.js';
import type { ConfigProblem } from './errors.js';

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

/** Names of the params a schema marks secret with `.meta({ secret: true })` (top level of an object schema). */
function schemaSecrets(schema: ZodType | undefined): Set<string> {
  const out = new Set<string>();
  const shape = (schema as { shape?: Record<string, ZodType> } | undefined)?.shape;
  if (!shape) return out;
  for (const [key, field] of Object.entries(shape)) {
    if ((field.meta?.() as { secret?: unknown } | undefined)?.secret === true) out.add(key);
  }
  return out;
}

/** A copy of `params` with every secret (schema-marked or secret-named, at any depth) replaced by `'***'`. */
export function maskSecrets(params: Record<string, unknown>, schema?: ZodType): Record<string, unknown> {
  const marked = schemaSecrets(schema);
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSecretParamName(k) && v !== undefined && v !== null ? MASK : walk(v)]));
    }
    return value;
  };
  return Object.fromEntries(
    Object.entries(params).map(([k, v]) => [k, (marked.has(k) || isSecretParamName(k)) && v !== undefined && v !== null ? MASK : walk(v)]),
  );
}

/**
 * A copy of `params` with each param `schema` marks secret (`.meta({ secret: true })`) replaced by `'***'`, unless
 * its value is written as environment references only (`"${PIN}"`), which are resolved at load and never hold the
 * secret. What the run's recorder applies to a flow file before it stores it (the names and the catalogue are then
 * the redaction pass's), so that a rebuilt flow resolves its references again.
 */
export function maskMarkedSecrets(params: Record<string, unknown>, schema?: ZodType): Record<string, unknown> {
  const marked = schemaSecrets(schema);
  if (marked.size === 0) return params;
  return Object.fromEntries(
    Object.entries(params).map(([k, v]) => [k, marked.has(k) && v !== undefined && v !== null && !(typeof v === 'string' && v.replace(ENV_REF, '') === '' && v !== '') ? MASK : v]),
  );
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Resolves `${ENV_NAME}` references in every string of `params` from `env`. A missing variable is a problem at the
 * JSON path of the string (the params are returned with it left as written). Arrays and objects are copied, unless
 * `share`: then what holds no reference is returned as it is, so that a large param (a dataset in the config) is
 * not held twice.
 */
export function resolveEnvRefs(
  params: Record<string, unknown>,
  path: string,
  env: Record<string, string | undefined>,
  problems: ConfigProblem[],
  share = false,
): Record<string, unknown> {
  const walk = (value: unknown, at: () => string): unknown => {
    if (typeof value === 'string') {
      if (!value.includes('${')) return value;
      return value.replace(ENV_REF, (ref, name: string) => {
        const resolved = env[name];
        if (resolved === undefined) {
          problems.push({ path: at(), message: `environment variable ${name} is not set (referenced as ${ref})` });
          return ref;
        }
        return resolved;
      });
    }
    if (value === null || typeof value !== 'object') return value;
    // Shared: copy on write, a container is copied only once one of its members changed.
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const next = walk(item, () => `${at()}/${i}`);
        if ((next !== item || !share) && out === undefined) out = value.slice(0, i);
        out?.push(next);
      }
      return out ?? (share ? value : []);
    }
    let out: Record<string, unknown> | undefined;
    const entries = Object.entries(value);
    for (let i = 0; i < entries.length; i++) {
      const [key, item] = entries[i]!;
      const next = walk(item, () => `${at()}/${key}`);
      if ((next !== item || !share) && out === undefined) out = Object.fromEntries(entries.slice(0, i));
      // (defined, not assigned: a '__proto__' key of JSON data is an ordinary key)
      if (out !== undefined) Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
    }
    return out ?? (share ? value : {});
  };
  return walk(params, () => path) as Record<string, unknown>;
}
