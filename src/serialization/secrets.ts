import type { ConfigProblem } from './errors.js';

// The rule of secret params lives with the nodes, whose `config` masks them for other nodes' code too.
export { MASK, isSecretParamName, maskMarkedSecrets, maskSecrets } from '../nodes/secret-params.js';

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
        // The environment's own variables only: `${constructor}` or `${toString}` are not set, whatever Object.prototype holds.
        const resolved = Object.hasOwn(env, name) ? env[name] : undefined;
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

/**
 * `params` (what a node's `toConfig` gives) with the `${ENV}` references put back: the loader resolved each param
 * `written` with references into the value the node got (`resolved`, at the same JSON path), and where `params`
 * holds such a resolved value (as a whole string, or inside a longer one) the value as written takes its place. So
 * an export never holds a resolved value (a secret from the environment), and loading it with the same environment
 * gives the node the same params.
 */
export function paramsAsWritten(params: Record<string, unknown>, resolved: Readonly<Record<string, unknown>>, written: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  if (written === undefined) return params;
  // Resolved value → as written, of every string written with a reference.
  const pairs = new Map<string, string>();
  const collect = (was: unknown, is: unknown): void => {
    if (typeof was === 'string') {
      if (typeof is === 'string' && is !== was && is !== '' && was.includes('${')) pairs.set(is, was);
    } else if (Array.isArray(was)) {
      if (Array.isArray(is)) was.forEach((item, i) => collect(item, is[i]));
    } else if (was !== null && typeof was === 'object' && is !== null && typeof is === 'object' && !Array.isArray(is)) {
      for (const [key, item] of Object.entries(was)) if (Object.hasOwn(is, key)) collect(item, (is as Record<string, unknown>)[key]);
    }
  };
  collect(written, resolved);
  if (pairs.size === 0) return params;
  // Longest first, so that a value holding another is put back whole.
  const longestFirst = [...pairs].sort(([a], [b]) => b.length - a.length);
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const whole = pairs.get(value);
      if (whole !== undefined) return whole;
      let out = value;
      for (const [is, was] of longestFirst) if (out.includes(is)) out = out.split(is).join(was);
      return out;
    }
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) Object.defineProperty(out, key, { value: walk(item), enumerable: true, writable: true, configurable: true });
    return out;
  };
  return walk(params) as Record<string, unknown>;
}
